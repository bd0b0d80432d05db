package fgn

import (
	"fmt"
	"iter"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/layers/regularizer"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/model/checkpoint"
	"github.com/gomlx/gomlx/ml/train"
	"github.com/gomlx/gomlx/ml/train/loss"
	"github.com/gomlx/gomlx/ui/commandline"
)

// TestTrainerRejects checks that FGN and SGN inside train.Trainer fail with a message naming the
// problem when they cannot get the curvature's logits and labels, or when the loss to minimise
// is not fgn.Loss's plus GoMLX's L2 and L1 regularisation terms.
func TestTrainerRejects(t *testing.T) {
	p := newProblem(31, 6, 4, 3, 0, 1)
	affine := func(scope *model.Scope, h *Node) *Node {
		return newOptModel(p, false, true).lin(h).Logits()
	}
	affineVars := func(scope *model.Scope, h *Node) *Node { // on variables of the Trainer's store
		g := h.Graph()
		return NewAffineHead(h, scope.VariableWithValue("W", p.w).NodeValue(g), scope.VariableWithValue("bias", p.bias).NodeValue(g)).Logits()
	}
	for _, tc := range []struct {
		name   string
		model  func(scope *model.Scope, h *Node) *Node
		lossFn loss.LossFn
		want   string
	}{
		{"another loss", affine, func(labels, logits []*Node) *Node {
			return loss.SparseCategoricalCrossEntropyLogits([]*Node{ExpandAxes(labels[0], -1)}, logits)
		}, "train with fgn.Loss as the loss function"},
		{"regularisation of the logits", func(scope *model.Scope, h *Node) *Node {
			logits := affineVars(scope, h)
			train.AddRegularizationLoss(ReduceAllSum(Square(logits)))
			return logits
		}, Loss, "adds to fgn.Loss's cross-entropy a term ReduceSum ((Float64)) that is not c·Σw² of a parameter w"},
		{"another main loss", func(scope *model.Scope, h *Node) *Node {
			logits := affineVars(scope, h)
			train.AddMainLoss(ReduceAllMean(Exp(logits)))
			return logits
		}, Loss, "takes GoMLX's L2 and L1 regularisation terms (train.AddRegularizationLoss) and no other loss"},
		{"negative L2 amount", func(scope *model.Scope, h *Node) *Node {
			g := h.Graph()
			w := scope.VariableWithValue("W", p.w)
			bias := scope.VariableWithValue("bias", p.bias)
			regularizer.L2(-0.1)(g, w)
			return NewAffineHead(h, w.NodeValue(g), bias.NodeValue(g)).Logits()
		}, Loss, "an L2 term -0.1·Σw² on parameter 0 ((Float64)[4, 3]) with an amount that is not > 0"},
		{"scaled loss", affine, func(labels, logits []*Node) *Node { return MulScalar(Loss(labels, logits), 2) },
			"not the one fgn.Loss returned plus regularisation terms"},
		{"loss twice", affine, func(labels, logits []*Node) *Node {
			return Add(Loss(labels, logits), Loss(labels, logits))
		}, "fgn.Loss was called 2 times"},
		{"recorded linearisation of other logits", func(scope *model.Scope, h *Node) *Node {
			lin := newOptModel(p, false, false).lin(h)
			RecordLinearization(lin)
			return MulScalar(lin.Logits(), 2)
		}, Loss, "is not of the logits given to fgn.Loss"},
		{"recorded linearisation of a computed parameter", func(scope *model.Scope, h *Node) *Node {
			g := h.Graph()
			w := scope.VariableWithValue("W", p.w).NodeValue(g)
			bias := scope.VariableWithValue("bias", p.bias).NodeValue(g)
			head := NewAffineHead(h, w, MulScalar(bias, 2))
			RecordLinearization(head)
			return head.Logits()
		}, Loss, "parameter 1 ((Float64)[3]) of the linearisation is not the current value"},
		{"recorded linearisation missing a trainable variable", func(scope *model.Scope, h *Node) *Node {
			g := h.Graph()
			w := scope.VariableWithValue("W", p.w).NodeValue(g)
			bias := scope.VariableWithValue("bias", p.bias).NodeValue(g)
			temperature := scope.VariableWithValue("temperature", 1.0).NodeValue(g)
			head := NewAffineHead(Mul(h, temperature), w, bias)
			RecordLinearization(head)
			return head.Logits()
		}, Loss, "has no parameter for the trainable variables [/temperature]"},
	} {
		for _, opt := range []*GNConfig{FGN(), SGN()} {
			trainer := train.NewTrainer(testBackend, model.NewStore(), tc.model, tc.lossFn, opt.Done(), nil, nil)
			_, err := trainer.TrainStep(p.batch())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s, %s: error %v, want one containing %q", tc.name, opt.name(), err, tc.want)
			}
		}
	}
}

