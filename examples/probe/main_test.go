package main

import (
	"testing"

	"github.com/fgn-paper/fgn/examples/internal/compare"
	"github.com/fgn-paper/fgn/fgn/backend"
)

// TestProbe trains the example's linear probe with FGN, SGN and Adam through train.Trainer and
// checks each held-out accuracy against 93 %: chance is 10 %, and each method's accuracy at the
// example's settings is in BENCHMARKS.md, so a broken optimizer, loss, recognition of the head or
// data loader fails the test.
func TestProbe(t *testing.T) {
	results, err := compare.Run(backend.MustNew(), defaultConfig, probe(defaultHidden), methods)
	if err != nil {
		t.Fatal(err)
	}
	const minAccuracy = 0.93
	if len(results) != len(methods) {
		t.Fatalf("got %d results, want one per method (%d)", len(results), len(methods))
	}
	for _, r := range results {
		t.Logf("%s: %d steps, held-out accuracy %.3f, loss %.4f, training %v (median step %v)",
			r.Method, r.Steps, r.Accuracy, r.HeldOutLoss, r.TrainTime, r.MedianStep)
		if !(r.Accuracy >= minAccuracy) {
			t.Errorf("%s: held-out accuracy %.3f, want ≥ %.2f", r.Method, r.Accuracy, minAccuracy)
		}
	}
}
