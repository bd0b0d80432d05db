package fgn

import (
	"fmt"
	"math"
	"path"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/model/initializer"
	"github.com/gomlx/gomlx/support/exceptions"

	"github.com/fgn-paper/fgn/fgn/internal/gn"
)

// DampingPolicy chooses the damping λ of each step of FGN and SGN, which solve
// (H + λI) d = −g and step w ← w + s, s = α d.
//
// ConstantDamping is the paper's (sec. 5: λ fixed, every finite step taken). An adaptive policy
// (Adaptive() true, e.g. LevenbergMarquardt) makes the optimizer keep λ in a state variable
// (initialised to the optimizer's Damping), solve each step with the damping Damping(λ, μ) for the
// batch's curvature scale
//
//	μ = gᵀH g / ‖g‖²,
//
// the curvature of the method's Gauss-Newton model along the gradient (a Rayleigh quotient of H,
// between its smallest and largest eigenvalue; 0 when g = 0), measure the step's gain ratio
//
//	ρ = actual / predicted,
//	actual    = L(w) − L(w + s),
//	predicted = m(0) − m(s) = −(gᵀs + ½ sᵀH s),
//
// on the step's own batch (L the mean cross-entropy of eq. 2.4, m its Gauss-Newton model with
// the method's undamped curvature: H_FGN = (1/b) JᵀQJ of eq. 3.8 for FGN, H_GGN of eq. 3.1 for
// SGN), take the step only if it does not increase the batch loss, and set λ ← Next(λ_used, ρ). ρ
// is NaN when the model predicts no decrease (predicted ≤ 0: g = 0, or α so large that the model's
// curvature term outweighs its slope).
type DampingPolicy interface {
	// Adaptive reports whether λ changes from step to step.
	Adaptive() bool
	// Damping returns the damping a step solves with (a scalar of λ's dtype) from the state λ, the
	// batch's curvature scale μ ≥ 0 and the noise-to-signal ratio ν ≥ 0 (possibly +∞) of its
	// gradient (scalars). The optimizer calls it for adaptive policies only.
	Damping(lambda, mu, nu *Node) *Node
	// Next returns the state λ of the next step (a scalar of λ's dtype) from the damping this step
	// was solved with and its gain ratio ρ (scalars, ρ possibly NaN). The optimizer calls it for
	// adaptive policies only, and keeps λ when the step is not finite.
	Next(lambda, rho *Node) *Node
	// Validate reports the first invalid setting, given the initial damping λ₀.
	Validate(lambda0 float64) error
	// String names the policy in flags and CSV files.
	String() string
}

// ConstantDamping keeps λ fixed: the paper's policy. It adds no state and no work to a step.
type ConstantDamping struct{}

var _ DampingPolicy = ConstantDamping{}

func (ConstantDamping) Adaptive() bool                   { return false }
func (ConstantDamping) Damping(lambda, _, _ *Node) *Node { return lambda }
func (ConstantDamping) Next(lambda, _ *Node) *Node       { return lambda }
func (ConstantDamping) Validate(lambda0 float64) error   { return nil }
func (ConstantDamping) String() string                   { return "constant" }

