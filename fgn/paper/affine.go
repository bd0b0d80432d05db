package paper

import (
	. "github.com/gomlx/gomlx/core/graph"

	"github.com/fgn-paper/fgn/fgn/internal/gn"
)

// AffineMarginGram returns the unwhitened margin Gram J Jᵀ of the affine head in closed form
// (appendix F.2),
//
//	G_ij = (h_i·h_j + 1)(a_i·a_j),
//
// with a_i = ∇_z s_i the logit-space margin gradients (gradS, b×C) and featureGram = h hᵀ + 1
// (FeatureGram): the Gram fgn.AffineHead.MarginGram forms.
func AffineMarginGram(featureGram, gradS *Node) *Node {
	return gn.AffineGram(featureGram, gradS)
}

// FeatureGram returns h hᵀ + 1 (b×b) for features h (b×d): the Gram matrix of the affine-head
// inputs (h_i, 1). With frozen features and static batches it is constant across epochs, so
// callers may compute it once per batch and set it as fgn.AffineHead.FeatureGram.
func FeatureGram(h *Node) *Node {
	return gn.FeatureGram(h)
}

// AffineRowGram returns the whitened row Gram K = Q^{1/2} J Jᵀ Q^{1/2} of the affine head,
// K_ij = √(q_i q_j)(h_i·h_j + 1)(a_i·a_j) (appendix F.2), given the whitening weights sqrtQ (b).
// It equals the Gram of FGNRowOperator with bλ = 0.
func AffineRowGram(featureGram, gradS, sqrtQ *Node) *Node {
	return Mul(AffineMarginGram(featureGram, gradS), Mul(ExpandAxes(sqrtQ, -1), ExpandAxes(sqrtQ, 0)))
}
