package fgn

import (
	"math"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train"
	"github.com/gomlx/gomlx/ml/train/optimizer"

	"github.com/fgn-paper/fgn/internal/ref"
)

// optModel holds a problem's parameters as model variables (float64) and builds the
// linearisation the optimizers step.
type optModel struct {
	store *model.Store
	vars  []*model.Variable
	mlp   bool
	// generic forces the generic closures for the affine head.
	generic bool
	dtype   dtypes.DType // of the parameters and of the features a step feeds
}

func newOptModel(p *problem, mlp, generic bool) *optModel {
	return newOptModelOf(p, mlp, generic, dtypes.Float64)
}

// newOptModelOf is newOptModel with parameters of the given dtype.
func newOptModelOf(p *problem, mlp, generic bool, dtype dtypes.DType) *optModel {
	store := model.NewStore()
	scope := store.RootScope().In("classifier")
	m := &optModel{store: store, mlp: mlp, generic: generic, dtype: dtype}
	params := map[string]any{"W": p.w, "bias": p.bias}
	names := []string{"W", "bias"}
	if mlp {
		params = map[string]any{"W1": p.w1, "b1": p.b1, "W2": p.w2, "b2": p.b2}
		names = []string{"W1", "b1", "W2", "b2"}
	}
	for _, n := range names {
		m.vars = append(m.vars, scope.VariableWithValue(n, cast(params[n], dtype)))
	}
	return m
}

func (m *optModel) lin(h *Node) Linearization {
	g := h.Graph()
	v := make(Vec, len(m.vars))
	for k, variable := range m.vars {
		v[k] = variable.NodeValue(g)
	}
	if m.mlp {
		return mlpLin(append([]*Node{h, nil}, v...))
	}
	head := NewAffineHead(h, v[0], v[1])
	if m.generic {
		return Linearize(head.Logits(), head.Params())
	}
	return head
}

// flatParams returns the current variable values, flattened in parameter order.
func (m *optModel) flatParams() []float64 {
	var out []float64
	for _, v := range m.vars {
		out = append(out, flat64(v.MustValue())...)
	}
	return out
}

// step runs n optimizer steps on the problem's batch and returns the reported CG iterations
// of the last one.
func (m *optModel) step(t *testing.T, opt Optimizer, p *problem, n int) float64 {
	t.Helper()
	exec, err := model.NewExec(testBackend, m.store, func(scope *model.Scope, h, labels *Node) []*Node {
		scope.Store().SetTraining(h.Graph(), true) // a step graph: the variables are its inputs
		dir := opt.UpdateGraphWithLinearization(scope, m.lin(h), labels)
		return []*Node{dir.Loss, dir.Iterations}
	})
	if err != nil {
		t.Fatal(err)
	}
	var its float64
	for range n {
		out, err := exec.Call(cast(p.h, m.dtype), p.labels)
		if err != nil {
			t.Fatalf("step: %+v", err)
		}
		its = flat64(out[1])[0]
	}
	return its
}

// logits is the model function the Trainer calls: the logits of the linearisation m.lin, recorded
// for the affine head (its closed form, or autodiff if m.generic); the optimizer linearises the
// MLP's logits by autodiff.
func (m *optModel) logits(_ *model.Scope, h *Node) *Node {
	lin := m.lin(h)
	if !m.mlp {
		RecordLinearization(lin)
	}
	return lin.Logits()
}

// trainerStep runs n steps of GoMLX's train.Trainer with opt and fgn.Loss on the problem's batch.
func (m *optModel) trainerStep(t *testing.T, opt Optimizer, p *problem, n int) {
	t.Helper()
	trainer := train.NewTrainer(testBackend, m.store, m.logits, Loss, opt, nil, nil)
	for range n {
		if _, err := trainer.TrainStep(p.batch()); err != nil {
			t.Fatalf("train step: %+v", err)
		}
	}
}

// batch returns the problem's features and labels as a fresh train.Batch (the Trainer takes
// ownership of its tensors).
func (p *problem) batch() train.Batch {
	return train.Batch{Inputs: []*tensors.Tensor{tensors.FromValue(p.h)}, Labels: []*tensors.Tensor{tensors.FromValue(p.labels)}}
}