// LMDamping is the Levenberg-Marquardt (trust-region) damping rule on the gain ratio ρ of
// DampingPolicy, with a floor set by the noise of the batch gradient:
//
//	λ_used  = clamp(max(λ_k, NoiseFloor·μ_k·min(ν_k, 1)^FloorExponent), MinDamping, MaxDamping),
//	λ_{k+1} = clamp(Increase·λ_used, MinDamping, MaxDamping)   if ρ_k < LowerRho or ρ_k is NaN,
//	λ_{k+1} = clamp(Decrease·λ_used, MinDamping, MaxDamping)   if ρ_k > UpperRho,
//	λ_{k+1} = λ_used                                            otherwise,
//
// with μ and ν the batch's curvature scale and gradient noise of DampingPolicy. A poor agreement
// between the loss and its quadratic model (small ρ, or a step that increases the loss: ρ < 0)
// shrinks the trust region by raising λ, which pulls d towards −g/λ; a good one lets λ fall
// towards the undamped Gauss-Newton step. Create it with LevenbergMarquardt.
//
// The floor. ρ is measured on the batch the step was solved on, and a Gauss-Newton model of one
// batch has rank at most b (FGN) or b(C−1) (SGN): as λ → 0 the step fits the batch ever more
// exactly, which its own ρ rewards, while the batch gradient's noise, amplified by 1/λ along the
// model's small eigenvalues, is noise for every other batch. Along the gradient the right damping
// is known: with a batch gradient ĝ of expectation g and variance v = E‖ĝ − g‖², a step −t ĝ on a
// quadratic of curvature μ along ĝ minimises the expected loss E[−t gᵀĝ + ½μt²‖ĝ‖²] =
// −t‖g‖² + ½μt²(‖g‖² + v) at t = ‖g‖²/(μ(‖g‖² + v)) = 1/(μ + μν), ν = v/‖g‖²: the damping μν. The
// floor keeps λ at μ where ν ≥ 1 (the damped step along ĝ at least half the model's Newton step),
// so that a batch whose gradient is indistinguishable from noise does not stall training.
// FloorExponent p shapes it below: p = 1 is the derivation's μν; a larger p keeps the floor near
// μ where the gradient is about as much noise as signal and lowers it steeply where it is mostly
// signal, leaving λ to the gain ratio there. The derivation sees one direction, ĝ, and where the
// gradient is mostly signal its damping slowed models that gain from long steps on the model zoo
// (a residual CNN), while p = 4 kept the floor's gain where the noise dominates (word models
// learnt from scratch in small batches; BENCHMARKS.md, "How the floor was chosen").
//
// ν is estimated from the batch's own examples, as if they were a sample of the training set (a
// batch that is the whole training set keeps the floor its examples' spread sets, trading the
// rule's fast final convergence on that set for steps that generalise). WholeVariance estimates
// it from the whole variance v (varianceEstimates: one probe of random signs, one VJP of the
// logits more per step), averaged over steps (NoiseAverage), whose single probe's estimate varies
// from batch to batch by as much as ν itself. Without WholeVariance, ν is the batch's noise along
// ĝ, from the examples' gradients along it, which CG's first product gives (gradientNoise): that
// sees one direction, the examples' own mean, which each example's share pulls towards itself,
// so with many parameters and few examples it falls well below v/‖g‖².
type LMDamping struct {
	LowerRho, UpperRho float64 // 0 < LowerRho ≤ UpperRho
	Increase           float64 // > 1
	Decrease           float64 // in (0, 1)
	// MinDamping ≤ the optimizer's initial Damping ≤ MaxDamping, 0 < MinDamping.
	MinDamping, MaxDamping float64
	// NoiseFloor κ ≥ 0 scales the floor κ·μ·min(ν, 1)^p (0: no floor but MinDamping).
	NoiseFloor float64
	// FloorExponent p > 0 is the floor's exponent of min(ν, 1).
	FloorExponent float64
	// WholeVariance estimates the floor's ν from the batch gradient's whole variance
	// E‖ĝ − g‖² rather than from the examples' gradients along ĝ. CG's StopAtNoise keeps the
	// estimate along ĝ. The signs of its probe are pseudo-random, keyed on GoMLX's global step
	// (randomSigns): runs are reproducible and resume exactly from a checkpoint.
	WholeVariance bool
	// NoiseAverage β ∈ [0, 1) averages WholeVariance's estimates over steps: ν is the ratio of
	// the exponential moving averages, of decay β and bias-corrected as Adam's moments, of the
	// unbiased estimates of v and of ‖g‖² (0: the batch's own estimates). Its state lives beside
	// λ under the optimizer's scope ("noise_variance", "noise_signal", "noise_steps"); a step that
	// is not finite leaves it unchanged.
	NoiseAverage float64
}

var _ DampingPolicy = LMDamping{}