// repeatBatch is a train.Dataset that yields the problem's batch forever.
type repeatBatch struct{ p *problem }

func (d repeatBatch) Name() string { return "repeat" }
func (d repeatBatch) Iter() iter.Seq2[train.Batch, error] {
	return func(yield func(train.Batch, error) bool) {
		for yield(d.p.batch(), nil) {
		}
	}
}

// TestCheckpointRestore checks that the optimizers' state (warm starts, global step,
// Levenberg-Marquardt damping and its noise averages, the damping metric's averages, the
// momentum's average of the steps) lives in variables that a GoMLX checkpoint restores:
// training 3 steps with train.Loop (and its progress bar), saving, restoring into a fresh store
// and training one more step gives bit-identical variables to 4 uninterrupted steps.
func TestCheckpointRestore(t *testing.T) {
	p := newProblem(32, 7, 5, 4, 3, 1)
	for _, tc := range []struct {
		name string
		opt  func() Optimizer
		// mlp selects the MLP (linearised by the optimizer), else the affine head (recorded).
		mlp bool
		// state lists variables that must be among those compared, besides the global step.
		state []string
	}{
		{"SGN mlp (warm start)", func() Optimizer { return SGN().WarmStart(true).LearningRate(0.5).Done() }, true,
			[]string{"/classifier/W1", "/SGNOptimizer/classifier/W1_warm_start", "/SGNOptimizer/classifier/b2_warm_start"}},
		{"FGN affine closed form (warm start)", func() Optimizer { return FGN().WarmStart(true).Done() }, false,
			[]string{"/classifier/W", "/FGNOptimizer/row_solution"}},
		{"FGN mlp", func() Optimizer { return FGN().Done() }, true, []string{"/classifier/b2"}},
		{"FGN affine closed form LM", func() Optimizer {
			return FGN().LearningRate(1.5).Damping(lmStart).DampingPolicy(LevenbergMarquardt()).Done()
		}, false, []string{"/classifier/W", "/FGNOptimizer/damping", "/FGNOptimizer/noise_variance",
			"/FGNOptimizer/noise_signal", "/FGNOptimizer/noise_steps"}},
		{"SGN mlp LM (warm start)", func() Optimizer {
			return SGN().WarmStart(true).LearningRate(1.5).Damping(lmStart).DampingPolicy(LevenbergMarquardt()).Done()
		}, true, []string{"/classifier/W1", "/SGNOptimizer/damping", "/SGNOptimizer/classifier/W1_warm_start"}},
		{"SGN mlp momentum, metric per entry", func() Optimizer {
			return SGN().Momentum(0.9).ScaledDampingPerEntry(true).Done()
		}, true, []string{"/classifier/W1", "/SGNOptimizer/classifier/W1_momentum", "/SGNOptimizer/momentum_steps",
			"/SGNOptimizer/classifier/W1_entry_mean_square"}},
		{"FGN affine momentum, metric per entry", func() Optimizer {
			return FGN().Momentum(0.9).ScaledDampingPerEntry(true).Done()
		}, false, []string{"/classifier/W", "/FGNOptimizer/classifier/W_momentum", "/FGNOptimizer/classifier/bias_entry_mean_square"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The model creates its variables from the problem's values, or loads them from the
			// checkpoint.
			logits := func(scope *model.Scope, h *Node) *Node {
				m := &optModel{mlp: tc.mlp}
				names, values := []string{"W", "bias"}, []any{p.w, p.bias}
				if tc.mlp {
					names, values = []string{"W1", "b1", "W2", "b2"}, []any{p.w1, p.b1, p.w2, p.b2}
				}
				classifier := scope.In("classifier")
				for k, n := range names {
					m.vars = append(m.vars, classifier.VariableWithValue(n, values[k]))
				}
				return m.logits(scope, h)
			}
			runSteps := func(store *model.Store, steps int, progress bool) {
				loop := train.NewLoop(train.NewTrainer(testBackend, store, logits, Loss, tc.opt(), nil, nil))
				if progress {
					commandline.AttachProgressBar(loop)
				}
				if _, err := loop.RunSteps(repeatBatch{p}, steps); err != nil {
					t.Fatalf("%+v", err)
				}
			}

			uninterrupted := model.NewStore()
			runSteps(uninterrupted, 4, false)

			dir := t.TempDir()
			first := model.NewStore()
			saver, err := checkpoint.Build(first).Dir(dir).Done()
			if err != nil {
				t.Fatal(err)
			}
			runSteps(first, 3, true)
			if err := saver.Save(); err != nil {
				t.Fatal(err)
			}
			restored := model.NewStore()
			if _, err := checkpoint.Build(restored).Dir(dir).Immediate().Done(); err != nil {
				t.Fatal(err)
			}
			runSteps(restored, 1, false)

			compared := map[string]bool{}
			for v := range uninterrupted.IterVariables() {
				if strings.HasPrefix(v.Path(), "/metrics/") {
					continue // the trainer's metrics, named per trainer
				}
				got := restored.GetVariable(v.Path())
				if got == nil {
					t.Errorf("variable %s missing after the restored run", v.Path())
					continue
				}
				want, have := v.MustValue(), got.MustValue()
				same := want.Shape().Equal(have.Shape())
				if same && want.DType().IsFloat() {
					same = equalBits(flat64(want), flat64(have))
				} else if same { // the step counters
					same = reflect.DeepEqual(want.Value(), have.Value())
				}
				if !same {
					t.Errorf("%s: restored run %v, uninterrupted run %v: want bit-identical", v.Path(), have, want)
				}
				compared[v.Path()] = true
			}
			for _, path := range append(tc.state, "/global_step") {
				if !compared[path] {
					t.Errorf("%s was not compared (compared %v)", path, compared)
				}
			}
			if step := flat64(restored.GetVariable("/global_step").MustValue()); step[0] != 4 {
				t.Errorf("restored run ends at global step %v, want 4", step[0])
			}
			for _, path := range tc.state {
				if v := restored.GetVariable(path); strings.HasSuffix(path, "/damping") && flat64(v.MustValue())[0] == lmStart {
					t.Errorf("%s is still the initial λ %g after 4 steps: the test would not see it restored", path, lmStart)
				}
			}
		})
	}
}

