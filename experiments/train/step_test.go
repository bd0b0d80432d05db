package train

import (
	"bytes"
	"math"
	"strings"
	"testing"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"

	"github.com/fgn-paper/fgn/experiments/method"
	"github.com/fgn-paper/fgn/fgn"
	"github.com/fgn-paper/fgn/fgn/paper"
)

// referenceStep builds, for the model variables vars, the step that the step builder must
// reproduce, from the library and GoMLX directly and without precomputed layouts: GoMLX's
// optimizer.Adam differentiating the mean cross-entropy by autodiff, and the fgn optimizers on a
// linearisation built in the graph (fgn.NewAffineHead with its own hᵀ and feature Gram, or
// fgn.Linearize of the model's logits). It returns the batch loss.
func referenceStep(cfg StepConfig, vars []*model.Variable) func(scope *model.Scope, x, y *Node) *Node {
	var adam optimizer.Interface
	var gn fgn.Optimizer
	cfg = cfg.resolved()
	switch cfg.Method {
	case method.Adam:
		a := cfg.Hyper.Adam
		adam = optimizer.Adam().LearningRate(a.LearningRate).Betas(a.Beta1, a.Beta2).Epsilon(a.Epsilon).Done()
	case method.SGN:
		gn = fgn.SGN().WithSettings(cfg.Hyper.GN).DampingPolicy(cfg.DampingPolicy).Done()
	default:
		gn = fgn.FGN().WithSettings(cfg.Hyper.GN).DampingPolicy(cfg.DampingPolicy).Done()
	}
	return func(scope *model.Scope, x, y *Node) *Node {
		g := x.Graph()
		scope.Store().SetTraining(g, true) // a step graph: the variables are its inputs
		p := make(fgn.Vec, len(vars))
		for k, v := range vars {
			p[k] = v.NodeValue(g)
		}
		var logits *Node
		if cfg.Model.Hidden == 0 {
			logits = Add(MatMul(x, p[0]), ExpandAxes(p[1], 0))
		} else {
			logits = Add(MatMul(Tanh(Add(MatMul(x, p[0]), ExpandAxes(p[1], 0))), p[2]), ExpandAxes(p[3], 0))
		}
		if adam != nil {
			loss := ReduceAllMean(paper.NewMargin(logits, y).Loss)
			adam.UpdateGraph(scope, g, loss)
			return loss
		}
		var lin fgn.Linearization = fgn.Linearize(logits, p)
		if cfg.Model.Hidden == 0 && cfg.Linearization == fgn.ExactProducts {
			lin = fgn.NewAffineHead(x, p[0], p[1])
		}
		return gn.UpdateGraphWithLinearization(scope, lin, y).Loss
	}
}