// LevenbergMarquardt returns the Levenberg-Marquardt damping policy with the ρ thresholds and
// factors of somax's trust_region damping (ρ < 0.25 → λ·1.5, ρ > 0.75 → λ·0.5), λ ∈ [1e-12, 1e6],
// and the noise floor μ·min(ν, 1)⁴ with ν from the whole variance averaged at β = 0.9, chosen on
// the model zoo (experiments/zoo, BENCHMARKS.md).
func LevenbergMarquardt() LMDamping {
	return LMDamping{LowerRho: 0.25, UpperRho: 0.75, Increase: 1.5, Decrease: 0.5, MinDamping: 1e-12, MaxDamping: 1e6,
		NoiseFloor: 1, FloorExponent: 4, WholeVariance: true, NoiseAverage: 0.9}
}

func (LMDamping) Adaptive() bool { return true }
func (LMDamping) String() string { return "lm" }

func (p LMDamping) Damping(lambda, mu, nu *Node) *Node {
	if p.NoiseFloor > 0 {
		dtype := lambda.DType()
		nu = Pow(Min(ConvertDType(nu, dtype), OnesLike(lambda)), Scalar(lambda.Graph(), dtype, p.FloorExponent))
		lambda = Max(lambda, MulScalar(Mul(ConvertDType(mu, dtype), nu), p.NoiseFloor))
	}
	return p.clamp(lambda)
}

func (p LMDamping) Next(lambda, rho *Node) *Node {
	dtype := lambda.DType()
	g := lambda.Graph()
	rho = ConvertDType(rho, dtype)
	grow := LogicalNot(GreaterOrEqual(rho, Scalar(g, dtype, p.LowerRho))) // true for NaN
	shrink := GreaterThan(rho, Scalar(g, dtype, p.UpperRho))
	return p.clamp(Where(grow, MulScalar(lambda, p.Increase), Where(shrink, MulScalar(lambda, p.Decrease), lambda)))
}

func (p LMDamping) clamp(lambda *Node) *Node {
	g, dtype := lambda.Graph(), lambda.DType()
	return Clip(lambda, Scalar(g, dtype, p.MinDamping), Scalar(g, dtype, p.MaxDamping))
}

func (p LMDamping) Validate(lambda0 float64) error {
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	switch {
	case !(p.LowerRho > 0 && p.LowerRho <= p.UpperRho) || !finite(p.UpperRho):
		return fmt.Errorf("fgn: Levenberg-Marquardt ρ thresholds must satisfy 0 < lower ≤ upper < ∞, got %g and %g",
			p.LowerRho, p.UpperRho)
	case !(p.Increase > 1) || !finite(p.Increase):
		return fmt.Errorf("fgn: Levenberg-Marquardt increase factor must be finite and > 1, got %g", p.Increase)
	case !(p.Decrease > 0 && p.Decrease < 1):
		return fmt.Errorf("fgn: Levenberg-Marquardt decrease factor must be in (0, 1), got %g", p.Decrease)
	case !(p.MinDamping > 0 && p.MinDamping <= p.MaxDamping) || !finite(p.MaxDamping):
		return fmt.Errorf("fgn: Levenberg-Marquardt λ bounds must satisfy 0 < min ≤ max < ∞, got %g and %g",
			p.MinDamping, p.MaxDamping)
	case !(p.NoiseFloor >= 0) || !finite(p.NoiseFloor):
		return fmt.Errorf("fgn: Levenberg-Marquardt noise floor must be finite and ≥ 0, got %g", p.NoiseFloor)
	case p.NoiseFloor > 0 && !(p.FloorExponent > 0 && finite(p.FloorExponent)):
		return fmt.Errorf("fgn: Levenberg-Marquardt floor exponent must be finite and > 0, got %g", p.FloorExponent)
	case !(p.NoiseAverage >= 0 && p.NoiseAverage < 1):
		return fmt.Errorf("fgn: Levenberg-Marquardt noise average must be in [0, 1), got %g", p.NoiseAverage)
	case !(lambda0 >= p.MinDamping && lambda0 <= p.MaxDamping):
		return fmt.Errorf("fgn: initial damping λ = %g is outside the Levenberg-Marquardt bounds [%g, %g]",
			lambda0, p.MinDamping, p.MaxDamping)
	}
	return nil
}