// TestOptimizerStepMatchesDense checks that one optimizer step with CG run to convergence, built
// by UpdateGraphWithLinearization or by GoMLX's train.Trainer with fgn.Loss, moves the variables
// by α·d, d the dense damped solve: −(H_FGN + λI)⁻¹g for FGN (closed form, generic
// closures and matrix-free head products on the affine head, MLP) and −(H_GGN + λI)⁻¹g for SGN.
func TestOptimizerStepMatchesDense(t *testing.T) {
	const alpha, lambda = 0.3, 0.7
	p := newProblem(21, 6, 9, 5, 4, 1)
	for _, tc := range []struct {
		name         string
		opt          *GNConfig
		mlp, generic bool
	}{
		{"FGN affine closed form", FGN(), false, false},
		{"FGN affine generic", FGN(), false, true},
		{"FGN affine matrix-free", FGN().RowOperator(MatrixFree), false, false},
		{"FGN mlp", FGN(), true, false},
		{"SGN mlp", SGN(), true, false},
		{"SGN affine", SGN(), false, false},
	} {
		for _, trainer := range []bool{false, true} {
			name := tc.name + " UpdateGraphWithLinearization"
			if trainer {
				name = tc.name + " train.Trainer"
			}
			t.Run(name, func(t *testing.T) {
				m := newOptModel(p, tc.mlp, tc.generic)
				before := m.flatParams()
				opt := tc.opt.LearningRate(alpha).Damping(lambda).DampingPolicy(ConstantDamping{}).CGMaxIterations(60).CGTolerance(1e-14).CGStopAtNoise(false).
					GGNStepLength(false).Done()
				if trainer {
					m.trainerStep(t, opt, p, 1)
				} else {
					m.step(t, opt, p, 1)
				}
				moved := sub(m.flatParams(), before)
				for k := range moved {
					moved[k] /= alpha
				}
				dn := runDense(t, p, tc.mlp)
				curvature := dn.fgn
				if !tc.opt.fgn {
					curvature = dn.ggn
				}
				neg := make([]float64, dn.d)
				for k := range neg {
					neg[k] = -dn.grad[k]
				}
				check(t, "(w⁺−w)/α vs dense (H+λI)⁻¹(−g)", ref.RelErr(moved, denseSolve(t, curvature, dn.d, lambda, neg)), 1e-8)
			})
		}
	}
}

// TestWarmStart checks that SGN's warm start changes only CG's initial guess: the first step
// (zero state) is bit-identical to a cold start; the state then holds the previous direction; the
// next warm step equals SGN().Direction started from that state; run to convergence, warm and cold
// steps agree.
func TestWarmStart(t *testing.T) {
	p := newProblem(22, 5, 3, 4, 3, 1)
	const alpha = 0.5
	cold, warm := newOptModel(p, true, false), newOptModel(p, true, false)
	state := func() []any {
		var out []any
		for _, v := range warm.vars {
			out = append(out, warm.store.GetVariable(path.Join("/SGNOptimizer", v.Scope(), v.Name()+"_warm_start")).MustValue())
		}
		return out
	}
	// The paper's SGN: CG warm-started from the previous direction, constant λI.
	paperSGN := func() *GNConfig { return SGN().WarmStart(true).ScaledDamping(false).DampingPolicy(ConstantDamping{}) }
	w0 := cold.flatParams()
	cold.step(t, paperSGN().WarmStart(false).LearningRate(alpha).Done(), p, 1)
	warm.step(t, paperSGN().LearningRate(alpha).Done(), p, 1)
	if d := ref.RelErr(warm.flatParams(), cold.flatParams()); d != 0 {
		t.Fatalf("first step: warm start from zero state differs from cold start (rel. diff %g), want bit-identical", d)
	}
	step1 := sub(warm.flatParams(), w0)
	for k := range step1 {
		step1[k] /= alpha
	}
	var flatState []float64
	for _, s := range state() {
		flatState = append(flatState, flat64(s.(*tensors.Tensor))...)
	}
	check(t, "warm-start state = previous direction", ref.RelErr(flatState, step1), 1e-13)

	// A one-iteration warm step is SGN().Direction started from the state.
	oneIt := Settings{Damping: 1, CG: CGSettings{MaxIterations: 1, Tolerance: 1e-5}}
	inputs := append([]any{p.h, p.labels}, state()...)
	for _, v := range warm.vars {
		inputs = append(inputs, v.MustValue())
	}
	want := run(t, func(in []*Node) []*Node {
		lin := mlpLin(append([]*Node{in[0], in[1]}, in[6:10]...))
		return []*Node{flattenVec(sgnDir(lin, in[1], Vec(in[2:6]), oneIt).D)}
	}, inputs...)[0]
	w1 := warm.flatParams()
	warm.step(t, paperSGN().LearningRate(alpha).CGMaxIterations(1).Done(), p, 1)
	moved := sub(warm.flatParams(), w1)
	for k := range moved {
		moved[k] /= alpha
	}
	check(t, "1-iteration warm step vs SGN().Direction from the state", ref.RelErr(moved, want), 1e-12)

	// Run to convergence from the same point: the warm and cold steps agree.
	a, b := newOptModel(p, true, false), newOptModel(p, true, false)
	exact := func(c *GNConfig) Optimizer {
		return c.DampingPolicy(ConstantDamping{}).CGMaxIterations(80).CGTolerance(1e-14).CGStopAtNoise(false).Done()
	}
	a.step(t, exact(paperSGN()), p, 2)
	b.step(t, exact(paperSGN()), p, 1)
	b.step(t, exact(paperSGN().WarmStart(false)), p, 1)
	check(t, "converged warm vs cold second step", ref.RelErr(a.flatParams(), b.flatParams()), 1e-10)

	// FGN's optional warm start (the row-space solution u) obeys the same rule.
	a, b = newOptModel(p, false, false), newOptModel(p, false, false)
	a.step(t, exact(FGN().WarmStart(true)), p, 2)
	b.step(t, exact(FGN()), p, 2)
	check(t, "FGN converged warm vs cold two steps", ref.RelErr(a.flatParams(), b.flatParams()), 1e-10)
	if u := a.store.GetVariable("/FGNOptimizer/row_solution"); u == nil || u.Shape().Dim(0) != p.b || ref.MaxAbs(flat64(u.MustValue())) == 0 {
		t.Errorf("FGN warm-start state %v: want a non-zero vector of the batch size %d", u, p.b)
	}
}

func TestOptimizerConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg  *GNConfig
		want string
	}{
		{FGN().LearningRate(0), "learning rate"},
		{SGN().Damping(-1), "damping"},
		{FGN().CGMaxIterations(0), "iteration cap"},
		{SGN().CGTolerance(-1), "tolerance"},
		{FGN().SaturationFloor(0.3), "saturation floor"},
		{FGN().CGTolerance(math.NaN()), "tolerance"},
		{FGN().CGTolerance(math.Inf(1)), "tolerance"},
		{FGN().CGStoppingRule("seven"), "stopping rule"},
	} {
		if err := tc.cfg.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate() = %v, want an error about %q", err, tc.want)
		}
	}
	// A parameter that is not a variable's current value is a graph-building error.
	store := model.NewStore()
	w := store.RootScope().VariableWithValue("W", [][]float64{{1, 2}})
	_, err := model.MustNewExec(testBackend, store, func(scope *model.Scope, h, labels *Node) *Node {
		scope.Store().SetTraining(h.Graph(), true) // a step graph: the variables are its inputs
		notVar := MulScalar(w.NodeValue(h.Graph()), 2)
		head := NewAffineHead(h, notVar, Zeros(h.Graph(), tensors.FromValue([]float64{0, 0}).Shape()))
		return FGN().Done().UpdateGraphWithLinearization(scope, head, labels).Loss
	}).Call([][]float64{{1}}, []int32{0})
	if err == nil || !strings.Contains(err.Error(), "of the linearisation is not the current value (v.NodeValue(g)) of a trainable variable") {
		t.Errorf("non-variable parameter: error %v", err)
	}
	// So is a variable embedded as a constant (as a backend may do outside training graphs).
	constStore := model.NewStore().WithVariableAsConst(true)
	m := &optModel{store: constStore, vars: []*model.Variable{
		constStore.RootScope().VariableWithValue("W", [][]float64{{1, 2}}),
		constStore.RootScope().VariableWithValue("bias", []float64{0, 0}),
	}}
	_, err = model.MustNewExec(testBackend, constStore, func(scope *model.Scope, h, labels *Node) *Node {
		return FGN().Done().UpdateGraphWithLinearization(scope, m.lin(h), labels).Loss
	}).Call([][]float64{{1}}, []int32{0})
	if err == nil || !strings.Contains(err.Error(), "is a constant in this graph") {
		t.Errorf("variables embedded as constants: error %v", err)
	}
}

