package fgn

import (
	"math"
	"strings"
	"testing"

	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ui/commandline"

	"github.com/fgn-paper/fgn/internal/ref"

	"github.com/fgn-paper/fgn/fgn/internal/gn"
)

// lmCases are the assemblies the damping tests run: FGN's three row operators and SGN, on the
// affine head and on an MLP linearised by Linearize.
var lmCases = []struct {
	name string
	opt  func() *GNConfig
	mlp  bool
}{
	{"FGN affine closed form", FGN, false},
	{"FGN affine matrix-free", func() *GNConfig { return FGN().RowOperator(MatrixFree) }, false},
	{"FGN mlp autodiff", FGN, true},
	{"FGN affine closed form, FGN's step length", func() *GNConfig { return FGN().GGNStepLength(false) }, false},
	{"FGN mlp autodiff, FGN's step length", func() *GNConfig { return FGN().GGNStepLength(false) }, true},
	{"SGN affine", SGN, false},
	{"SGN mlp autodiff", SGN, true},
}

// lmStep is one optimizer step's telemetry, with the flattened direction and parameters.
type lmStep struct {
	loss, lambda, next, mu, nu, predicted, actual, rho float64
	tau                                                float64 // Direction.StepLength, 1 when nil
	accepted                                           bool
	d, before, after                                   []float64
}

// lmSteps runs n steps of opt (an adaptive policy) on the problem's batch.
func (m *optModel) lmSteps(t *testing.T, opt Optimizer, p *problem, n int) []lmStep {
	t.Helper()
	exec := model.MustNewExec(testBackend, m.store, func(scope *model.Scope, h, labels *Node) []*Node {
		scope.Store().SetTraining(h.Graph(), true) // a step graph: the variables are its inputs
		dir := opt.UpdateGraphWithLinearization(scope, m.lin(h), labels)
		dd := dir.Damping
		tau := dir.StepLength
		if tau == nil {
			tau = OnesLike(dir.Loss)
		}
		return []*Node{dir.Loss, dd.Used, dd.Next, dd.Curvature, dd.Noise, dd.Predicted, dd.Actual, dd.Rho,
			flattenVec(dir.D), dd.Accepted, tau}
	})
	steps := make([]lmStep, n)
	for k := range steps {
		before := m.flatParams()
		out, err := exec.Call(p.h, p.labels)
		if err != nil {
			t.Fatalf("step %d: %+v", k, err)
		}
		v := make([]float64, 8)
		for i := range v {
			v[i] = flat64(out[i])[0]
		}
		steps[k] = lmStep{loss: v[0], lambda: v[1], next: v[2], mu: v[3], nu: v[4], predicted: v[5], actual: v[6],
			rho: v[7], d: flat64(out[8]), accepted: tensors.ToScalar[bool](out[9]), tau: flat64(out[10])[0],
			before: before, after: m.flatParams()}
	}
	return steps
}

// batchLoss returns the mean cross-entropy of the problem's batch at the flattened parameters w,
// in float64.
func batchLoss(t *testing.T, p *problem, mlp bool, w []float64) float64 {
	t.Helper()
	shapes := [][]int{{p.d, p.c}, {p.c}}
	if mlp {
		shapes = [][]int{{p.d, p.hidden}, {p.hidden}, {p.hidden, p.c}, {p.c}}
	}
	inputs := []any{p.h, p.labels}
	for _, dims := range shapes {
		size := 1
		for _, n := range dims {
			size *= n
		}
		inputs = append(inputs, tensors.FromFlatDataAndDimensions(append([]float64(nil), w[:size]...), dims...))
		w = w[size:]
	}
	return run(t, func(in []*Node) []*Node {
		var z *Node
		if mlp {
			z = mlpLogits(in[0], Vec(in[2:6]))
		} else {
			z = NewAffineHead(in[0], in[2], in[3]).Logits()
		}
		return []*Node{ReduceAllMean(gn.NewMargin(z, in[1]).Loss)}
	}, inputs...)[0][0]
}