// StepDamping is the damping telemetry of one optimizer step (scalars in the loss's dtype,
// Accepted boolean).
type StepDamping struct {
	// Used is the damping λ the direction was solved with, Next the state λ of the next step.
	Used, Next *Node
	// Curvature is the batch's curvature scale μ = gᵀH g/‖g‖² and Noise the noise-to-signal ratio
	// ν of its gradient (DampingPolicy); nil when the step did not form them (a constant λ with a
	// warm start).
	Curvature, Noise *Node
	// Predicted and Actual are the decreases m(0) − m(s) and L(w) − L(w + s) of DampingPolicy,
	// Rho their ratio; nil for a policy that is not adaptive.
	Predicted, Actual, Rho *Node
	// Accepted holds when the step was taken: it is finite (Direction.Finite) and, for an
	// adaptive policy, does not increase the batch loss. A step not taken leaves every parameter
	// and warm-start state variable unchanged.
	Accepted *Node
}

// checkTrialLogits panics, naming what to use, when an adaptive policy is paired with a
// linearisation that cannot give the logits at the trial point.
func checkTrialLogits(lin Linearization, policy DampingPolicy, optimizer string) {
	if !policy.Adaptive() {
		return
	}
	_, evaluator := lin.(LogitsEvaluator)
	if !linearInParams(lin) && !evaluator {
		exceptions.Panicf("fgn: %s with %s damping needs the batch loss at the trial point w + αd, which a %T "+
			"cannot evaluate: use Linearize(logits, params), an AffineHead, or a Linearization that is a "+
			"LogitsEvaluator or LinearInParams", optimizer, policy, lin)
	}
}

// trialLogits returns the logits at the updated parameters w + s: z + J_z s for a linearisation
// linear in its parameters (zs = J_z s), else LogitsAt(updated).
func trialLogits(lin Linearization, zs *Node, updated Vec) *Node {
	if linearInParams(lin) {
		return Add(lin.Logits(), zs)
	}
	return lin.(LogitsEvaluator).LogitsAt(updated)
}

// measureStep returns the predicted and actual decreases of the step s (see DampingPolicy) from
// w to updated = w + s, and the trial loss L(w + s). With z_s = J_z s (zs: α z_d for s = α d,
// z_d one logit JVP) and g = (1/b) J_zᵀ(p − y) (eqs. 2.11, 3.8):
//
//	gᵀs      = (1/b) Σ_i (p_i − y_i)ᵀ z_s,i,
//	sᵀH_FGN s = (1/b) Σ_i q_i (∇_z s_iᵀ z_s,i)²                       (eq. 3.8, J s = rowsum(∇_z s ⊙ z_s)),
//	sᵀH_GGN s = (1/b) Σ_i [p_iᵀ z_s,i² − (p_iᵀ z_s,i)²]              (eq. 3.1).
//
// With a regulariser R (reg, nil for none) the loss is L + R: the model adds ∇Rᵀs + ½ sᵀD s (D the
// Hessian of R's L2 terms), the actual decrease R(w) − R(w + s), and the trial loss is L + R.
func measureStep(lin Linearization, labels *Node, dir *Direction, zs *Node, updated Vec,
	fgnCurvature bool, reg *regularisation) (predicted, actual, trialLoss *Node) {
	z := lin.Logits()
	m := marginOf(z, labels)
	probs := probabilitiesOf(z)
	slope := ReduceAllMean(ReduceSum(Mul(Sub(probs, m.OneHot), zs), -1))
	var curvature *Node
	if fgnCurvature {
		js := ReduceSum(Mul(m.GradS, zs), -1)
		curvature = ReduceAllMean(Mul(m.Q, Square(js)))
	} else {
		curvature = ggnCurvature(probs, zs)
	}
	loss := dir.Loss
	trialLoss = ReduceAllMean(gn.NewMargin(trialLogits(lin, zs, updated), labels).Loss)
	predicted = Neg(Add(slope, MulScalar(curvature, 0.5)))
	if reg != nil {
		predicted = Sub(predicted, reg.model(subtract(updated, reg.params)))
		loss, trialLoss = Add(loss, reg.loss), Add(trialLoss, reg.at(updated))
	}
	return predicted, Sub(loss, trialLoss), trialLoss
}

