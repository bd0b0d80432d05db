package fgn

import (
	. "github.com/gomlx/gomlx/core/graph"
)

// MarginJacobian is the Jacobian J (b×d) of the batched margin map w ↦ s(w), whose row i is
// J_i = ∇_z s_iᵀ J_z,i (eq. 2.9), given as products built from a logit Linearization:
//
//	Jᵀ a = J_zᵀ (a ⊙ ∇_z s),      J β = rowsum(∇_z s ⊙ J_z β).
//
// ∇_z s is computed once, so both products reuse one linearisation.
type MarginJacobian struct {
	Lin   Linearization
	GradS *Node // ∇_z s, b×C (Margin.GradS)
}

// VJP returns Jᵀ a for a ∈ R^b.
func (j MarginJacobian) VJP(a *Node) Vec {
	return j.Lin.VJP(Mul(ExpandAxes(a, -1), j.GradS))
}

// JVP returns J β ∈ R^b for β in parameter space.
func (j MarginJacobian) JVP(beta Vec) *Node {
	return sumLastAxis(Mul(j.Lin.JVP(beta), j.GradS))
}

// FGNRowOperator returns the whitened row-space operator of eq. (4.8),
//
//	B v = Q^{1/2} J Jᵀ Q^{1/2} v + bλ v,
//
// applied matrix-free with one VJP and one JVP of the margin map. sqrtQ holds the whitening
// weights (Whitening.SqrtQ), bLambda the scalar bλ.
func FGNRowOperator(j MarginJacobian, sqrtQ, bLambda *Node) func(v *Node) *Node {
	return func(v *Node) *Node {
		return Add(Mul(sqrtQ, j.JVP(j.VJP(Mul(sqrtQ, v)))), Mul(bLambda, v))
	}
}

// FeatureGram returns h hᵀ + 1 (b×b) for features h (b×d): the Gram matrix of the affine-head
// inputs (h_i, 1). With frozen features and static batches it is constant across epochs, so
// callers may compute it once per batch and pass it to AffineRowGram.
func FeatureGram(h *Node) *Node {
	return AddScalar(Einsum("id,jd->ij", h, h), 1)
}

// AffineMarginGram returns the unwhitened margin Gram J Jᵀ of the affine head in closed form
// (appendix F.2), G_ij = (h_i·h_j + 1)(a_i·a_j), with a_i = ∇_z s_i the logit-space margin
// gradients (gradS, b×C) and featureGram = h hᵀ + 1. It costs one b×b×C product, where the
// generic path pays two b×d×C products per operator application.
func AffineMarginGram(featureGram, gradS *Node) *Node {
	return Mul(featureGram, Einsum("ic,jc->ij", gradS, gradS))
}

// AffineRowGram returns the whitened row Gram K = Q^{1/2} J Jᵀ Q^{1/2} of the affine head,
// K_ij = √(q_i q_j)(h_i·h_j + 1)(a_i·a_j) (appendix F.2), given the whitening weights sqrtQ.
// It equals the Gram of the generic FGNRowOperator exactly.
func AffineRowGram(featureGram, gradS, sqrtQ *Node) *Node {
	return whitenGram(AffineMarginGram(featureGram, gradS), sqrtQ)
}

func whitenGram(gram, sqrtQ *Node) *Node {
	return Mul(gram, Mul(ExpandAxes(sqrtQ, -1), ExpandAxes(sqrtQ, 0)))
}

// FGNOperator returns the damped FGN curvature-vector product in parameter space,
//
//	v ↦ (H_FGN + λI) v = (1/b) Jᵀ Q J v + λ v,      Q = diag(q),  q_i = p_★^{(i)} p_†^{(i)}      (eq. 3.8),
//
// of the b examples whose logits lin linearises and whose labels are labels, with one JVP and one
// VJP of the margin map per application. That batch need not be the one the gradient comes from:
// the simplified stochastic method of appendix D.3 draws the curvature batch independently.
// lambda is the scalar λ. FGNDirection solves the same damped system in row space instead.
func FGNOperator(lin Linearization, labels, lambda *Node) func(v Vec) Vec {
	m := NewMargin(lin.Logits(), labels)
	j := MarginJacobian{Lin: lin, GradS: m.GradS}
	qOverB := MulScalar(m.Q, 1/float64(m.S.Shape().Dim(0)))
	return func(v Vec) Vec {
		return vecAxpy(j.VJP(Mul(qOverB, j.JVP(v))), lambda, v)
	}
}

// GGNOperator returns the damped full softmax GGN-vector product used by SGN,
//
//	v ↦ (1/b) J_zᵀ (diag(p) - p pᵀ) J_z v + λ v        (eq. 3.1, batched),
//
// where the softmax covariance is applied per example as p⊙m - p (pᵀm), m = J_z v.
// probs are the softmax probabilities (b×C).
func GGNOperator(lin Linearization, probs, lambda *Node) func(v Vec) Vec {
	invB := 1.0 / float64(probs.Shape().Dim(0))
	return func(v Vec) Vec {
		m := lin.JVP(v)
		pm := Mul(probs, m)
		cov := MulScalar(Sub(pm, Mul(probs, ExpandAxes(sumLastAxis(pm), -1))), invB)
		return vecAxpy(lin.VJP(cov), lambda, v)
	}
}
