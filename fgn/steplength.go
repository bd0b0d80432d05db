package fgn

import (
	. "github.com/gomlx/gomlx/core/graph"
)

// ggnStepLength returns τ, the length of FGN's step along its direction d at which the damped
// multiclass Gauss-Newton model of the loss is least,
//
//	τ = −gᵀd / (dᵀH_GGN d + λ‖d‖²)   clipped to [0, 1],
//
// from z_d = J_z d (the logits' JVP along d, b×C), with g = (1/b) J_zᵀ(p − y) (eq. 2.11) and
// dᵀH_GGN d = (1/b) Σ_i [p_iᵀ z_d,i² − (p_iᵀ z_d,i)²] (eq. 3.1), and λ the damping d was solved
// with (λ dᵀS d in place of λ‖d‖² with the damping metric S of Settings.ScaledDamping). On a
// regularised loss (reg not nil) g and H include the regulariser's gradient and L2 Hessian D.
//
// Why. FGN solves (H_FGN + λI) d = −g with H_FGN ⪯ H_GGN (Proposition 3.2, item 1): along d the
// FGN model is flatter than the GGN model by dᵀ(H_GGN − H_FGN)d, the within-competitor covariance
// that FGN drops (eq. 3.4), and its step overshoots the GGN model's minimum along d. For an exact
// d, −gᵀd = dᵀ(H_FGN + λI)d, so
//
//	τ = dᵀ(H_FGN + λI)d / dᵀ(H_GGN + λI)d ∈ (0, 1],
//
// 1 where the dropped term vanishes along d (C = 2, one-hot competitor distributions) or λ
// dominates it. FGN keeps its direction, which its b-dimensional solve makes cheap, and takes the
// full GGN's curvature along that one direction, which costs one JVP of the logits (the one an
// adaptive damping policy makes anyway to measure its step). SGN's CG direction from zero already
// minimises its own damped model along itself (τ = 1 for every CG iterate).
//
// τ is 1 where the quotient is not defined (gᵀd ≥ 0, a zero or non-finite denominator), leaving
// such a step to the damping policy.
func ggnStepLength(lin Linearization, labels, zd *Node, dir *Direction, reg *regularisation) *Node {
	z := lin.Logits()
	dtype := z.DType()
	probs := probabilitiesOf(z)
	m := marginOf(z, labels)
	slope := ReduceAllMean(ReduceSum(Mul(Sub(probs, m.OneHot), zd), -1))
	curvature := ggnCurvature(probs, zd)
	lambda := ConvertDType(dir.lambda, dtype)
	var norm2 *Node
	for k, dk := range dir.D {
		var t *Node
		switch {
		case dir.metric == nil:
			t = ReduceAllSum(Square(dk))
		case dir.metric[k].Rank() == 0: // λ dᵀS d with the damping metric S (Settings.ScaledDamping)
			t = Mul(ReduceAllSum(Square(dk)), dir.metric[k])
		default: // S per entry (Settings.ScaledDampingPerEntry)
			t = ReduceAllSum(Mul(Square(dk), dir.metric[k]))
		}
		t = ConvertDType(t, dtype)
		if norm2 == nil {
			norm2 = t
		} else {
			norm2 = Add(norm2, t)
		}
	}
	curvature = Add(curvature, Mul(lambda, norm2))
	if reg != nil {
		slope = Add(slope, ConvertDType(reg.slope(dir.D), dtype))
		curvature = Add(curvature, ConvertDType(reg.curvature(dir.D), dtype))
	}
	zero, one := ZerosLike(slope), OnesLike(slope)
	tau := Div(Neg(slope), Where(GreaterThan(curvature, zero), curvature, one))
	defined := LogicalAnd(LogicalAnd(LessThan(slope, zero), GreaterThan(curvature, zero)), IsFinite(tau))
	return StopGradient(Where(defined, Min(tau, one), one))
}

// ggnCurvature returns sᵀH_GGN s = (1/b) Σ_i [p_iᵀ z_s,i² − (p_iᵀ z_s,i)²] (eq. 3.1) from the
// softmax probabilities p (b×C) and z_s = J_z s.
func ggnCurvature(probs, zs *Node) *Node {
	pz := ReduceSum(Mul(probs, zs), -1)
	return ReduceAllMean(Sub(ReduceSum(Mul(probs, Square(zs)), -1), Square(pz)))
}
