package fgn_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train"
	"github.com/gomlx/gomlx/ml/train/optimizer"
	"github.com/gomlx/gomlx/support/exceptions"

	"github.com/fgn-paper/fgn/fgn"
	"github.com/fgn-paper/fgn/fgn/backend"
)

// TestFromScope checks that GNConfig.FromScope reads every hyper-parameter it documents from the
// scope (set in a parent scope, as GoMLX programs set them on the root), keeps the configuration's
// value for those not set, and panics on an unknown damping policy.
func TestFromScope(t *testing.T) {
	for _, tc := range []struct {
		name   string
		params map[string]any
		want   func(s *fgn.Settings)
		policy string
	}{
		{"none", nil, func(*fgn.Settings) {}, "constant"},
		{"all", map[string]any{optimizer.ParamLearningRate: 0.5, fgn.ParamDamping: 0.25,
			fgn.ParamCGMaxIterations: 12, fgn.ParamCGTolerance: 1e-8, fgn.ParamCGStoppingRule: "whitened-row",
			fgn.ParamRowOperator: "matrix-free", fgn.ParamWarmStart: true, fgn.ParamSaturationFloor: 1e-20,
			fgn.ParamDampingPolicy: "lm"},
			func(s *fgn.Settings) {
				*s = fgn.Settings{LearningRate: 0.5, Damping: 0.25, RowOperator: fgn.MatrixFree, WarmStart: true,
					SaturationFloor: 1e-20,
					CG:              fgn.CGSettings{MaxIterations: 12, Tolerance: 1e-8, StoppingRule: fgn.StopWhitenedRowResidual}}
			}, "lm"},
		{"typed values", map[string]any{fgn.ParamCGStoppingRule: fgn.StopWhitenedRowResidual,
			fgn.ParamRowOperator: fgn.MatrixFree, fgn.ParamDampingPolicy: "constant"},
			func(s *fgn.Settings) {
				s.CG.StoppingRule, s.RowOperator = fgn.StopWhitenedRowResidual, fgn.MatrixFree
			}, "constant"},
	} {
		store := model.NewStore()
		store.RootScope().SetParams(tc.params)
		got := fgn.FGN().FromScope(store.RootScope().In("model"))
		want := fgn.DefaultSettings()
		tc.want(&want)
		if got.Settings() != want {
			t.Errorf("%s: FromScope settings %+v, want %+v", tc.name, got.Settings(), want)
		}
		if p := got.Done(); p == nil {
			t.Errorf("%s: Done returned nil", tc.name)
		}
	}
	store := model.NewStore()
	store.RootScope().SetParam(fgn.ParamDampingPolicy, "trust")
	err := exceptions.TryCatch[error](func() { fgn.FGN().FromScope(store.RootScope()) })
	if err == nil || !strings.Contains(err.Error(), `unknown damping policy fgn_damping_policy="trust"`) {
		t.Errorf("FromScope with damping policy trust: error %v, want one naming the parameter and value", err)
	}
}

// TestKnownOptimizers trains an affine model of trainable variables with GoMLX's
// train.Trainer, fgn.Loss and the optimizer that optimizer.FromScope selects by the scope
// parameter optimizer=fgn (or sgn), as GoMLX's example programs select "adam": the batch loss
// after 15 steps is below half the loss of the first step.
func TestKnownOptimizers(t *testing.T) {
	const n, dim, classes = 128, 6, 4
	be := backend.MustNew()
	rng := rand.New(rand.NewPCG(5, 6))
	means := make([][]float64, classes)
	for c := range means {
		means[c] = make([]float64, dim)
		for k := range means[c] {
			means[c][k] = 2 * rng.NormFloat64()
		}
	}
	x, y := make([][]float64, n), make([]int32, n)
	for i := range x {
		y[i] = int32(rng.IntN(classes))
		x[i] = make([]float64, dim)
		for k := range x[i] {
			x[i][k] = means[y[i]][k] + rng.NormFloat64()
		}
	}
	for _, name := range []string{"fgn", "sgn"} {
		store := model.NewStore()
		store.RootScope().SetParam(optimizer.ParamOptimizer, name)
		store.RootScope().SetParam(fgn.ParamCGMaxIterations, 10)
		opt := optimizer.FromScope(store.RootScope())
		if _, ok := opt.(fgn.Optimizer); !ok {
			t.Fatalf("optimizer.FromScope with %s=%q returned %T, not an fgn.Optimizer", optimizer.ParamOptimizer, name, opt)
		}
		head := func(scope *model.Scope, x *Node) *Node {
			g := x.Graph()
			w := scope.VariableWithValue("W", zeros(dim, classes)).NodeValue(g)
			bias := scope.VariableWithValue("bias", make([]float64, classes)).NodeValue(g)
			return Add(MatMul(x, w), ExpandAxes(bias, 0))
		}
		trainer := train.NewTrainer(be, store, head, fgn.Loss, opt, nil, nil)
		var first, last float64
		for step := range 15 {
			batch := train.Batch{Inputs: []*tensors.Tensor{tensors.FromValue(x)}, Labels: []*tensors.Tensor{tensors.FromValue(y)}}
			metrics, err := trainer.TrainStep(batch)
			if err != nil {
				t.Fatalf("%s step %d: %v", name, step, err)
			}
			last = tensors.ToScalar[float64](metrics[0])
			if step == 0 {
				first = last
			}
		}
		t.Logf("%s: batch loss %.4g at the first step, %.4g after 15 steps", name, first, last)
		if !(last < first/2) {
			t.Errorf("%s: batch loss %.4g after 15 steps, want < half the first step's %.4g", name, last, first)
		}
	}
}

func zeros(r, c int) [][]float64 {
	m := make([][]float64, r)
	for i := range m {
		m[i] = make([]float64, c)
	}
	return m
}