// gainRatio returns actual/predicted where predicted > 0, else NaN.
func gainRatio(predicted, actual *Node) *Node {
	g := predicted.Graph()
	dtype := predicted.DType()
	positive := GreaterThan(predicted, ScalarZero(g, dtype))
	safe := Where(positive, predicted, OnesLike(predicted))
	return Where(positive, Div(actual, safe), Scalar(g, dtype, math.NaN()))
}

// dampingState returns the adaptive policy's λ variable under the optimizer's scope, created with
// the initial damping on first use.
func (o *gnOptimizer) dampingState(scope *model.Scope, dtype dtypes.DType) *model.Variable {
	dir := scope.Store().Scope(path.Join("/", o.c.scopeName))
	v := dir.VariableWithValue("damping", shapes.CastAsDType(o.c.s.Damping, dtype)).SetTrainable(false)
	if v.DType() != dtype || v.Shape().Rank() != 0 {
		exceptions.Panicf("fgn: damping state %q is %s, the step needs a %s scalar", v.Path(), v.Shape(), dtype)
	}
	return v
}

// batchScale is what a step measures of its batch before it solves, to choose its damping (see
// DampingPolicy): the curvature scale μ = gᵀH g/‖g‖² and the noise-to-signal ratio ν of the batch
// gradient along its direction. Both are nil when the step did not form them (a constant λ with a
// warm start).
type batchScale struct{ curvature, noise *Node }

// dampingFn returns the damping λ a step solves with from what it measured of its batch.
type dampingFn func(batchScale) *Node

// damping returns the λ of a direction as a scalar of dtype: fn(scale) when fn is not nil, else
// the constant c.Damping.
func (c Settings) damping(fn dampingFn, scale batchScale, g *Graph, dtype dtypes.DType) *Node {
	if fn != nil {
		return ConvertDType(fn(scale), dtype)
	}
	return Scalar(g, dtype, c.Damping)
}

// curvatureScale returns μ = num/den for num = gᵀH g and den = ‖g‖² (both scaled alike), 0 where
// den is 0 (g = 0) and where the quotient is not finite, so that the damping it sets stays finite.
func curvatureScale(num, den *Node) *Node {
	zero := ZerosLike(den)
	positive := GreaterThan(den, zero)
	mu := Div(num, Where(positive, den, OnesLike(den)))
	return StopGradient(Where(LogicalAnd(positive, IsFinite(mu)), Max(mu, zero), zero))
}

// noiseTolerance returns the tolerance of CGSettings.StopAtNoise: the relative standard deviation
// √(ν/(1 + ν)) = 1/√(1 + 1/ν) of a batch gradient whose noise-to-signal ratio is ν (0 for ν = 0),
// with ν capped at 1 as the damping's floor caps it (LMDamping): at most 1/√2, so that CG takes a
// step on a batch whose gradient is indistinguishable from noise.
func noiseTolerance(nu *Node) *Node {
	return Rsqrt(OneMinus(Neg(Reciprocal(Min(nu, OnesLike(nu))))))
}

// gradientNoise returns the noise-to-signal ratio of the batch gradient along its own direction,
//
//	ν = v / (ā² − v),      v = s²/b,
//
// from c (b), the examples' gradients along that direction up to one common factor: ā and s² are
// their mean and sample variance, ā² estimates the squared norm of the batch gradient plus the
// variance v of its mean, and v/(ā² − v) is the estimated variance over the estimated squared norm
// of the gradient's expectation (noiseRatio), 0 for b = 1, where no variance can be estimated. The
// direction is the batch's own mean, so each example's component holds its own share of it: ν
// estimates the noise along one direction that the batch chose, not the variance E‖ĝ − g‖² of
// LMDamping's floor, and falls below the ratio that variance sets (see LMDamping).
func gradientNoise(c *Node) *Node {
	b := c.Shape().Dim(0)
	g, dtype := c.Graph(), c.DType()
	if b < 2 {
		return ScalarZero(g, dtype)
	}
	mean := ReduceAllMean(c)
	v := DivScalar(ReduceAllSum(Square(Sub(c, mean))), float64(b)*float64(b-1))
	return noiseRatio(v, Sub(Square(mean), v))
}