// TestStepMatchesReference runs a few steps of every method, linearisation and model with the
// step builder and with referenceStep from the same initialisation on the same batches, and
// compares the batch losses and the final parameters. Adam's closed-form gradient and the
// precomputed layouts change only the rounding.
func TestStepMatchesReference(t *testing.T) {
	const steps, tol = 6, 1e-5
	trainSet, _ := problem(t, 48, 6, 4)
	batches, err := StaticBatches(trainSet.N, 16, 3)
	if err != nil {
		t.Fatal(err)
	}
	xs, ys := make([]*tensors.Tensor, len(batches)), make([]*tensors.Tensor, len(batches))
	for k, idx := range batches {
		xs[k], ys[k] = gather(trainSet, idx)
	}
	affine, mlp := Model{}, Model{Hidden: 5}
	for _, tc := range []struct {
		m      method.Method
		lin    string
		model  Model
		policy fgn.DampingPolicy
	}{
		{method.Adam, fgn.ExactProducts, affine, nil},
		{method.Adam, fgn.Autodiff, affine, nil},
		{method.Adam, fgn.ExactProducts, mlp, nil},
		{method.SGN, fgn.ExactProducts, affine, nil},
		{method.SGN, fgn.Autodiff, affine, nil},
		{method.SGN, fgn.ExactProducts, mlp, nil},
		{method.SGN, fgn.ExactProducts, affine, fgn.LevenbergMarquardt()},
		{method.FGN, fgn.ExactProducts, affine, nil},
		{method.FGN, fgn.ExactProducts, affine, fgn.LevenbergMarquardt()},
		{method.FGNMatrixFree, fgn.ExactProducts, affine, nil},
		{method.FGNMatrixFree, fgn.Autodiff, affine, nil},
		{method.FGNMatrixFree, fgn.ExactProducts, mlp, nil},
	} {
		cfg := StepConfig{Method: tc.m, Linearization: tc.lin, Model: tc.model, Hyper: method.Paper(tc.m),
			DampingPolicy: tc.policy}
		if tc.m == method.Adam {
			cfg.Hyper.Adam.LearningRate = 0.05
		}
		name := string(tc.m) + "/" + tc.lin + "/" + tc.model.String()
		if tc.policy != nil {
			name += "/" + tc.policy.String()
		}
		t.Run(name, func(t *testing.T) {
			store := model.NewStore()
			vars := tc.model.initialize(store.RootScope().In("model"), trainSet.D, 4, 11)
			step, err := NewStep(testBackend, store, vars, cfg, xs, ys)
			if err != nil {
				t.Fatal(err)
			}
			defer step.Finalize()
			refStore := model.NewStore()
			refVars := tc.model.initialize(refStore.RootScope().In("model"), trainSet.D, 4, 11)
			ref := model.MustNewExec(testBackend, refStore, referenceStep(cfg, refVars))
			for s := range steps {
				k := s % len(xs)
				got, err := step.Run(k)
				if err != nil {
					t.Fatal(err)
				}
				want := float64(tensors.ToScalar[float32](ref.MustCall(xs[k], ys[k])[0]))
				if e := math.Abs(got.Loss-want) / math.Max(1, math.Abs(want)); !(e <= tol) || !got.Finite || !got.Accepted {
					t.Errorf("step %d: loss %g, reference %g: error %.2g (tolerance %.2g); finite %v, accepted %v",
						s+1, got.Loss, want, e, tol, got.Finite, got.Accepted)
				}
			}
			for k, v := range vars {
				got, want := tensors.MustCopyFlatData[float32](v.MustValue()), tensors.MustCopyFlatData[float32](refVars[k].MustValue())
				var diff, scale float64
				for i := range got {
					diff = math.Max(diff, math.Abs(float64(got[i])-float64(want[i])))
					scale = math.Max(scale, math.Abs(float64(want[i])))
				}
				if e := diff / math.Max(1, scale); !(e <= tol) {
					t.Errorf("%s after %d steps: error %.2g (tolerance %.2g)", v.Name(), steps, e, tol)
				}
			}
		})
	}
}

