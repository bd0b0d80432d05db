package main

import (
	"testing"

	"github.com/fgn-paper/fgn/examples/internal/compare"
	"github.com/fgn-paper/fgn/fgn/backend"
)

// TestDigits trains the example's MLP with FGN, SGN and Adam through train.Trainer and checks
// each held-out accuracy against 95 %: chance is 10 %, and each method's accuracy at the
// default settings is in BENCHMARKS.md, so a broken optimizer, loss or data loader fails the test.
func TestDigits(t *testing.T) {
	results, err := compare.Run(backend.MustNew(), defaultConfig, mlp(defaultHidden), methods)
	if err != nil {
		t.Fatal(err)
	}
	const minAccuracy = 0.95
	if len(results) != len(methods) {
		t.Fatalf("got %d results, want one per method (%d)", len(results), len(methods))
	}
	for _, r := range results {
		t.Logf("%s: %d steps, held-out accuracy %.3f, loss %.4f, training %v (median step %v)",
			r.Method, r.Steps, r.Accuracy, r.HeldOutLoss, r.TrainTime, r.MedianStep)
		if !(r.Accuracy >= minAccuracy) {
			t.Errorf("%s: held-out accuracy %.3f, want ≥ %.2f", r.Method, r.Accuracy, minAccuracy)
		}
		// FGN's and SGN's telemetry: the defaults' λ is adaptive and positive, no step skipped;
		// Adam keeps none.
		switch tel := r.Telemetry; {
		case (r.Method == "Adam") != (tel == nil):
			t.Errorf("%s: telemetry %v, want it for FGN and SGN only", r.Method, tel)
		case tel != nil && (!(tel.Damping > 0) || tel.SkippedSteps != 0):
			t.Errorf("%s: telemetry %v, want λ > 0 and no skipped step", r.Method, tel)
		}
	}
}