// TestNonFiniteStepChangesNothing checks that a batch with a NaN or Inf feature leaves every
// parameter and every optimizer state variable bit-identical, reports Direction.Finite false and
// is counted by SkippedSteps,
// for FGN (closed-form Gram, matrix-free) and SGN, at the defaults (whose moving averages, of
// ScaledDamping and of the noise floor's LMDamping.NoiseAverage, a bad batch must not change
// either), with λI damping and with the floor's noise along ĝ, in float32 and float64.
func TestNonFiniteStepChangesNothing(t *testing.T) {
	p := newProblem(23, 6, 4, 3, 3, 1)
	for _, dtype := range []dtypes.DType{dtypes.Float32, dtypes.Float64} {
		for _, tc := range []struct {
			name string
			opt  *GNConfig
			bad  float64
		}{
			{"FGN closed-form Gram", FGN().WarmStart(true), math.NaN()},
			{"FGN matrix-free", FGN().WarmStart(true).RowOperator(MatrixFree), math.Inf(1)},
			{"SGN", SGN().WarmStart(true), math.NaN()},
			{"FGN λI", FGN().WarmStart(true).ScaledDamping(false), math.NaN()},
			{"SGN λI", SGN().WarmStart(true).ScaledDamping(false), math.Inf(1)},
			{"FGN noise along ĝ", FGN().WarmStart(true).DampingPolicy(alongGradient()), math.NaN()},
			{"SGN noise along ĝ", SGN().WarmStart(true).DampingPolicy(alongGradient()), math.Inf(1)},
			{"FGN momentum, metric per entry", FGN().WarmStart(true).Momentum(0.9).ScaledDampingPerEntry(true), math.NaN()},
			{"SGN momentum, metric per entry", SGN().WarmStart(true).Momentum(0.9).ScaledDampingPerEntry(true), math.Inf(1)},
		} {
			t.Run(tc.name+"/"+dtype.String(), func(t *testing.T) {
				m := newOptModelOf(p, false, false, dtype)
				opt := tc.opt.Done()
				exec := model.MustNewExec(testBackend, m.store, func(scope *model.Scope, h, labels *Node) []*Node {
					scope.Store().SetTraining(h.Graph(), true) // a step graph: the variables are its inputs
					dir := opt.UpdateGraphWithLinearization(scope, m.lin(h), labels)
					return []*Node{dir.Finite, dir.Loss}
				})
				good := cast(p.h, dtype)
				if out := exec.MustCall(good, p.labels); !tensors.ToScalar[bool](out[0]) {
					t.Fatalf("a finite batch reported a non-finite step")
				}
				// every variable but the step counters and the last step's ρ
				snapshot := func() []float64 {
					var all []float64
					for v := range m.store.IterVariables() {
						if v.Path() != "/"+optimizer.GlobalStepVariableName && !slices.Contains([]string{"skipped_steps",
							"rejected_steps", "gain_ratio", "step_length"}, v.Name()) {
							all = append(all, flat64(v.MustValue())...)
						}
					}
					return all
				}
				before := snapshot()
				if u := m.store.GetVariable("/FGNOptimizer/row_solution"); tc.opt.fgn && (u == nil || ref.MaxAbs(flat64(u.MustValue())) == 0) {
					t.Fatalf("FGN's warm-start state is missing or zero after a step: the test would not see it change")
				}
				badH := cast(p.h, dtypes.Float64).([][]float64)
				badH = append([][]float64(nil), badH...)
				badH[2] = append([]float64(nil), badH[2]...)
				badH[2][1] = tc.bad
				out := exec.MustCall(cast(badH, dtype), p.labels)
				if tensors.ToScalar[bool](out[0]) {
					t.Errorf("a batch with a %v feature reported a finite step", tc.bad)
				}
				if after := snapshot(); ref.RelErr(after, before) != 0 || len(after) != len(before) {
					t.Errorf("a non-finite step changed the variables: relative change %g", ref.RelErr(after, before))
				}
				if n := opt.Telemetry(m.store).SkippedSteps; n != 1 {
					t.Errorf("Telemetry().SkippedSteps = %d after one finite and one non-finite step, want 1", n)
				}
			})
		}
	}
}

// alongGradient is Levenberg-Marquardt damping with the floor's ν from the examples' gradients
// along the batch gradient (LMDamping.WholeVariance off).
func alongGradient() LMDamping {
	p := LevenbergMarquardt()
	p.WholeVariance = false
	return p
}

// floorOf returns the noise floor κμ·min(ν, 1)^p of policy for the curvature scale mu and noise nu.
func floorOf(policy LMDamping, mu, nu float64) float64 {
	return policy.NoiseFloor * mu * math.Pow(math.Min(nu, 1), policy.FloorExponent)
}