func TestStepErrors(t *testing.T) {
	trainSet, _ := problem(t, 16, 3, 3)
	x, y := gather(trainSet, nil)
	ok := StepConfig{Method: method.FGN, Hyper: method.Paper(method.FGN)}
	for _, tc := range []struct {
		name   string
		mutate func(*StepConfig)
		ys     []*tensors.Tensor
		want   string
	}{
		{"unknown method", func(c *StepConfig) { c.Method = "newton" }, nil, `unknown method "newton"`},
		{"unknown linearisation", func(c *StepConfig) { c.Linearization = "seven" }, nil, `unknown linearisation "seven"`},
		{"bad settings", func(c *StepConfig) { c.Hyper.GN.Damping = 0 }, nil, "damping λ"},
		{"negative width", func(c *StepConfig) { c.Model.Hidden = -1 }, nil, "hidden width must be ≥ 0"},
		{"closed-form Gram on an MLP", func(c *StepConfig) { c.Model.Hidden = 3 }, nil, "use fgn-matrix-free"},
		{"closed-form Gram by autodiff", func(c *StepConfig) { c.Linearization = fgn.Autodiff }, nil,
			"needs an affine head's exact products, not autodiff: use fgn-matrix-free"},
		{"labels missing", func(c *StepConfig) {}, []*tensors.Tensor{}, "got 1 and 0"},
	} {
		cfg := ok
		tc.mutate(&cfg)
		ys := tc.ys
		if ys == nil {
			ys = []*tensors.Tensor{y}
		}
		store := model.NewStore()
		vars := Model{}.initialize(store.RootScope(), trainSet.D, 3, 1)
		_, err := NewStep(testBackend, store, vars, cfg, []*tensors.Tensor{x}, ys)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
	store := model.NewStore()
	step, err := NewStep(testBackend, store, Model{}.initialize(store.RootScope(), trainSet.D, 3, 1), ok,
		[]*tensors.Tensor{x}, []*tensors.Tensor{y})
	if err != nil {
		t.Fatal(err)
	}
	defer step.Finalize()
	for _, k := range []int{-1, 1} {
		if _, err := step.Run(k); err == nil || !strings.Contains(err.Error(), "out of range [0, 1)") {
			t.Errorf("Run(%d) on 1 batch: error %v, want one saying the batch is out of range", k, err)
		}
	}
}

// TestStepNotFiniteChangesNothing takes two good steps of every method and model, then steps on
// batches that cannot give a finite step: a NaN feature and, on the affine head, features so large
// (1e30) that the gradient's squares and the feature Gram overflow float32 (an MLP's tanh layer
// saturates on them, a finite step). Each such step must report itself not finite and leave every
// variable of the store (parameters, Adam's moments and step count, the warm start) bit for bit as
// it was, except GoMLX's global step, which the fgn optimizers advance on every step tried, as
// GoMLX's training loop counts them, and their count of skipped steps.
func TestStepNotFiniteChangesNothing(t *testing.T) {
	trainSet, _ := problem(t, 16, 6, 4)
	x, y := gather(trainSet, nil)
	bad := func(value float32) *tensors.Tensor {
		data := append([]float32(nil), trainSet.X...)
		for k := range trainSet.D {
			data[5*trainSet.D+k] = value
		}
		return tensors.FromFlatDataAndDimensions(data, trainSet.N, trainSet.D)
	}
	xs := []*tensors.Tensor{x, bad(float32(math.NaN())), bad(1e30)}
	ys := []*tensors.Tensor{y, y, y}
	for _, m := range []Model{{}, {Hidden: 5}} {
		for _, meth := range method.Methods {
			if meth == method.FGN && m.Hidden > 0 {
				continue
			}
			t.Run(string(meth)+"/"+m.String(), func(t *testing.T) {
				store := model.NewStore()
				vars := m.initialize(store.RootScope().In("model"), trainSet.D, 4, 3)
				step, err := NewStep(testBackend, store, vars, StepConfig{Method: meth, Model: m, Hyper: method.Paper(meth)}, xs, ys)
				if err != nil {
					t.Fatal(err)
				}
				defer step.Finalize()
				for range 2 {
					if r, err := step.Run(0); err != nil || !r.Finite {
						t.Fatalf("good batch: finite %v, error %v", r.Finite, err)
					}
				}
				snapshot := func() map[string][]byte {
					values := map[string][]byte{}
					for v := range store.IterVariables() {
						if err := v.MustValue().ConstBytes(func(b []byte) { values[v.Path()] = bytes.Clone(b) }); err != nil {
							t.Fatal(err)
						}
					}
					return values
				}
				badBatches := map[int]string{1: "a NaN feature", 2: "features of 1e30"}
				if m.Hidden > 0 {
					delete(badBatches, 2)
				}
				for k, name := range badBatches {
					before := snapshot()
					r, err := step.Run(k)
					if err != nil {
						t.Fatal(err)
					}
					if r.Finite || r.Accepted {
						t.Errorf("batch with %s: finite %v, accepted %v; want neither", name, r.Finite, r.Accepted)
					}
					after := snapshot()
					for path, b := range before {
						counter := path == "/"+optimizer.GlobalStepVariableName || strings.HasSuffix(path, "/skipped_steps")
						if !counter && !bytes.Equal(b, after[path]) {
							t.Errorf("batch with %s changed variable %s", name, path)
						}
					}
				}
			})
		}
	}
}