// TestLMDecreasesMatchDense checks an LM step's telemetry against float64 dense references: the
// curvature scale μ = gᵀH g/‖g‖², the gradient noise ν from the examples' gradients along g (the
// policy's WholeVariance off), the damping max(λ, κμ·min(ν, 1)^p) the step was solved with, FGN's step length τ = −gᵀd/dᵀ(H_GGN + λI)d
// (1 with FGN's own step length and for SGN), the predicted decrease −(ατ gᵀd + ½(ατ)² dᵀH d) with
// g and H = H_FGN (FGN at its own step length) or H_GGN from the dense forms (newDense), the
// actual decrease L(w) − L(w + ατd) evaluated at the stepped parameters, and ρ their ratio.
func TestLMDecreasesMatchDense(t *testing.T) {
	const alpha, lambda = 0.7, 0.3
	p := newProblem(41, 9, 5, 4, 3, 1)
	for _, tc := range lmCases {
		t.Run(tc.name, func(t *testing.T) {
			m := newOptModel(p, tc.mlp, false)
			policy := alongGradient()
			opt := tc.opt().LearningRate(alpha).Damping(lambda).DampingPolicy(policy).Done()
			c := opt.(*gnOptimizer).c
			s := m.lmSteps(t, opt, p, 1)[0]
			dn := runDense(t, p, tc.mlp)
			h := dn.ggn
			if c.fgn && !c.s.GGNStepLength {
				h = dn.fgn
			}
			var gd, dhd, dgd, dd, gg, ghg float64
			for i := range dn.d {
				gd += dn.grad[i] * s.d[i]
				dd += s.d[i] * s.d[i]
				gg += dn.grad[i] * dn.grad[i]
				for j := range dn.d {
					dhd += s.d[i] * h[i*dn.d+j] * s.d[j]
					dgd += s.d[i] * dn.ggn[i*dn.d+j] * s.d[j]
					ghg += dn.grad[i] * h[i*dn.d+j] * dn.grad[j]
				}
			}
			if c.fgn { // μ is measured on the direction's own curvature
				ghg = 0
				for i := range dn.d {
					for j := range dn.d {
						ghg += dn.grad[i] * dn.fgn[i*dn.d+j] * dn.grad[j]
					}
				}
			}
			check(t, "curvature scale μ vs dense gᵀHg/‖g‖²", math.Abs(s.mu-ghg/gg)/(ghg/gg), 1e-10)
			nu := denseNoise(dn, p.b)
			check(t, "gradient noise ν vs dense", math.Abs(s.nu-nu)/nu, 1e-10)
			wantLambda := math.Max(lambda, floorOf(policy, ghg/gg, nu))
			check(t, "damping solved with vs max(λ, κμ·min(ν, 1)^p)", math.Abs(s.lambda-wantLambda)/wantLambda, 1e-10)
			tau := 1.0
			if c.fgn && c.s.GGNStepLength {
				tau = math.Min(-gd/(dgd+s.lambda*dd), 1)
				if !(tau < 1) {
					t.Errorf("FGN's step length τ = %g, want < 1 on a batch of %d classes", tau, p.c)
				}
			}
			check(t, "step length τ vs dense −gᵀd/dᵀ(H_GGN + λI)d", math.Abs(s.tau-tau)/tau, 1e-10)
			step := alpha * tau
			predicted := -(step*gd + 0.5*step*step*dhd)
			check(t, "predicted decrease vs dense", math.Abs(s.predicted-predicted)/math.Abs(predicted), 1e-10)
			trial := make([]float64, len(s.before))
			for i := range trial {
				trial[i] = s.before[i] + step*s.d[i]
			}
			check(t, "parameters after the step vs w + ατd", ref.RelErr(s.after, trial), 1e-13)
			l0 := batchLoss(t, p, tc.mlp, s.before)
			actual := l0 - batchLoss(t, p, tc.mlp, trial)
			check(t, "actual decrease vs float64 evaluation (relative to the loss)", math.Abs(s.actual-actual)/l0, 1e-13)
			check(t, "ρ vs actual/predicted", math.Abs(s.rho-s.actual/s.predicted)/math.Abs(s.rho), 1e-15)
			if !s.accepted {
				t.Errorf("first step rejected, want a step that decreases the loss (actual %g)", s.actual)
			}
		})
	}
}

