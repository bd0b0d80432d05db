package fgn

import (
	. "github.com/gomlx/gomlx/core/graph"
)

// marginJacobian is the Jacobian J (b×d) of the batched margin map w ↦ s(w), whose row i is
// J_i = ∇_z s_iᵀ J_z,i (eq. 2.9), given as products built from a logit Linearization:
//
//	Jᵀ a = J_zᵀ (a ⊙ ∇_z s),      J β = rowsum(∇_z s ⊙ J_z β).
//
// ∇_z s is computed once, so both products reuse one linearisation.
type marginJacobian struct {
	lin   Linearization
	gradS *Node // ∇_z s, b×C (Margin.GradS)
}

// vjp returns Jᵀ a for a ∈ R^b.
func (j marginJacobian) vjp(a *Node) Vec {
	return j.lin.VJP(Mul(ExpandAxes(a, -1), j.gradS))
}

// jvp returns J β ∈ R^b for β in parameter space.
func (j marginJacobian) jvp(beta Vec) *Node {
	return ReduceSum(Mul(j.lin.JVP(beta), j.gradS), -1)
}
