package paper

import (
	. "github.com/gomlx/gomlx/core/graph"

	"github.com/fgn-paper/fgn/fgn"
	"github.com/fgn-paper/fgn/fgn/internal/gn"
)

// Margin holds the per-example true-vs-rest margin quantities of section 2 for a batch of logits
// z (b×C) and integer labels y (b), as graph nodes. With ★ the true class of an example and † the
// aggregate of its competitors:
//
//	z_† = log Σ_{j≠★} exp(z_j)                       (eq. 2.1)
//	p_† = Σ_{j≠★} p_j = 1 - p_★                       (eq. 2.2)
//	s   = z_† - z_★                                   (eq. 2.3)
//	ℓ   = -log p_★ = φ(s) = log(1+e^s)                (eq. 2.4)
//	φ'(s) = p_†,  φ''(s) = p_★ p_† = q                (eq. 2.5)
//	ρ_j = p_j / p_†  for j≠★                          (eq. 2.6)
//	∇_z s = (-1 at ★, ρ elsewhere)                    (eq. 2.7)
//	ξ   = 1 - ‖ρ‖²                                    (eq. 3.6)
//
// Its fields are S (s, b), PStar and PDagger (p_★ and p_†, b), Q (q = p_★p_†, b, in [0, 1/4]),
// Rho (ρ, b×C with 0 at the true class), Xi (ξ, b), Loss (φ(s), b, NaN for a row with a
// non-finite logit), GradS (∇_z s, b×C; the margin Jacobian row of example i is
// J_i = GradS_iᵀ J_z,i, eq. 2.9) and OneHot (the labels one-hot, b×C, in the logits' dtype).
// Margin.Gradient(lin) is the batch gradient (1/b) Jᵀ p_† (eqs. 2.11, 3.8). Every quantity is
// finite for finite logits in float32 and float64: they are package fgn's own, the ones its
// solver and its Loss compute.
type Margin = gn.Margin

// NewMargin computes the margin quantities for logits (b×C, float) and labels (b, integer). It
// panics on shape mismatches. Every label must lie in [0, C): a graph cannot check values, and
// an out-of-range label silently gives a wrong margin.
func NewMargin(logits, labels *Node) *Margin {
	return gn.NewMargin(logits, labels)
}

// LossGradient returns the mean cross-entropy of a batch and its gradient
//
//	g = (1/b) Jᵀ r = (1/b) J_zᵀ (p - y),       r_i = p_†^{(i)}      (eqs. 2.11, 3.8),
//
// computed with one VJP of the logit map (Margin.Gradient).
func LossGradient(lin fgn.Linearization, labels *Node) (loss *Node, grad fgn.Vec) {
	m := gn.NewMargin(lin.Logits(), labels)
	return ReduceAllMean(m.Loss), m.Gradient(lin)
}