// illConditioned returns a batch whose feature columns span six orders of magnitude.
func illConditioned() *problem {
	p := newProblem(42, 16, 6, 4, 5, 0.3)
	for i := range p.h {
		row := append([]float64(nil), p.h[i]...)
		for j := range row {
			row[j] *= math.Pow(10, float64(j-3)/2)
		}
		p.h[i] = row
	}
	return p
}

// TestLMAdapts runs many LM steps with a large step size from a small λ on an ill-conditioned
// batch and checks, step by step, that λ follows the update rule of LMDamping exactly (it goes up
// after a bad step and down after good ones, and is raised to its curvature floor, all of which
// occur), that every accepted step does
// not increase the batch loss, and that a rejected step leaves every parameter bit-identical.
func TestLMAdapts(t *testing.T) {
	const steps = 60
	p := illConditioned()
	policy := LevenbergMarquardt()
	flooredSteps := 0
	for _, tc := range lmCases {
		t.Run(tc.name, func(t *testing.T) {
			m := newOptModel(p, tc.mlp, false)
			opt := tc.opt().LearningRate(2).Damping(1e-2).CGMaxIterations(20).DampingPolicy(policy).Done()
			trace := m.lmSteps(t, opt, p, steps)
			var ups, downs, rejected, floored int
			worst := 0.0 // largest relative loss increase over accepted steps
			for k, s := range trace {
				want := s.lambda
				switch {
				case !(s.rho >= policy.LowerRho):
					want = math.Min(s.lambda*policy.Increase, policy.MaxDamping)
					ups++
				case s.rho > policy.UpperRho:
					want = math.Max(s.lambda*policy.Decrease, policy.MinDamping)
					downs++
				}
				if s.next != want {
					t.Errorf("step %d: ρ %g, λ %g → %g, want %g", k, s.rho, s.lambda, s.next, want)
				}
				if k+1 < steps {
					next := trace[k+1]
					floor := floorOf(policy, next.mu, next.nu)
					if floor > s.next {
						floored++
					}
					if want := math.Max(s.next, floor); math.Abs(next.lambda-want) > 1e-15*want {
						t.Errorf("step %d solved with λ %g, want max(%g set by the previous step, κμ·min(ν, 1)^p = %g·%g·%g^%g)",
							k+1, next.lambda, s.next, policy.NoiseFloor, next.mu, math.Min(next.nu, 1), policy.FloorExponent)
					}
				}
				if s.accepted != (s.actual >= 0) {
					t.Errorf("step %d: accepted %v with actual decrease %g", k, s.accepted, s.actual)
				}
				if !s.accepted {
					rejected++
					if !equalBits(s.after, s.before) {
						t.Errorf("step %d was rejected but changed the parameters", k)
					}
					continue
				}
				if k+1 < steps { // the next step's loss is the loss at the accepted point
					worst = math.Max(worst, (trace[k+1].loss-s.loss)/s.loss)
				}
			}
			t.Logf("%d steps: λ up %d, down %d, raised to the floor %d, %d rejected; loss %.6g → %.6g, λ %g → %g",
				steps, ups, downs, floored, rejected, trace[0].loss, trace[steps-1].loss, trace[0].lambda,
				trace[steps-1].next)
			check(t, "largest relative loss increase over accepted steps", math.Max(worst, 0), 1e-14)
			if ups == 0 || downs == 0 || rejected == 0 {
				t.Errorf("λ went up %d and down %d times with %d rejected steps: the problem no longer exercises "+
					"the policy, make it harder", ups, downs, rejected)
			}
			flooredSteps += floored
			if !(trace[steps-1].loss < trace[0].loss) {
				t.Errorf("the loss did not decrease: %g → %g", trace[0].loss, trace[steps-1].loss)
			}
		})
	}
	if flooredSteps == 0 {
		t.Errorf("no step was raised to the curvature floor: the problem no longer exercises it, make it harder")
	}
}

