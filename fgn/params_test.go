package fgn_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/layers"
	"github.com/gomlx/gomlx/ml/layers/activation"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train"
	"github.com/gomlx/gomlx/ml/train/optimizer"
	"github.com/gomlx/gomlx/ml/train/optimizer/cosineschedule"
	"github.com/gomlx/gomlx/support/exceptions"
	"github.com/gomlx/gomlx/ui/commandline"

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
		// GoMLX's learning rate is a first-order optimizer's: FGN does not read it.
		{"GoMLX's learning rate", map[string]any{optimizer.ParamLearningRate: 1e-4}, func(*fgn.Settings) {}, "lm"},
		{"all", map[string]any{fgn.ParamLearningRate: 0.5, optimizer.ParamLearningRate: 1e-4, fgn.ParamDamping: 0.25,
			fgn.ParamCGMaxIterations: 12, fgn.ParamCGTolerance: 1e-8, fgn.ParamCGStoppingRule: "whitened-row",
			fgn.ParamCGStopAtNoise: false, fgn.ParamGGNStepLength: false, fgn.ParamScaledDamping: true,
			fgn.ParamRowOperator: "matrix-free", fgn.ParamWarmStart: true, fgn.ParamSaturationFloor: 1e-20,
			fgn.ParamDampingPolicy: "lm"},
			func(s *fgn.Settings) {
				*s = fgn.Settings{LearningRate: 0.5, Damping: 0.25, RowOperator: fgn.MatrixFree, WarmStart: true,
					SaturationFloor: 1e-20, ScaledDamping: true,
					CG: fgn.CGSettings{MaxIterations: 12, Tolerance: 1e-8, StoppingRule: fgn.StopWhitenedRowResidual}}
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
	const dim, classes = 6, 4
	be := backend.MustNew()
	x, y := clusters(dim, classes)
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

// clusters returns 128 examples of dim features in classes Gaussian clusters (means of scale 2,
// unit noise) and their labels.
func clusters(dim, classes int) ([][]float64, []int32) {
	const n = 128
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
	return x, y
}

func zeros(r, c int) [][]float64 {
	m := make([][]float64, r)
	for i := range m {
		m[i] = make([]float64, c)
	}
	return m
}

// TestDeclareParams checks that after DeclareParams GoMLX's command-line settings
// (commandline.ParseSettings, the parser of the examples' -set flag) set fgn's hyper-parameters,
// which FromScope then reads, that DeclareParams keeps a value the program set before, and that
// its defaults are FGN()'s.
func TestDeclareParams(t *testing.T) {
	store := model.NewStore()
	if _, err := commandline.ParseSettings(store, "fgn_damping=0.1"); err == nil {
		t.Fatalf("ParseSettings accepted fgn_damping before DeclareParams: the test cannot tell that it declares it")
	}
	store.RootScope().SetParam(fgn.ParamCGTolerance, 1e-7) // the program's own default
	fgn.DeclareParams(store)
	if got := fgn.FGN().FromScope(store.RootScope()).Settings(); got.CG.Tolerance != 1e-7 {
		t.Errorf("DeclareParams overwrote the program's %s: %g, want 1e-7", fgn.ParamCGTolerance, got.CG.Tolerance)
	}
	fresh := model.NewStore()
	fgn.DeclareParams(fresh)
	if got, want := fgn.FGN().FromScope(fresh.RootScope()).Settings(), fgn.FGN().Settings(); got != want {
		t.Errorf("DeclareParams' defaults give %+v, want FGN()'s %+v", got, want)
	}
	_, err := commandline.ParseSettings(store, "fgn_learning_rate=0.5;fgn_damping=0.1;fgn_damping_policy=constant;"+
		"fgn_cg_max_iterations=7;fgn_cg_tolerance=1e-6;fgn_cg_stopping_rule=whitened-row;fgn_row_operator=matrix-free;"+
		"fgn_warm_start=true;fgn_saturation_floor=1e-20;fgn_cg_stop_at_noise=false;fgn_ggn_step_length=false;"+
		"fgn_scaled_damping=true")
	if err != nil {
		t.Fatal(err)
	}
	want := fgn.Settings{LearningRate: 0.5, Damping: 0.1, RowOperator: fgn.MatrixFree, WarmStart: true, SaturationFloor: 1e-20,
		ScaledDamping: true, CG: fgn.CGSettings{MaxIterations: 7, Tolerance: 1e-6, StoppingRule: fgn.StopWhitenedRowResidual}}
	for _, c := range []*fgn.GNConfig{fgn.FGN(), fgn.SGN()} {
		if got := c.FromScope(store.RootScope().In("model")).Settings(); got != want {
			t.Errorf("settings after -set: %+v, want %+v", got, want)
		}
	}
}

// TestLearningRateSwitch trains a two-layer ReLU network of GoMLX's layers (layers.DenseWithBias)
// with the optimizer that optimizer.FromScope selects after a user switched a working Adam
// configuration (learning_rate = 1e-4, GoMLX's examples' value) to optimizer=fgn or sgn and changed
// nothing else: in the configuration alone, after training with Adam (whose learning-rate variable
// the store then holds, as a checkpoint of the run would), and with GoMLX's cosine schedule setting
// that variable. FGN and SGN must train (batch loss after 20 steps below half the first step's).
// With their own step size set to Adam's, fgn_learning_rate = 1e-4, the same runs must not: the
// trap the test guards against.
func TestLearningRateSwitch(t *testing.T) {
	const dim, classes, steps = 6, 4, 20
	be := backend.MustNew()
	x, y := clusters(dim, classes)
	batch := func() train.Batch {
		return train.Batch{Inputs: []*tensors.Tensor{tensors.FromValue(x)}, Labels: []*tensors.Tensor{tensors.FromValue(y)}}
	}
	mlp := func(schedule bool) train.ModelFn {
		return func(scope *model.Scope, spec any, inputs []*Node) []*Node {
			if schedule {
				cosineschedule.New(scope, inputs[0].Graph(), inputs[0].DType()).FromScope().Done()
			}
			h := activation.Relu(layers.DenseWithBias(scope.In("hidden"), inputs[0], 16))
			return []*Node{layers.DenseWithBias(scope.In("logits"), h, classes)}
		}
	}
	for _, tc := range []struct {
		name     string
		adam     bool // train 3 steps with Adam first
		schedule bool
	}{{"configuration", false, false}, {"after Adam's steps", true, false}, {"cosine schedule", false, true}} {
		for _, name := range []string{"fgn", "sgn"} {
			for _, trap := range []bool{false, true} {
				store := model.NewStore()
				store.RootScope().SetParams(map[string]any{optimizer.ParamOptimizer: "adam", optimizer.ParamLearningRate: 1e-4,
					cosineschedule.ParamPeriodSteps: 0})
				fgn.DeclareParams(store)
				if tc.schedule {
					store.RootScope().SetParam(cosineschedule.ParamPeriodSteps, 10)
				}
				if tc.adam {
					adam := train.NewTrainer(be, store, mlp(tc.schedule), fgn.Loss, optimizer.FromStore(store), nil, nil)
					for range 3 {
						if _, err := adam.TrainStep(batch()); err != nil {
							t.Fatal(err)
						}
					}
				}
				store.RootScope().SetParam(optimizer.ParamOptimizer, name)
				if trap {
					store.RootScope().SetParam(fgn.ParamLearningRate, 1e-4)
				}
				trainer := train.NewTrainer(be, store, mlp(tc.schedule), fgn.Loss, optimizer.FromStore(store), nil, nil)
				var first, last float64
				for step := range steps {
					metrics, err := trainer.TrainStep(batch())
					if err != nil {
						t.Fatalf("%s, %s step %d: %v", tc.name, name, step, err)
					}
					last = tensors.ToScalar[float64](metrics[0])
					if step == 0 {
						first = last
					}
				}
				t.Logf("%s, %s, fgn_learning_rate 1e-4 %v: batch loss %.4g at the first step, %.4g after %d", tc.name,
					name, trap, first, last, steps)
				if trains := last < first/2; trains == trap {
					t.Errorf("%s, %s (fgn_learning_rate 1e-4: %v): batch loss %.4g after %d steps from %.4g: want it below "+
						"half only with FGN's own step size", tc.name, name, trap, last, steps, first)
				}
			}
		}
	}
}
