package gn

import (
	. "github.com/gomlx/gomlx/core/graph"
)

// Products are the logits and Jacobian products of a linearisation of the logit map z(w)
// (fgn.Linearization provides them): Logits returns z (b×C), VJP returns J_zᵀ m for a cotangent m
// (b×C), shaped like the parameters, and JVP returns J_z v (b×C) for a tangent v shaped like the
// parameters.
type Products interface {
	Logits() *Node
	VJP(m *Node) []*Node
	JVP(v []*Node) *Node
}

// MarginJacobian is the Jacobian J (b×d) of the batched margin map w ↦ s(w), whose row i is
// J_i = ∇_z s_iᵀ J_z,i (eq. 2.9), given as products built from a logit linearisation:
//
//	Jᵀ a = J_zᵀ (a ⊙ ∇_z s),      J β = rowsum(∇_z s ⊙ J_z β).
//
// ∇_z s is computed once, so both products reuse one linearisation. These are the products FGN's
// matrix-free row operator and its back-projection make.
type MarginJacobian struct {
	Lin   Products
	GradS *Node // ∇_z s, b×C (Margin.GradS)
}

// VJP returns Jᵀ a for a ∈ R^b.
func (j MarginJacobian) VJP(a *Node) []*Node {
	return j.Lin.VJP(Mul(ExpandAxes(a, -1), j.GradS))
}

// JVP returns J β ∈ R^b for β in parameter space.
func (j MarginJacobian) JVP(beta []*Node) *Node {
	return ReduceSum(Mul(j.Lin.JVP(beta), j.GradS), -1)
}

// GGN returns the full softmax GGN-vector product of SGN,
//
//	v ↦ (1/b) J_zᵀ (diag(p) − p pᵀ) J_z v        (eq. 3.1, batched),
//
// from zv = J_z v, where the softmax covariance is applied per example as p⊙m − p (pᵀm). probs
// are the softmax probabilities (b×C).
func GGN(lin Products, probs, zv *Node) []*Node {
	pm := Mul(probs, zv)
	cov := MulScalar(Sub(pm, Mul(probs, ExpandAxes(ReduceSum(pm, -1), -1))), 1/float64(probs.Shape().Dim(0)))
	return lin.VJP(cov)
}