// TestConstantDampingUnchanged checks that the paper's policy, ConstantDamping, takes the step
// w + α d of the public direction functions bit for bit (FGN at its full step length,
// GGNStepLength off, as the paper's) and adds no state variable.
func TestConstantDampingUnchanged(t *testing.T) {
	const alpha, lambda = 0.4, 0.6
	p := newProblem(43, 8, 5, 4, 3, 1)
	fgnCold := func(lin Linearization, labels *Node, cfg Settings) *Direction {
		return fgnDir(lin, labels, nil, cfg)
	}
	for _, tc := range []struct {
		name string
		opt  *GNConfig
		mlp  bool
		dir  func(lin Linearization, labels *Node, cfg Settings) *Direction
	}{
		{"FGN affine closed form", FGN().DampingPolicy(ConstantDamping{}).GGNStepLength(false), false, fgnCold},
		{"FGN mlp", FGN().DampingPolicy(ConstantDamping{}).GGNStepLength(false), true, fgnCold},
		{"SGN mlp", SGN().DampingPolicy(ConstantDamping{}), true, func(lin Linearization, labels *Node, cfg Settings) *Direction {
			return sgnDir(lin, labels, nil, cfg)
		}},
	} {
		opt := *tc.opt
		t.Run(tc.name, func(t *testing.T) {
			m := newOptModel(p, tc.mlp, false)
			want := flat64(model.MustNewExec(testBackend, m.store, func(_ *model.Scope, h, labels *Node) *Node {
				lin := m.lin(h)
				d := tc.dir(lin, labels, Settings{Damping: lambda, CG: DefaultSettings().CG})
				return flattenVec(gn.VecAxpy(lin.Params(), Scalar(h.Graph(), dtypes.Float64, alpha), d.D))
			}).MustCall(p.h, p.labels)[0])
			m.step(t, opt.LearningRate(alpha).Damping(lambda).Done(), p, 1)
			if !equalBits(m.flatParams(), want) {
				t.Errorf("constant damping step differs from w + αd of the direction function: relative %g",
					ref.RelErr(m.flatParams(), want))
			}
			for v := range m.store.IterVariables() {
				if strings.HasSuffix(v.Path(), "/damping") {
					t.Errorf("constant damping created the state variable %s", v.Path())
				}
			}
		})
	}
}

func TestDampingErrors(t *testing.T) {
	lm := func(edit func(*LMDamping)) DampingPolicy {
		p := LevenbergMarquardt()
		edit(&p)
		return p
	}
	for _, tc := range []struct {
		cfg  *GNConfig
		want string
	}{
		{FGN().DampingPolicy(nil), "no damping policy"},
		{FGN().DampingPolicy(lm(func(p *LMDamping) { p.LowerRho = 0.8 })), "ρ thresholds"},
		{SGN().DampingPolicy(lm(func(p *LMDamping) { p.UpperRho = math.Inf(1) })), "ρ thresholds"},
		{FGN().DampingPolicy(lm(func(p *LMDamping) { p.Increase = 1 })), "increase factor"},
		{FGN().DampingPolicy(lm(func(p *LMDamping) { p.Decrease = 1 })), "decrease factor"},
		{FGN().DampingPolicy(lm(func(p *LMDamping) { p.MinDamping = 0 })), "λ bounds"},
		{FGN().DampingPolicy(lm(func(p *LMDamping) { p.MaxDamping = math.NaN() })), "λ bounds"},
		{FGN().DampingPolicy(lm(func(p *LMDamping) { p.FloorExponent = 0 })), "floor exponent"},
		{SGN().DampingPolicy(lm(func(p *LMDamping) { p.FloorExponent = math.Inf(1) })), "floor exponent"},
		{FGN().DampingPolicy(lm(func(p *LMDamping) { p.NoiseAverage = 1 })), "noise average"},
		{FGN().DampingPolicy(lm(func(p *LMDamping) { p.NoiseAverage = -0.1 })), "noise average"},
		{FGN().Damping(1e7).DampingPolicy(LevenbergMarquardt()), "outside the Levenberg-Marquardt bounds"},
	} {
		if err := tc.cfg.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate() = %v, want an error about %q", err, tc.want)
		}
	}

	// An adaptive policy with a linearisation that cannot evaluate the trial logits is a
	// graph-building error naming what to use.
	p := newProblem(44, 6, 4, 3, 3, 1)
	const want = "use Linearize(logits, params), an AffineHead, or a Linearization that is a LogitsEvaluator or LinearInParams"
	m := newOptModel(p, true, false)
	_, err := model.MustNewExec(testBackend, m.store, func(scope *model.Scope, h, labels *Node) *Node {
		scope.Store().SetTraining(h.Graph(), true) // a step graph: the variables are its inputs
		lin := struct{ Linearization }{m.lin(h)}   // hides LogitsAt
		return FGN().DampingPolicy(LevenbergMarquardt()).Done().UpdateGraphWithLinearization(scope, lin, labels).Loss
	}).Call(p.h, p.labels)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("LM with a Linearization without LogitsAt: error %v, want one containing %q", err, want)
	}
}

