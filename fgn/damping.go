package fgn

import (
	"fmt"
	"math"
	"path"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/support/exceptions"
)

// DampingPolicy chooses the damping λ of each step of FGN and SGN, which solve
// (H + λI) d = −g and step w ← w + s, s = α d.
//
// ConstantDamping is the paper's (sec. 5: λ fixed, every finite step taken). An adaptive policy
// (Adaptive() true, e.g. LevenbergMarquardt) makes the optimizer keep λ in a state variable
// (initialised to the optimizer's Damping), measure each step's gain ratio
//
//	ρ = actual / predicted,
//	actual    = L(w) − L(w + s),
//	predicted = m(0) − m(s) = −(gᵀs + ½ sᵀH s),
//
// on the step's own batch (L the mean cross-entropy of eq. 2.4, m its Gauss-Newton model with
// the method's undamped curvature: H_FGN = (1/b) JᵀQJ of eq. 3.8 for FGN, H_GGN of eq. 3.1 for
// SGN), take the step only if it does not increase the batch loss, and set λ ← Next(λ, ρ). ρ is
// NaN when the model predicts no decrease (predicted ≤ 0: g = 0, or α so large that the model's
// curvature term outweighs its slope).
type DampingPolicy interface {
	// Adaptive reports whether λ changes from step to step.
	Adaptive() bool
	// Next returns the damping of the next step (a scalar of λ's dtype) from this step's λ and
	// gain ratio ρ (scalars, ρ possibly NaN). The optimizer calls it for adaptive policies only,
	// and keeps λ when the step is not finite.
	Next(lambda, rho *Node) *Node
	// Validate reports the first invalid setting, given the initial damping λ₀.
	Validate(lambda0 float64) error
	// String names the policy in flags and CSV files.
	String() string
}

// ConstantDamping keeps λ fixed: the paper's policy and the optimizers' default. It adds no state
// and no work to a step.
type ConstantDamping struct{}

var _ DampingPolicy = ConstantDamping{}

func (ConstantDamping) Adaptive() bool                 { return false }
func (ConstantDamping) Next(lambda, _ *Node) *Node     { return lambda }
func (ConstantDamping) Validate(lambda0 float64) error { return nil }
func (ConstantDamping) String() string                 { return "constant" }

// LMDamping is the Levenberg-Marquardt (trust-region) damping rule on the gain ratio ρ of
// DampingPolicy:
//
//	λ_{k+1} = clamp(Increase·λ_k, MinDamping, MaxDamping)   if ρ_k < LowerRho or ρ_k is NaN,
//	λ_{k+1} = clamp(Decrease·λ_k, MinDamping, MaxDamping)   if ρ_k > UpperRho,
//	λ_{k+1} = λ_k                                            otherwise.
//
// A poor agreement between the loss and its quadratic model (small ρ, or a step that increases
// the loss: ρ < 0) shrinks the trust region by raising λ, which pulls d towards −g/λ; a good one
// lets λ fall towards the undamped Gauss-Newton step. Create it with LevenbergMarquardt.
type LMDamping struct {
	LowerRho, UpperRho float64 // 0 < LowerRho ≤ UpperRho
	Increase           float64 // > 1
	Decrease           float64 // in (0, 1)
	// MinDamping ≤ the optimizer's initial Damping ≤ MaxDamping, 0 < MinDamping.
	MinDamping, MaxDamping float64
}

var _ DampingPolicy = LMDamping{}

// LevenbergMarquardt returns the Levenberg-Marquardt damping policy with the defaults of somax's
// trust_region damping: ρ < 0.25 → λ·1.5, ρ > 0.75 → λ·0.5, λ ∈ [1e-12, 1e6].
func LevenbergMarquardt() LMDamping {
	return LMDamping{LowerRho: 0.25, UpperRho: 0.75, Increase: 1.5, Decrease: 0.5, MinDamping: 1e-12, MaxDamping: 1e6}
}

func (LMDamping) Adaptive() bool { return true }
func (LMDamping) String() string { return "lm" }

func (p LMDamping) Next(lambda, rho *Node) *Node {
	dtype := lambda.DType()
	g := lambda.Graph()
	rho = ConvertDType(rho, dtype)
	grow := LogicalNot(GreaterOrEqual(rho, Scalar(g, dtype, p.LowerRho))) // true for NaN
	shrink := GreaterThan(rho, Scalar(g, dtype, p.UpperRho))
	next := Where(grow, MulScalar(lambda, p.Increase), Where(shrink, MulScalar(lambda, p.Decrease), lambda))
	return Clip(next, Scalar(g, dtype, p.MinDamping), Scalar(g, dtype, p.MaxDamping))
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
	case !(lambda0 >= p.MinDamping && lambda0 <= p.MaxDamping):
		return fmt.Errorf("fgn: initial damping λ = %g is outside the Levenberg-Marquardt bounds [%g, %g]",
			lambda0, p.MinDamping, p.MaxDamping)
	}
	return nil
}

