package fgn

import (
	"github.com/gomlx/compute"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/support/exceptions"
)

// AffineHead is the linearisation of the affine head z = h W + 1 bᵀ (h: b×d features, W: d×C,
// bias: C), whose Jacobian products have closed forms:
//
//	J_z (V, v) = h V + 1 vᵀ,       J_zᵀ m = (hᵀ m, 1ᵀ m).
//
// It is exact (the logits are linear in (W, b): LinearInParams), costs one b×d×C product per
// call, and is safe to use inside in-graph loops (WhileSafe). Params is (W, bias), or (W) for a
// head without bias (z = h W, J_zᵀ m = hᵀ m). W may also be laid out C×d, as GoMLX's nn.Dense
// takes it with compute.DenseLayoutOutputsInput (NewDenseHead): then z = h Wᵀ and the W products
// are transposed. It is a GramLinearization: MarginGram forms the margin Gram in closed form
// (appendix F.2).
//
// The optimizers build it themselves, from the model's own logits, when they recognise the
// pattern in a Trainer model (see Optimizer); a model records one with RecordLinearization only
// to pass its own feature layout (HT, FeatureGram).
type AffineHead struct {
	// H holds the features (b×d); W (d×C, or C×d, see Layout) and Bias (C, or nil) are the
	// parameters.
	H, W, Bias *Node
	// Layout is W's layout: compute.DenseLayoutInputOutputs (d×C, NewAffineHead) or
	// compute.DenseLayoutOutputsInput (C×d).
	Layout compute.DenseLayout
	// HT is hᵀ (d×b), the operand layout of VJP's product hᵀ m for W laid out d×C (nil for C×d,
	// whose product mᵀ h reads h). NewAffineHead transposes h once per graph, so the VJPs of a
	// step (and of every CG iteration) share one transpose; with frozen features and static
	// batches callers may replace it by hᵀ laid out once per batch.
	HT *Node
	// FeatureGram optionally holds h hᵀ + 1 (b×b, see FeatureGram; h hᵀ for a head without bias)
	// for MarginGram. With frozen features and static batches it is the same in every epoch and
	// can be computed once per batch; nil means MarginGram computes it.
	FeatureGram *Node
	logits      *Node
}

var _ GramLinearization = (*AffineHead)(nil)

// NewAffineHead builds the affine head z = h W + 1 biasᵀ (h: b×d, W: d×C, bias: C or nil for a
// head without bias) and its linearisation.
func NewAffineHead(h, w, bias *Node) *AffineHead {
	return NewDenseHead(h, w, bias, compute.DenseLayoutInputOutputs)
}

// NewDenseHead builds the affine head that GoMLX's nn.Dense(h, w, bias, layout) computes for
// features h (b×d): z = h W + 1 biasᵀ with W laid out d×C (compute.DenseLayoutInputOutputs) or
// z = h Wᵀ + 1 biasᵀ with W laid out C×d (compute.DenseLayoutOutputsInput); bias (C) may be nil.
func NewDenseHead(h, w, bias *Node, layout compute.DenseLayout) *AffineHead {
	return newDenseHead(h, w, bias, layout, nil)
}

// newDenseHead is NewDenseHead on logits already built by the model (nil: build them).
func newDenseHead(h, w, bias *Node, layout compute.DenseLayout, logits *Node) *AffineHead {
	in, out := 0, 1 // W's axes of the features and of the classes
	switch layout {
	case compute.DenseLayoutInputOutputs:
	case compute.DenseLayoutOutputsInput:
		in, out = 1, 0
	default:
		exceptions.Panicf("fgn.NewDenseHead: unknown weight layout %v", layout)
	}
	if h.Rank() != 2 || w.Rank() != 2 || h.Shape().Dim(1) != w.Shape().Dim(in) ||
		(bias != nil && (bias.Rank() != 1 || w.Shape().Dim(out) != bias.Shape().Dim(0))) {
		exceptions.Panicf("fgn.NewDenseHead: need h (b×d), W (%s) and bias (C, or nil); got %s, %s (%s), %v",
			map[int]string{0: "d×C", 1: "C×d"}[in], h.Shape(), w.Shape(), layout, biasShape(bias))
	}
	if h.Shape().Dim(1) == 0 {
		exceptions.Panicf("fgn.NewDenseHead: the features have no columns (h is %s, d = 0): an affine head needs "+
			"at least one feature", h.Shape())
	}
	a := &AffineHead{H: h, W: w, Bias: bias, Layout: layout}
	if layout == compute.DenseLayoutInputOutputs {
		a.HT = Transpose(h, 0, 1)
	}
	if logits == nil {
		logits = a.JVP(a.Params())
	}
	a.logits = logits
	return a
}

func biasShape(bias *Node) any {
	if bias == nil {
		return "no bias"
	}
	return bias.Shape()
}

func (a *AffineHead) Logits() *Node { return a.logits }