// TestLMTelemetryState checks the telemetry an adaptive policy keeps in state variables for
// callers without the step's Direction (train.Trainer), as Optimizer.Telemetry reads it: after each
// LM step of TestLMAdapts's problem (λI damping and the floor's noise along ĝ, whose steps
// overshoot there), Damping is the step's next λ, GainRatio its ρ (bit for bit, NaN included),
// RejectedSteps the number of steps rejected so far, SkippedSteps 0, and, for FGN at the GGN's
// step length, StepLength the step's τ (others keep no "step_length" and read NaN).
func TestLMTelemetryState(t *testing.T) {
	const steps = 12
	p := illConditioned()
	for _, tc := range lmCases {
		t.Run(tc.name, func(t *testing.T) {
			m := newOptModel(p, tc.mlp, false)
			c := tc.opt().LearningRate(3).Damping(1e-2).CGMaxIterations(20).ScaledDamping(false).DampingPolicy(alongGradient())
			opt := c.Done()
			if tel := opt.Telemetry(m.store); tel.Damping != 1e-2 || !math.IsNaN(tel.GainRatio) || !math.IsNaN(tel.StepLength) ||
				tel.RejectedSteps != 0 || tel.SkippedSteps != 0 {
				t.Errorf("before the first step: telemetry %+v, want λ 0.01, NaN ρ and τ, no steps counted", tel)
			}
			kept := c.fgn && c.s.GGNStepLength
			rejected := int64(0)
			for k := range steps {
				s := m.lmSteps(t, opt, p, 1)[0]
				if !s.accepted {
					rejected++
				}
				tel := opt.Telemetry(m.store)
				if !(tel.GainRatio == s.rho || math.IsNaN(tel.GainRatio) && math.IsNaN(s.rho)) || tel.RejectedSteps != rejected {
					t.Errorf("step %d: GainRatio %g, RejectedSteps %d; want the step's ρ %g and %d", k, tel.GainRatio, tel.RejectedSteps, s.rho, rejected)
				}
				if tel.Damping != s.next || tel.SkippedSteps != 0 {
					t.Errorf("step %d: Damping %g, SkippedSteps %d; want the step's next λ %g and 0", k, tel.Damping, tel.SkippedSteps, s.next)
				}
				switch {
				case kept && tel.StepLength != s.tau:
					t.Errorf("step %d: StepLength %g, want the step's τ %g", k, tel.StepLength, s.tau)
				case !kept && !math.IsNaN(tel.StepLength):
					t.Errorf("step %d: StepLength %g for a step without the GGN's step length, want NaN", k, tel.StepLength)
				case !kept && m.store.GetVariable("/"+c.scopeName+"/step_length") != nil:
					t.Errorf("step %d: a step without the GGN's step length keeps a step_length variable", k)
				}
			}
			if rejected == 0 {
				t.Errorf("no step of %d was rejected: the test does not see rejected_steps count", steps)
			}
		})
	}
}