// countingEvaluator is counting (cg_test.go) for an optimizer step, which evaluates the logits at
// its trial point: it hides Linearize's WhileSafe, so that CG is unrolled and every iteration's
// products are built, and counts them.
type countingEvaluator struct {
	LogitsEvaluator
	vjps, jvps int
}

func (c *countingEvaluator) VJP(m *Node) Vec { c.vjps++; return c.LogitsEvaluator.VJP(m) }
func (c *countingEvaluator) JVP(v Vec) *Node { c.jvps++; return c.LogitsEvaluator.JVP(v) }

// TestOptimizerStepProducts counts the products of an optimizer step at the default settings on
// the MLP, CG unrolled to its N_CG = 5 iterations: the paper's cost accounting (the logits,
// N_CG·(JVP + VJP) and one VJP) plus what the damping adds, the noise probe's VJP and J_z d, and
// what Settings.Momentum adds. The batch gradient is one VJP however many parts of the step read
// it (the direction, the damping metric, the noise estimate).
func TestOptimizerStepProducts(t *testing.T) {
	p := newProblem(5, 12, 6, 4, 5, 0.5)
	const n = 5 // N_CG of the default settings
	for _, tc := range []struct {
		name       string
		c          *GNConfig
		vjps, jvps int
	}{
		// FGN (matrix-free): ĝ = J̃ᵀr̃/b, the noise probe and CG's N_CG products L p (VJPs); CG's
		// N_CG products Lᵀβ, the first of them K r̃, which gives μ and ν, and J_z d for the step
		// length and the damping's model (JVPs).
		{"FGN", FGN(), n + 2, n + 1},
		// SGN: ĝ, the noise probe and CG's N_CG GGN products (VJPs); their N_CG JVPs, the first of
		// them J_z g, which gives μ and ν, and J_z d (JVPs).
		{"SGN", SGN(), n + 2, n + 1},
		// Settings.Momentum adds J_z m_{t−1}, for the damping's model of the averaged step; the
		// per-entry damping metric adds no product.
		{"FGN momentum, metric per entry", FGN().Momentum(0.9).ScaledDampingPerEntry(true), n + 2, n + 2},
		{"SGN momentum, metric per entry", SGN().Momentum(0.9).ScaledDampingPerEntry(true), n + 2, n + 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newOptModel(p, true, false)
			opt := tc.c.Done()
			var lin *countingEvaluator
			exec, err := model.NewExec(testBackend, m.store, func(scope *model.Scope, h, labels *Node) *Node {
				scope.Store().SetTraining(h.Graph(), true)
				lin = &countingEvaluator{LogitsEvaluator: m.lin(h).(LogitsEvaluator)}
				return opt.UpdateGraphWithLinearization(scope, lin, labels).Loss
			})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := exec.Call(p.h, p.labels); err != nil {
				t.Fatalf("step: %+v", err)
			}
			if lin.vjps != tc.vjps || lin.jvps != tc.jvps {
				t.Errorf("built %d VJPs and %d JVPs, want %d and %d", lin.vjps, lin.jvps, tc.vjps, tc.jvps)
			}
		})
	}
}

// TestStepSharesMargin checks that a Trainer's step graph (fgn.Loss, then the optimizer's
// UpdateGraph) forms the batch's margin quantities once, whatever reads them (the loss, the
// direction, the noise estimate, the step length and the damping's model), and once more at the
// damping's trial point: NewMargin's loss is the graph's only Log1p.
func TestStepSharesMargin(t *testing.T) {
	p := newProblem(5, 12, 6, 4, 5, 0.5)
	for _, tc := range []struct {
		name string
		c    *GNConfig
	}{{"FGN", FGN()}, {"SGN", SGN()}} {
		t.Run(tc.name, func(t *testing.T) {
			m := newOptModel(p, true, false)
			opt := tc.c.Done()
			margins := 0
			exec, err := model.NewExec(testBackend, m.store, func(scope *model.Scope, h, labels *Node) *Node {
				g := h.Graph()
				scope.Store().SetTraining(g, true)
				loss := Loss([]*Node{labels}, []*Node{m.logits(scope, h)})
				opt.UpdateGraph(scope, g, loss)
				for _, n := range g.Nodes() {
					if n.Type() == NodeTypeLog1p {
						margins++
					}
				}
				return loss
			})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := exec.Call(p.h, p.labels); err != nil {
				t.Fatalf("step: %+v", err)
			}
			if margins != 2 {
				t.Errorf("the step graph forms %d margins, want 2 (the batch's and the trial point's)", margins)
			}
		})
	}
}
