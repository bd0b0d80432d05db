package main

import (
	"testing"

	"github.com/fgn-paper/fgn/examples/internal/compare"
	"github.com/fgn-paper/fgn/fgn/backend"
)

// TestCNN trains the example's CNN with FGN at its default settings (FGN().Done()) through
// train.Trainer for the example's epochs and checks its held-out accuracy against 95 %: chance is
// 10 %, so a broken optimizer, linearisation, loss or data loader fails the test. SGN and Adam,
// which the example also runs, are left to the model-zoo test (experiments/zoo), which compares
// them; a CNN step of a Gauss-Newton method costs several VJPs of the convolutions.
func TestCNN(t *testing.T) {
	const minAccuracy = 0.95
	r, err := compare.TrainOne(backend.MustNew(), defaultConfig, cnn, methods[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %d steps, held-out accuracy %.3f, loss %.4f, training %v (median step %v)",
		r.Method, r.Steps, r.Accuracy, r.HeldOutLoss, r.TrainTime, r.MedianStep)
	if r.Method != "FGN" || !(r.Accuracy >= minAccuracy) {
		t.Errorf("%s: held-out accuracy %.3f, want FGN ≥ %.2f", r.Method, r.Accuracy, minAccuracy)
	}
}