// denseNoise returns the gradient noise ν = v/(ā² − v) of the batch from the dense margin
// Jacobian: the examples' gradients of the mean cross-entropy, p_†,i J_i (eq. 2.11), taken along
// the batch gradient g, have mean ā = ‖g‖ and sample variance s², v = s²/b (+∞ when ā² ≤ v).
func denseNoise(dn denseOut, b int) float64 {
	gg := 0.0
	for _, x := range dn.grad {
		gg += x * x
	}
	norm := math.Sqrt(gg)
	a := make([]float64, b)
	var mean float64
	for i := range a {
		for k := range dn.d {
			a[i] += dn.pDagger[i] * dn.js[i*dn.d+k] * dn.grad[k] / norm
		}
		mean += a[i] / float64(b)
	}
	var s2 float64
	for _, x := range a {
		s2 += (x - mean) * (x - mean) / float64(b-1)
	}
	v := s2 / float64(b)
	if mean*mean <= v {
		return math.Inf(1)
	}
	return v / (mean*mean - v)
}

// TestVarianceEstimatesMatchDense checks varianceEstimates and noiseRatio against a float64 dense
// reference built from the examples' gradients g_i = p_†,i J_i of the dense margin Jacobian
// (eq. 2.11; their mean is the batch gradient ĝ): with the probe's signs σ_i,
// S1 = ‖Σ_i σ_i g_i‖²/b, S2 = ‖ĝ‖², v̂ = (S1 − S2)/(b − 1), signal = ‖ĝ + g_R‖² − v̂ and
// ν = max(v̂, 0)/signal, the norms weighted by the damping metric's S^{-1/2} per tensor; on the
// affine head and the MLP, with and without a regulariser's gradient g_R and a metric, and v̂ = 0,
// ν = 0 for a batch of one.
func TestVarianceEstimatesMatchDense(t *testing.T) {
	for _, tc := range []struct {
		name             string
		b                int
		mlp, reg, metric bool
	}{
		{"affine", 9, false, false, false},
		{"affine, regulariser and metric", 9, false, true, true},
		{"mlp", 9, true, false, false},
		{"mlp, regulariser", 9, true, true, false},
		{"mlp, metric", 9, true, false, true},
		{"affine, batch of one", 1, false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const l2 = 0.03 // g_R = l2·W on the first weight matrix
			p := newProblem(43, tc.b, 5, 4, 3, 1)
			signs := []float64{1, -1, -1, 1, 1, 1, -1, 1, -1}[:tc.b]
			scales := []float64{2, 0.5, 1.5, 0.25} // S^{-1/2} of each tensor
			lin, inputs, first := affineLin, p.affineInputs(dtypes.Float64), p.w
			if tc.mlp {
				lin, inputs, first = mlpLin, p.mlpInputs(dtypes.Float64), p.w1
			}
			got := run(t, func(in []*Node) []*Node {
				l := lin(in)
				params := l.Params()
				var reg *regularisation
				if tc.reg {
					reg = &regularisation{grad: make(Vec, len(params))}
					reg.grad[0] = MulScalar(params[0], l2)
				}
				var sqrtInvS Vec
				if tc.metric {
					for k := range params {
						sqrtInvS = append(sqrtInvS, Scalar(in[0].Graph(), dtypes.Float64, scales[k]))
					}
				}
				m := gn.NewMargin(l.Logits(), in[1])
				v, signal := varianceEstimates(l, m, m.Gradient(l), in[len(in)-1], reg, sqrtInvS)
				return []*Node{v, signal, noiseRatio(v, signal)}
			}, append(inputs, signs)...)
			gotV, gotSignal, gotNu := got[0][0], got[1][0], got[2][0]
			dn := runDense(t, p, tc.mlp)
			// weight[k] is parameter k's metric weight, regGrad[k] its g_R, in the flattened order.
			weight := make([]float64, dn.d)
			regGrad := make([]float64, dn.d)
			sizes := []int{p.d * p.c, p.c}
			if tc.mlp {
				sizes = []int{p.d * p.hidden, p.hidden, p.hidden * p.c, p.c}
			}
			k := 0
			for tensor, size := range sizes {
				for range size {
					weight[k] = 1
					if tc.metric {
						weight[k] = scales[tensor]
					}
					k++
				}
			}
			if tc.reg {
				for i, row := range first {
					for j, x := range row {
						regGrad[i*len(row)+j] = l2 * x
					}
				}
			}
			mean := make([]float64, dn.d)
			probe := make([]float64, dn.d)
			for i := range p.b {
				for k := range dn.d {
					gik := dn.pDagger[i] * dn.js[i*dn.d+k]
					mean[k] += gik / float64(p.b)
					probe[k] += signs[i] * gik
				}
			}
			check(t, "mean of the examples' gradients vs the dense batch gradient", ref.RelErr(mean, dn.grad), 1e-12)
			var s1, s2, total float64
			for k := range dn.d {
				w2 := weight[k] * weight[k]
				s1 += w2 * probe[k] * probe[k] / float64(p.b)
				s2 += w2 * mean[k] * mean[k]
				total += w2 * (mean[k] + regGrad[k]) * (mean[k] + regGrad[k])
			}
			v := 0.0
			if p.b > 1 {
				v = (s1 - s2) / float64(p.b-1)
			}
			if !(total-v > 0) {
				t.Fatalf("the dense signal is %g: the test needs a batch whose gradient stands above its noise", total-v)
			}
			check(t, "signal ‖ĝ + g_R‖² − v̂ vs dense", math.Abs(gotSignal-(total-v))/(total-v), 1e-12)
			if p.b == 1 {
				if gotV != 0 || gotNu != 0 {
					t.Errorf("v̂ = %g, ν = %g for a batch of one, want 0", gotV, gotNu)
				}
				return
			}
			check(t, "variance v̂ = (S1 − S2)/(b − 1) vs dense", math.Abs(gotV-v)/math.Abs(v), 1e-12)
			want := math.Max(v, 0) / (total - v)
			check(t, "ν of the whole variance vs dense", math.Abs(gotNu-want)/want, 1e-12)
		})
	}
}

