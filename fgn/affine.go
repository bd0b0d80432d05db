package fgn

import (
	. "github.com/gomlx/gomlx/core/graph"
)

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
