package zoo

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/compute"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/layers"
	"github.com/gomlx/gomlx/ml/model"

	"github.com/fgn-paper/fgn/data/words/wordstest"
	"github.com/fgn-paper/fgn/fgn"
)

// tunedAdam is Adam at the learning rate that reached the best held-out accuracy on the digits
// models of TestDefaultsTrainZoo in the sweep (BENCHMARKS.md); GoMLX's default, 0.001, trains far
// less in 10 epochs.
var tunedAdam = Adam(0.01)

// accuracyMargin is how far below tuned Adam's held-out accuracy the default FGN and SGN may
// end: 1.5 points, about 5 of the 360 held-out images.
const accuracyMargin = 0.015

// defaults are FGN and SGN at their library defaults.
var defaults = []Optimizer{Candidates[0], Candidates[1]}

// undone are FGN with two choices of its defaults undone: λI damping (fgn.Settings.ScaledDamping
// off) and the noise floor's ν along the batch gradient (fgn.LMDamping.WholeVariance off).
var undone = func() []Optimizer {
	opts, err := SelectOptimizers(Candidates, "FGN λI,FGN ν along ĝ")
	if err != nil || len(opts) != 2 {
		panic(fmt.Sprintf("zoo: the ablation candidates: %v, %v", opts, err))
	}
	return opts
}()

// testBudgets are the budgets of the zoo's tests per model: the MLPs' 10 epochs and the linear
// head's 20; 2 epochs of the CNN and the FNN and 1 of the residual CNN, whose Gauss-Newton steps
// cost most (BenchmarkZooProducts); 1 epoch (125 steps) of the transformer, 2 of the bag of
// embeddings, and 25 steps of the text CNN.
var testBudgets = map[string]Config{"relu-mlp": {Epochs: 10}, "tanh-mlp": {Epochs: 10}, "cnn": {Epochs: 2},
	"resnet-cnn": {Epochs: 1}, "linear": {Epochs: 20}, "fnn": {Epochs: 2}, "transformer": {Epochs: 1},
	"text-cnn": {Epochs: 1, Steps: 25}, "bag-of-embeddings": {Epochs: 2}}

// testRuns memoises the runs of the tests, which share them.
var testRuns = map[string]*Run{}

// testRun trains m with opt for its testBudgets, seed 1, once per test binary.
func testRun(t *testing.T, m Model, opt Optimizer) *Run {
	t.Helper()
	if m.Task == Words {
		wordstest.Require(t)
	}
	key := fmt.Sprintf("%s/%s", m.Name, opt.Name)
	if r, ok := testRuns[key]; ok {
		return r
	}
	cfg := testBudgets[m.Name]
	cfg.Seed = 1
	r, err := Train(testBackend, m, opt, cfg)
	if err != nil {
		t.Fatal(err)
	}
	last := r.Epochs[len(r.Epochs)-1]
	t.Logf("%s: held-out accuracy %.3f, loss %.4f after %d steps; λ %.3g (smallest %.3g), failed %q", opt.Name,
		last.HeldOutAccuracy, last.HeldOutLoss, last.Steps, last.Damping, minDamping(r), r.Failed)
	testRuns[key] = r
	return r
}

// minDamping returns the smallest λ of the run's steps (NaN for none).
func minDamping(r *Run) float64 {
	m := r.Epochs[0].MinDamping
	for _, e := range r.Epochs {
		if !(e.MinDamping >= m) {
			m = e.MinDamping
		}
	}
	return m
}

// TestDefaultsTrainZoo trains the digits MLPs for 10 epochs and the CNN for 2 with FGN().Done()
// and SGN().Done(), no setting changed, and with tuned Adam, and checks that each Gauss-Newton run
// trained (no batch loss that was not finite) to at least Adam's held-out accuracy less
// accuracyMargin.
func TestDefaultsTrainZoo(t *testing.T) {
	for _, name := range []string{"relu-mlp", "tanh-mlp", "cnn"} {
		m, err := ModelByName(name)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(m.Name, func(t *testing.T) {
			adam := testRun(t, m, tunedAdam)
			adamAcc := adam.Epochs[len(adam.Epochs)-1].HeldOutAccuracy
			for _, opt := range defaults {
				r := testRun(t, m, opt)
				acc := r.Epochs[len(r.Epochs)-1].HeldOutAccuracy
				switch {
				case r.Failed != "":
					t.Errorf("%s failed: %s", opt.Name, r.Failed)
				case r.Diverged:
					t.Errorf("%s diverged: a batch loss was not finite at step %d", opt.Name, r.Epochs[len(r.Epochs)-1].Steps)
				case !(acc >= adamAcc-accuracyMargin):
					t.Errorf("%s: held-out accuracy %.3f, want ≥ %.3f (%s's %.3f less %.3f)", opt.Name, acc,
						adamAcc-accuracyMargin, adam.Optimizer, adamAcc, accuracyMargin)
				}
			}
		})
	}
}