// lmStart is the initial λ of the checkpoint test's Levenberg-Marquardt runs.
const lmStart = 1e-2

func equalBits(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if math.Float64bits(a[k]) != math.Float64bits(b[k]) {
			return false
		}
	}
	return true
}

// TestTrainerNonFiniteStep checks that in train.Trainer a batch with a NaN feature (MLP, affine
// head), or with features so large (1e160) that the step overflows float64 (affine head: an MLP's
// tanh saturates), leaves the model's parameters and the optimizer's warm-start state
// bit-identical and is counted by SkippedSteps, for FGN and SGN on autodiff products.
func TestTrainerNonFiniteStep(t *testing.T) {
	p := newProblem(33, 6, 4, 3, 3, 1)
	withNaN, huge := *p, *p
	withNaN.h = append([][]float64(nil), p.h...)
	withNaN.h[3] = append([]float64{math.NaN()}, p.h[3][1:]...)
	huge.h = make([][]float64, len(p.h))
	for i, row := range p.h {
		for _, x := range row {
			huge.h[i] = append(huge.h[i], 1e160*x)
		}
	}
	type batch struct {
		name    string
		p       *problem
		skipped int64 // SkippedSteps after the batch
	}
	for _, mdl := range []struct {
		name    string
		mlp     bool
		batches []batch
	}{
		{"MLP", true, []batch{{"finite", p, 0}, {"NaN feature", &withNaN, 1}}},
		{"affine", false, []batch{{"finite", p, 0}, {"NaN feature", &withNaN, 1}, {"1e160 features", &huge, 2}}},
	} {
		for _, opt := range []*GNConfig{FGN().WarmStart(true), SGN().WarmStart(true)} {
			m := newOptModel(p, mdl.mlp, true)
			gn := opt.Done()
			trainer := train.NewTrainer(testBackend, m.store, m.logits, Loss, gn, nil, nil)
			snapshot := func() map[string][]float64 { // the trainer's metrics and the step telemetry excluded
				all := map[string][]float64{}
				for v := range m.store.IterVariables() {
					if !strings.HasPrefix(v.Path(), "/metrics/") && v.Path() != "/global_step" &&
						!slices.Contains([]string{"skipped_steps", "rejected_steps", "gain_ratio", "step_length"}, v.Name()) {
						all[v.Path()] = flat64(v.MustValue())
					}
				}
				return all
			}
			for _, b := range mdl.batches {
				what := fmt.Sprintf("%s, %s, %s batch", mdl.name, opt.name(), b.name)
				before := snapshot()
				if _, err := trainer.TrainStep(b.p.batch()); err != nil {
					t.Fatalf("%s: %+v", what, err)
				}
				changed := 0
				for path, values := range snapshot() {
					if !equalBits(values, before[path]) {
						changed++
					}
				}
				switch {
				case b.p == p && changed == 0:
					t.Errorf("%s: no variable changed", what)
				case b.p != p && changed != 0:
					t.Errorf("%s: %d variables changed, want none", what, changed)
				}
				if n := gn.Telemetry(m.store).SkippedSteps; n != b.skipped {
					t.Errorf("%s: Telemetry().SkippedSteps = %d, want %d", what, n, b.skipped)
				}
			}
		}
	}
}
