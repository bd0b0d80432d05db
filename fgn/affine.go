package fgn

import (
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/support/exceptions"
)

// AffineHead is the linearisation of the affine head z = h W + 1 bᵀ (h: b×d features, W: d×C,
// bias: C), whose Jacobian products have closed forms:
//
//	J_z (V, v) = h V + 1 vᵀ,       J_zᵀ m = (hᵀ m, 1ᵀ m).
//
// It is exact (the logits are linear in (W, b): LinearInParams), costs one b×d×C product per call,
// and is safe to use inside in-graph loops (WhileSafe). Params is (W, bias). It is a
// GramLinearization: MarginGram forms the margin Gram in closed form (AffineMarginGram).
type AffineHead struct {
	// H holds the features (b×d); W (d×C) and Bias (C) are the parameters.
	H, W, Bias *Node
	// HT is hᵀ (d×b), the operand layout of VJP's product hᵀ m. NewAffineHead transposes h once
	// per graph, so the VJPs of a step (and of every CG iteration) share one transpose; with
	// frozen features and static batches callers may replace it by hᵀ laid out once per batch.
	HT *Node
	// FeatureGram optionally holds h hᵀ + 1 (b×b, see FeatureGram) for MarginGram. With frozen
	// features and static batches it is the same in every epoch and can be computed once per
	// batch; nil means MarginGram computes it.
	FeatureGram *Node
	logits      *Node
}

var _ GramLinearization = (*AffineHead)(nil)

// NewAffineHead builds the affine head z = h W + 1 biasᵀ and its linearisation.
func NewAffineHead(h, w, bias *Node) *AffineHead {
	if h.Rank() != 2 || w.Rank() != 2 || bias.Rank() != 1 || h.Shape().Dim(1) != w.Shape().Dim(0) ||
		w.Shape().Dim(1) != bias.Shape().Dim(0) {
		exceptions.Panicf("fgn.NewAffineHead: need h (b×d), W (d×C), bias (C); got %s, %s, %s",
			h.Shape(), w.Shape(), bias.Shape())
	}
	return &AffineHead{H: h, W: w, Bias: bias, HT: Transpose(h, 0, 1), logits: Add(MatMul(h, w), ExpandAxes(bias, 0))}
}

func (a *AffineHead) Logits() *Node { return a.logits }
func (a *AffineHead) Params() Vec   { return Vec{a.W, a.Bias} }

// WhileSafe reports true: the products are two matrix products of nodes built outside the loop.
func (a *AffineHead) WhileSafe() bool { return true }

// LinearInParams reports true: the logits are affine in (W, bias).
func (a *AffineHead) LinearInParams() bool { return true }

func (a *AffineHead) VJP(m *Node) Vec {
	return Vec{MatMul(a.HT, m), ReduceSum(m, 0)}
}

func (a *AffineHead) JVP(v Vec) *Node {
	return Add(MatMul(a.H, v[0]), ExpandAxes(v[1], 0))
}

// MarginGram returns AffineMarginGram(h hᵀ + 1, gradS), with the feature Gram a.FeatureGram when
// set, else computed from a.H.
func (a *AffineHead) MarginGram(gradS *Node) *Node {
	featureGram := a.FeatureGram
	if featureGram == nil {
		featureGram = FeatureGram(a.H)
	}
	return AffineMarginGram(featureGram, gradS)
}

// FeatureGram returns h hᵀ + 1 (b×b) for features h (b×d): the Gram matrix of the affine-head
// inputs (h_i, 1). With frozen features and static batches it is constant across epochs, so
// callers may compute it once per batch and set it as AffineHead.FeatureGram.
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