// TestZooDamping trains every zoo model briefly (testBudgets) with FGN().Done() and SGN().Done(),
// and with FGN's λI damping and its floor's noise along ĝ (undone), and checks that no run went wrong: the step could be
// built and run (a model fgn cannot differentiate fails here, by name), no batch loss was not
// finite, the training loss ended below its start with steps taken (experiments/train's Health),
// and the Levenberg-Marquardt λ never reached its floor, fgn.LevenbergMarquardt's MinDamping
// (AtFloor), after any step.
func TestZooDamping(t *testing.T) {
	for _, m := range Models {
		t.Run(m.Name, func(t *testing.T) {
			for _, opt := range append(slices.Clone(defaults), undone...) {
				checkTrained(t, opt.Name, testRun(t, m, opt))
			}
		})
	}
}

// TestKANModels trains every model of KANModels for 5 steps with FGN().Done() and SGN().Done()
// (GoMLX's KAN layers, the B-spline one with its L1 regularisation term) and checks that no run
// went wrong, as TestZooDamping does: the step was built and run, every batch loss was finite,
// the training loss ended below its start and λ stayed above its floor.
func TestKANModels(t *testing.T) {
	for _, m := range KANModels {
		t.Run(m.Name, func(t *testing.T) {
			for _, opt := range defaults {
				r, err := Train(testBackend, m, opt, Config{Epochs: 1, Steps: 5, Seed: 1})
				if err != nil {
					t.Fatal(err)
				}
				checkTrained(t, opt.Name, r)
			}
		})
	}
}

// checkTrained reports, naming the optimizer name, each way the run r went wrong: its step could
// not be built or run, a batch loss was not finite, experiments/train's Health warns (the
// training loss ended above its start or not finite, no step taken), or the Levenberg-Marquardt
// λ reached its floor after a step (AtFloor).
func checkTrained(t *testing.T, name string, r *Run) {
	t.Helper()
	if r.Failed != "" {
		t.Errorf("%s: the step could not be built or run: %s", name, r.Failed)
		return
	}
	if r.Diverged {
		t.Errorf("%s diverged: a batch loss was not finite at step %d", name, r.Epochs[len(r.Epochs)-1].Steps)
	}
	for _, w := range r.Health().Warnings() {
		t.Errorf("%s: %s", name, w)
	}
	if AtFloor(r) {
		t.Errorf("%s: λ reached its floor: smallest λ %g, floor %g", name, minDamping(r), fgn.LevenbergMarquardt().MinDamping)
	}
}

// TestTrainReportsFailure trains, with FGN(), a digits model whose logits pass through a product
// over pooling windows, which neither GoMLX's reverse mode nor fgn's forward mode differentiates:
// Train reports the run as failed, naming the op, rather than returning an error or dropping it,
// and the summary lists it.
func TestTrainReportsFailure(t *testing.T) {
	m := Model{Name: "product-pooling", Task: Digits, Batch: 128, Epochs: 1, Fn: func(scope *model.Scope, x *Node) *Node {
		h := Reshape(x, x.Shape().Dim(0), 8, 8, 1)
		h = layers.Convolution(scope.In("conv"), h).Channels(4).KernelSize(3).PadSame().Done()
		h = BackendReduceWindow(Tanh(h), compute.ReduceOpProduct, []int{1, 2, 2, 1}, []int{1, 2, 2, 1}, nil, nil, nil)
		return layers.DenseWithBias(scope.In("logits"), Reshape(h, h.Shape().Dim(0), -1), Digits.Classes)
	}}
	r, err := Train(testBackend, m, defaults[0], Config{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	const want = "ReduceWindow"
	if !strings.Contains(r.Failed, want) {
		t.Fatalf("Run.Failed = %q, want it to contain %q", r.Failed, want)
	}
	var summary strings.Builder
	if err := Summary([]*Run{r}, &summary); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(summary.String(), "- product-pooling, FGN(), seed 1: failed: ") {
		t.Errorf("the summary does not list the failed run:\n%s", summary.String())
	}
}
