package zoo

import (
	"testing"

	"github.com/gomlx/gomlx/ml/train/optimizer"

	"github.com/fgn-paper/fgn/fgn"
)

// tunedAdam is Adam at the learning rate that reached the best held-out accuracy on every zoo
// model in the sweep (BENCHMARKS.md); GoMLX's default, 0.001, trains far less in 10 epochs.
var tunedAdam = Optimizer{"Adam lr=0.01", func() optimizer.Interface { return optimizer.Adam().LearningRate(0.01).Done() }}

// accuracyMargin is how far below tuned Adam's held-out accuracy the default FGN and SGN may
// end: 1.5 points, about 5 of the 360 held-out images.
const accuracyMargin = 0.015

// testEpochs are the epochs of TestDefaultsTrainZoo per model: DefaultConfig's 10 for the MLPs;
// for the CNN, whose Gauss-Newton step costs about a second on the pure-Go backend (its
// convolutions' VJPs dominate: BenchmarkZooProducts), 2 epochs of 11 steps, as examples/cnn
// trains it, which keeps the test short and compares the optimizers on the same budget.
var testEpochs = map[string]int{"relu-mlp": 10, "tanh-mlp": 10, "cnn": 2}

// TestDefaultsTrainZoo trains every zoo model for its testEpochs with FGN().Done() and
// SGN().Done(), no setting changed, and with tuned Adam, and checks that each Gauss-Newton run
// trained (train.Loop did not stop it on a non-finite loss) to at least Adam's held-out accuracy
// less accuracyMargin.
func TestDefaultsTrainZoo(t *testing.T) {
	for _, m := range Models {
		t.Run(m.Name, func(t *testing.T) {
			cfg := DefaultConfig
			cfg.Epochs = testEpochs[m.Name]
			adam, err := Train(testBackend, m, tunedAdam, cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: held-out accuracy %.3f, loss %.4f", adam.Optimizer, adam.Accuracy, adam.Loss)
			for _, opt := range []Optimizer{
				{FGNDefault, func() optimizer.Interface { return fgn.FGN().Done() }},
				{SGNDefault, func() optimizer.Interface { return fgn.SGN().Done() }},
			} {
				r, err := Train(testBackend, m, opt, cfg)
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("%s: held-out accuracy %.3f, loss %.4f", r.Optimizer, r.Accuracy, r.Loss)
				switch {
				case r.Diverged:
					t.Errorf("%s diverged: train.Loop stopped it on a non-finite batch loss after %d steps", r.Optimizer, r.Steps)
				case !(r.Accuracy >= adam.Accuracy-accuracyMargin):
					t.Errorf("%s: held-out accuracy %.3f, want ≥ %.3f (%s's %.3f less %.3f)", r.Optimizer, r.Accuracy,
						adam.Accuracy-accuracyMargin, adam.Optimizer, adam.Accuracy, accuracyMargin)
				}
			}
		})
	}
}