// noiseRatio returns ν = max(v, 0)/signal from estimates of a gradient's variance v and of the
// squared norm of its expectation (signal): +∞ where signal is not positive (the batch gradient
// is indistinguishable from noise) or either is NaN.
func noiseRatio(v, signal *Node) *Node {
	g, dtype := v.Graph(), v.DType()
	positive := GreaterThan(signal, ZerosLike(signal))
	nu := Where(positive, Div(Max(v, ZerosLike(v)), Where(positive, signal, OnesLike(signal))), Scalar(g, dtype, math.Inf(1)))
	return StopGradient(Where(IsNaN(nu), Scalar(g, dtype, math.Inf(1)), nu))
}

// varianceEstimates returns unbiased estimates of the whole variance v = E‖ĝ − g‖² of the batch
// gradient ĝ (LMDamping.WholeVariance) and of the squared norm ‖g + g_R‖² of the expected gradient
// of the loss with its regulariser's gradient g_R (reg, nil for none), from the batch's examples
// as if they were a sample of the training set. With g_i = p_†,i J_iᵀ example i's gradient of the
// cross-entropy (eq. 2.11; J_i its margin Jacobian row) and ĝ their mean (ceGrad, formed by the
// caller, which the direction reuses),
//
//	S1 = (1/b)‖Σ_i σ_i g_i‖²,   S2 = ‖ĝ‖²,   v̂ = (S1 − S2)/(b − 1),   signal = ‖ĝ + g_R‖² − v̂,
//
// where the signs σ_i = ±1 (signs, b) are random: E_σ S1 = (1/b)Σ_i‖g_i‖², whose expectation is
// ‖g‖² + tr Σ, and E S2 = ‖g‖² + tr Σ/b, so v̂ estimates v = tr Σ/b, and E‖ĝ + g_R‖² = ‖g + g_R‖² + v.
// v̂ may be negative, as an unbiased estimate of a small variance is; noiseRatio takes it at 0.
// For b = 1, where no variance can be estimated, v̂ = 0. Norms are the damping metric's
// (sqrtInvS = S^{-1/2} per tensor, nil for S = I). It costs one VJP, Σ_i σ_i g_i.
func varianceEstimates(lin Linearization, m *gn.Margin, ceGrad Vec, signs *Node, reg *regularisation, sqrtInvS Vec) (v, signal *Node) {
	b := m.S.Shape().Dim(0)
	dtype := m.S.DType()
	total := ceGrad
	if reg != nil {
		total = reg.addGradient(ceGrad)
	}
	total = scaleEach(total, sqrtInvS)
	signal = ConvertDType(gn.VecDot(total, total), dtype)
	if b < 2 {
		return StopGradient(ZerosLike(signal)), StopGradient(signal)
	}
	j := gn.MarginJacobian{Lin: lin, GradS: m.GradS}
	probe := scaleEach(j.VJP(Mul(ConvertDType(signs, dtype), m.PDagger)), sqrtInvS)
	mean := scaleEach(ceGrad, sqrtInvS)
	s1 := DivScalar(ConvertDType(gn.VecDot(probe, probe), dtype), float64(b))
	s2 := ConvertDType(gn.VecDot(mean, mean), dtype)
	v = DivScalar(Sub(s1, s2), float64(b-1))
	return StopGradient(v), StopGradient(Sub(signal, v))
}

// noiseAverage is the state of LMDamping.NoiseAverage: the exponential moving averages of the
// whole variance's estimates (varianceEstimates) and the count of steps they hold, for the bias
// correction, as non-trainable scalars under the optimizer's scope.
type noiseAverage struct {
	vars [3]*model.Variable // "noise_variance", "noise_signal", "noise_steps"
	next [3]*Node           // their values after this step
}