// TestLMWholeVariance checks that LMDamping.WholeVariance solves with the floor's ν estimated
// from the whole variance: from a small λ, a step's damping is the floor κμ·min(ν, 1)^p with the
// μ and ν it reports (p = 1 here, so that the floor stands above λ), and that ν is not the
// estimate along the gradient (denseNoise), on every assembly. The first step's average is its
// own estimate (TestNoiseAverage).
func TestLMWholeVariance(t *testing.T) {
	const lambda = 1e-3
	p := newProblem(41, 9, 5, 4, 3, 1)
	for _, tc := range lmCases {
		t.Run(tc.name, func(t *testing.T) {
			m := newOptModel(p, tc.mlp, false)
			policy := LevenbergMarquardt()
			policy.FloorExponent = 1
			s := m.lmSteps(t, tc.opt().Damping(lambda).DampingPolicy(policy).Done(), p, 1)[0]
			if !(s.nu >= 0) {
				t.Fatalf("ν = %g, want ≥ 0 or +∞", s.nu)
			}
			floor := floorOf(policy, s.mu, s.nu)
			if !(floor > lambda) {
				t.Fatalf("floor κμ·min(ν, 1) = %g ≤ λ = %g: the test cannot see which ν the step used", floor, lambda)
			}
			check(t, "damping solved with vs κμ·min(ν, 1)", math.Abs(s.lambda-floor)/floor, 1e-12)
			along := denseNoise(runDense(t, p, tc.mlp), p.b)
			if math.Abs(s.nu-along) <= 0.01*along {
				t.Errorf("ν = %g is the estimate along the gradient (%g), want the whole variance's", s.nu, along)
			}
		})
	}
}

