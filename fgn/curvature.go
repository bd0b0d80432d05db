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
	return ReduceSum(Mul(j.Lin.JVP(beta), j.GradS), -1)
}

// FGNRowOperator returns the whitened row-space operator of eq. (4.8),
//
//	B v = Q^{1/2} J Jᵀ Q^{1/2} v + bλ v,
//
// applied matrix-free with one VJP and one JVP of the margin map. sqrtQ holds the whitening
// weights (Whitening.SqrtQ), bLambda the scalar bλ.
func FGNRowOperator(j MarginJacobian, sqrtQ, bLambda *Node) func(v *Node) *Node {
	return func(v *Node) *Node {
		return Add(Mul(sqrtQ, matrixFreeGram{j}.times(Mul(sqrtQ, v))), Mul(bLambda, v))
	}
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