// WhileSafe reports true: the products are matrix products of nodes built outside the loop.
func (a *AffineHead) WhileSafe() bool { return true }

// LinearInParams reports true: the logits are affine in the parameters.
func (a *AffineHead) LinearInParams() bool { return true }

func (a *AffineHead) Params() Vec {
	if a.Bias == nil {
		return Vec{a.W}
	}
	return Vec{a.W, a.Bias}
}

func (a *AffineHead) VJP(m *Node) Vec {
	var w *Node
	if a.Layout == compute.DenseLayoutInputOutputs {
		w = MatMul(a.HT, m) // hᵀ m, d×C
	} else {
		w = Dot(m, a.H).General([]int{0}, nil, []int{0}, nil) // mᵀ h, C×d
	}
	if a.Bias == nil {
		return Vec{w}
	}
	return Vec{w, ReduceSum(m, 0)}
}

func (a *AffineHead) JVP(v Vec) *Node {
	var z *Node
	if a.Layout == compute.DenseLayoutInputOutputs {
		z = MatMul(a.H, v[0])
	} else {
		z = Dot(a.H, v[0]).General([]int{1}, nil, []int{1}, nil) // h Vᵀ
	}
	if a.Bias == nil {
		return z
	}
	return Add(z, ExpandAxes(v[1], 0))
}

// MarginGram returns the margin Gram J Jᵀ of the head in closed form (appendix F.2),
//
//	G_ij = (h_i·h_j + 1)(a_i·a_j),      a_i = ∇_z s_i (gradS),
//
// (h_i·h_j for a head without bias), with the feature Gram taken from a.FeatureGram when set, else
// computed from a.H. It costs one b×b×C product, where the matrix-free row operator pays two
// b×d×C products per CG iteration.
func (a *AffineHead) MarginGram(gradS *Node) *Node {
	return a.marginGram(gradS, nil)
}

// marginGram returns the margin Gram J M⁻¹ Jᵀ with the weights invM = (1/m_W, 1/m_bias) of W and
// the bias (nil for an unweighted parameter, or for none: MarginGram), which a regularised step
// damps apart (see fgnDirection):
//
//	G_ij = (h_i·h_j/m_W + 1/m_bias)(a_i·a_j) = (F_ij/m_W + 1/m_bias − 1/m_W)(a_i·a_j),
//
// F = h hᵀ + 1 the feature Gram (h hᵀ and G_ij = F_ij(a_i·a_j)/m_W for a head without bias).
func (a *AffineHead) marginGram(gradS *Node, invM Vec) *Node {
	featureGram := a.FeatureGram
	switch {
	case featureGram != nil:
	case a.Bias == nil:
		featureGram = Einsum("id,jd->ij", a.H, a.H)
	default:
		featureGram = FeatureGram(a.H)
	}
	if invM != nil {
		g, dtype := featureGram.Graph(), featureGram.DType()
		weight := func(k int) *Node {
			if invM[k] == nil {
				return ScalarOne(g, dtype)
			}
			return ConvertDType(invM[k], dtype)
		}
		if invM[0] != nil {
			featureGram = Mul(featureGram, weight(0))
		}
		if a.Bias != nil && (invM[0] != nil || invM[1] != nil) {
			featureGram = Add(featureGram, Sub(weight(1), weight(0)))
		}
	}
	return affineMarginGram(featureGram, gradS)
}

// gramCheaper reports whether forming the head's margin Gram in closed form and iterating on it
// costs fewer multiply-adds than maxIter matrix-free CG iterations (the cost model of
// CheaperRowOperator): b²(d + C) + (maxIter + 2)·b² against 2·maxIter·b·d·C, without b²d when
// the feature Gram is given.
func (a *AffineHead) gramCheaper(maxIter int) bool {
	b, d, c, n := float64(a.H.Shape().Dim(0)), float64(a.H.Shape().Dim(1)), float64(a.logits.Shape().Dim(1)), float64(maxIter)
	gram := b * b * (c + n + 2)
	if a.FeatureGram == nil {
		gram += b * b * d
	}
	return gram < 2*n*b*d*c
}

// FeatureGram returns h hᵀ + 1 (b×b) for features h (b×d): the Gram matrix of the affine-head
// inputs (h_i, 1). With frozen features and static batches it is constant across epochs, so
// callers may compute it once per batch and set it as AffineHead.FeatureGram.
func FeatureGram(h *Node) *Node {
	return AddScalar(Einsum("id,jd->ij", h, h), 1)
}

// affineMarginGram returns G_ij = (h_i·h_j + 1)(a_i·a_j) (appendix F.2) from featureGram = h hᵀ + 1
// and the margin gradients a_i = ∇_z s_i (gradS, b×C).
func affineMarginGram(featureGram, gradS *Node) *Node {
	return Mul(featureGram, Einsum("ic,jc->ij", gradS, gradS))
}