// averageNoise returns ν from this step's estimates v and signal averaged with the previous
// steps' at decay beta (LMDamping.NoiseAverage), m_t = β m_{t−1} + (1 − β) x_t and
// m̂_t = m_t/(1 − β^t) for each, ν = noiseRatio(m̂_v, m̂_signal), and the state to update once the
// step is known to be finite (update).
func (o *gnOptimizer) averageNoise(scope *model.Scope, v, signal *Node, beta float64) (*Node, *noiseAverage) {
	g, dtype := v.Graph(), v.DType()
	dir := scope.Store().Scope(path.Join("/", o.c.scopeName)).WithInitializer(initializer.Zero)
	a := &noiseAverage{}
	for k, name := range []string{"noise_variance", "noise_signal", "noise_steps"} {
		a.vars[k] = dir.VariableWithShape(name, shapes.Make(dtype)).SetTrainable(false)
		if a.vars[k].DType() != dtype || a.vars[k].Shape().Rank() != 0 {
			exceptions.Panicf("fgn: noise average state %q is %s, the step needs a %s scalar", a.vars[k].Path(),
				a.vars[k].Shape(), dtype)
		}
	}
	a.next[2] = AddScalar(a.vars[2].NodeValue(g), 1)
	correction := OneMinus(Pow(Scalar(g, dtype, beta), a.next[2]))
	var averaged [2]*Node
	for k, x := range []*Node{v, signal} {
		a.next[k] = Add(MulScalar(a.vars[k].NodeValue(g), beta), MulScalar(x, 1-beta))
		averaged[k] = Div(a.next[k], correction)
	}
	return noiseRatio(averaged[0], averaged[1]), a
}

// update sets the averages to this step's values where finite holds (the step's direction is
// finite) and the averages are finite, and keeps them otherwise.
func (a *noiseAverage) update(finite *Node) {
	finite = LogicalAnd(finite, LogicalAnd(IsFinite(a.next[0]), IsFinite(a.next[1])))
	for k, v := range a.vars {
		v.SetNodeValue(keepUnless(finite, a.next[k], v.NodeValue(finite.Graph())))
	}
}

// randomSigns returns b pseudo-random signs ±1 of dtype for the probe of varianceEstimates,
// drawn with the graph's Philox generator from a state keyed on GoMLX's global step (step, int64):
// each step gets its own signs, a run is reproducible, a run resumed from a checkpoint draws
// what the uninterrupted run drew, and the store's random number generator, dropout's, is left
// alone.
func randomSigns(step *Node, dtype dtypes.DType, b int) *Node {
	g := step.Graph()
	key := Const(g, []uint64{0x9e3779b97f4a7c15, 0})
	state := Concatenate([]*Node{key, Reshape(ConvertDType(step, dtypes.Uint64), 1)}, 0)
	_, u := RandomUniform(state, shapes.Make(dtype, b))
	return Where(LessThan(u, Scalar(g, dtype, 0.5)), Scalar(g, dtype, -1), Scalar(g, dtype, 1))
}

// stepDamping returns the damping telemetry of the step s from w = lin.Params() to updated = w + s
// on the loss regularised by reg (nil for none), zs = J_z s. For an adaptive policy it measures ρ
// and sets the next λ, kept (the state, lambdaState) when the step is not finite. The model's
// curvature is FGN's for FGN, the GGN's for SGN and for FGN at the GGN's step length
// (Settings.GGNStepLength) or with momentum (Settings.Momentum), whose steps are chosen on, or
// average, GGN-model steps.
func (o *gnOptimizer) stepDamping(lin Linearization, labels *Node, dir *Direction, zs *Node, updated Vec,
	lambdaState *Node, reg *regularisation) *StepDamping {
	if !o.c.damping.Adaptive() {
		return &StepDamping{Used: dir.lambda, Next: dir.lambda, Curvature: dir.scale.curvature, Noise: dir.scale.noise,
			Accepted: dir.Finite}
	}
	predicted, actual, trialLoss := measureStep(lin, labels, dir, zs, updated, o.c.fgn && !o.c.s.GGNStepLength && o.c.s.Momentum == 0, reg)
	rho := gainRatio(predicted, actual)
	decreased := GreaterOrEqual(actual, ZerosLike(actual))
	state := ConvertDType(lambdaState, dir.lambda.DType())
	return &StepDamping{
		Used:      dir.lambda,
		Next:      keepUnless(dir.Finite, o.c.damping.Next(dir.lambda, rho), state),
		Curvature: dir.scale.curvature,
		Noise:     dir.scale.noise,
		Predicted: predicted,
		Actual:    actual,
		Rho:       rho,
		Accepted:  LogicalAnd(dir.Finite, LogicalAnd(IsFinite(trialLoss), decreased)),
	}
}