// StepDamping is the damping telemetry of one optimizer step (scalars in the loss's dtype,
// Accepted boolean).
type StepDamping struct {
	// Used is the damping λ the direction was solved with, Next the λ of the next step.
	Used, Next *Node
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

// measureStep returns the predicted and actual decreases of the step s = α d (see
// DampingPolicy) and the trial loss L(w + s). With z_s = J_z s (one logit JVP) and
// g = (1/b) J_zᵀ(p − y) (eqs. 2.11, 3.8):
//
//	gᵀs      = (1/b) Σ_i (p_i − y_i)ᵀ z_s,i,
//	sᵀH_FGN s = (1/b) Σ_i q_i (∇_z s_iᵀ z_s,i)²                       (eq. 3.8, J s = rowsum(∇_z s ⊙ z_s)),
//	sᵀH_GGN s = (1/b) Σ_i [p_iᵀ z_s,i² − (p_iᵀ z_s,i)²]              (eq. 3.1).
//
// With a regulariser R (reg, nil for none) the loss is L + R: the model adds ∇Rᵀs + ½ sᵀD s (D the
// Hessian of R's L2 terms), the actual decrease R(w) − R(w + s), and the trial loss is L + R.
func measureStep(lin Linearization, labels *Node, dir *Direction, alpha *Node, updated Vec,
	fgnCurvature bool, reg *regularisation) (predicted, actual, trialLoss *Node) {
	z := lin.Logits()
	m := NewMargin(z, labels)
	zs := Mul(ConvertDType(alpha, z.DType()), lin.JVP(dir.D)) // J_z s
	probs := Softmax(z, -1)
	slope := ReduceAllMean(ReduceSum(Mul(Sub(probs, m.OneHot), zs), -1))
	var curvature *Node
	if fgnCurvature {
		js := ReduceSum(Mul(m.GradS, zs), -1)
		curvature = ReduceAllMean(Mul(m.Q, Square(js)))
	} else {
		pz := ReduceSum(Mul(probs, zs), -1)
		curvature = ReduceAllMean(Sub(ReduceSum(Mul(probs, Square(zs)), -1), Square(pz)))
	}
	loss := dir.Loss
	trialLoss = ReduceAllMean(NewMargin(trialLogits(lin, zs, updated), labels).Loss)
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

// scaledLambda returns k·λ as a scalar of dtype: λ is lambda, the adaptive policy's state, when
// not nil, else the constant c.Damping, folded in float64 so that k·λ is rounded once.
func (c Settings) scaledLambda(lambda *Node, g *Graph, dtype dtypes.DType, k float64) *Node {
	if lambda != nil {
		return MulScalar(ConvertDType(lambda, dtype), k)
	}
	return Scalar(g, dtype, k*c.Damping)
}

// stepDamping returns the damping telemetry of the step from w = lin.Params() to updated = w + αd.
// lambdaState is the adaptive policy's λ (nil for a constant λ). For an adaptive policy it
// measures ρ and sets the next λ, kept when the step is not finite.
func (o *gnOptimizer) stepDamping(lin Linearization, labels *Node, dir *Direction, alpha *Node, updated Vec,
	lambdaState *Node, reg *regularisation) *StepDamping {
	dtype := dir.Loss.DType()
	lambda := o.c.s.scaledLambda(lambdaState, dir.Loss.Graph(), dtype, 1)
	if !o.c.damping.Adaptive() {
		return &StepDamping{Used: lambda, Next: lambda, Accepted: dir.Finite}
	}
	predicted, actual, trialLoss := measureStep(lin, labels, dir, alpha, updated, o.c.fgn, reg)
	rho := gainRatio(predicted, actual)
	decreased := GreaterOrEqual(actual, ZerosLike(actual))
	return &StepDamping{
		Used:      lambda,
		Next:      keepUnless(dir.Finite, o.c.damping.Next(lambda, rho), lambda),
		Predicted: predicted,
		Actual:    actual,
		Rho:       rho,
		Accepted:  LogicalAnd(dir.Finite, LogicalAnd(IsFinite(trialLoss), decreased)),
	}
}
