package gn

import (
	. "github.com/gomlx/gomlx/core/graph"
)

// FeatureGram returns h hᵀ + 1 (b×b) for features h (b×d): the Gram matrix of the affine-head
// inputs (h_i, 1) (appendix F.2).
func FeatureGram(h *Node) *Node {
	return AddScalar(Einsum("id,jd->ij", h, h), 1)
}

// AffineGram returns the unwhitened margin Gram J Jᵀ of the affine head z = h W + 1 bᵀ in closed
// form (appendix F.2),
//
//	G_ij = (h_i·h_j + 1)(a_i·a_j),
//
// from featureGram = h hᵀ + 1 (FeatureGram) and the logit-space margin gradients a_i = ∇_z s_i
// (gradS, b×C).
func AffineGram(featureGram, gradS *Node) *Node {
	return Mul(featureGram, Einsum("ic,jc->ij", gradS, gradS))
}