// TestNoiseAverage checks LMDamping.NoiseAverage's averages against a float64 reference: fed a
// sequence of estimates (v_t, signal_t), including a negative v_t, a step that is not finite and a
// non-finite estimate, ν_t is max(m̂_v, 0)/m̂_signal with m_t = β m_{t−1} + (1 − β) x_t and
// m̂_t = m_t/(1 − β^t) over the finite steps only, and the state is left unchanged by the others.
func TestNoiseAverage(t *testing.T) {
	const beta = 0.9
	steps := []struct {
		v, signal float64
		finite    bool
	}{{0.3, 2, true}, {-0.1, 1.5, true}, {5, 1, false}, {0.8, 0.7, true}, {math.Inf(1), 1, true}, {0.2, 3, true}}
	store := model.NewStore()
	o := FGN().Done().(*gnOptimizer)
	exec := model.MustNewExec(testBackend, store, func(scope *model.Scope, v, signal, finite *Node) *Node {
		nu, avg := o.averageNoise(scope, v, signal, beta)
		avg.update(finite)
		return nu
	})
	var mv, ms float64
	n := 0
	for k, st := range steps {
		got := tensors.ToScalar[float64](exec.MustCall(st.v, st.signal, st.finite)[0])
		// the reference: this step's ν from the averages including it, kept only when it counts
		nv, ns := beta*mv+(1-beta)*st.v, beta*ms+(1-beta)*st.signal
		c := 1 - math.Pow(beta, float64(n+1))
		want := math.Max(nv/c, 0) / (ns / c)
		if math.IsNaN(want) || math.IsInf(nv, 0) {
			want = math.Inf(1)
		}
		if !(got == want || math.Abs(got-want) <= 1e-14*want) {
			t.Errorf("step %d: ν = %g, want %g (tolerance 1e-14 relative)", k, got, want)
		}
		if st.finite && !math.IsInf(nv, 0) {
			mv, ms, n = nv, ns, n+1
		}
	}
	if got := tensors.ToScalar[float64](store.GetVariable("/FGNOptimizer/noise_steps").MustValue()); got != float64(n) {
		t.Errorf("noise_steps = %g after %d steps, %d of them counted, want %d", got, len(steps), n, n)
	}
}

// TestLMParamsFromScope checks that FromScope reads the Levenberg-Marquardt policy's floor
// (ParamNoiseFloor, ParamFloorExponent, ParamWholeVariance, ParamNoiseAverage) for the "lm"
// policy, by name as GoMLX's -set gives them after DeclareParams, and leaves a constant λ without
// them.
func TestLMParamsFromScope(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  string // GoMLX's command-line settings
		want DampingPolicy
	}{
		{"defaults", "", LevenbergMarquardt()},
		{"the floor's settings", "fgn_noise_floor=3;fgn_floor_exponent=2;fgn_noise_average=0.5",
			func() DampingPolicy {
				p := LevenbergMarquardt()
				p.NoiseFloor, p.FloorExponent, p.NoiseAverage = 3, 2, 0.5
				return p
			}()},
		{"named lm policy", "fgn_damping_policy=lm;fgn_whole_variance=false", alongGradient()},
		{"constant λ", "fgn_damping_policy=constant;fgn_noise_floor=3;fgn_whole_variance=false", ConstantDamping{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := model.NewStore()
			DeclareParams(store)
			if tc.set != "" {
				if _, err := commandline.ParseSettings(store, tc.set); err != nil {
					t.Fatal(err)
				}
			}
			for _, c := range []*GNConfig{FGN(), SGN()} {
				if got := c.FromScope(store.RootScope().In("model")).damping; got != tc.want {
					t.Errorf("%s: policy %+v, want %+v", c.name(), got, tc.want)
				}
			}
		})
	}
}
