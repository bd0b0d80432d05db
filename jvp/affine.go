package jvp

import (
	"errors"
	"fmt"
	"slices"

	"github.com/gomlx/compute"
	. "github.com/gomlx/gomlx/core/graph"
)

// Affine is a dense layer without activation found in a graph by MatchAffine,
//
//	z = h W + 1 bᵀ   or   z = h W,
//
// with h (b×d) the features, W the weights (d×C in the layout compute.DenseLayoutInputOutputs,
// C×d in DenseLayoutOutputsInput) and b (C) the bias, nil for none.
type Affine struct {
	Features, Weights, Bias *Node
	Layout                  compute.DenseLayout
}

// MatchAffine returns the dense layer that computes z (b×C) when z is affine in wrt as such a
// layer, built as GoMLX's nn.Dense (hence layers.Dense and layers.DenseWithBias) builds it: a
// FusedDense without activation, or a DotGeneral contracting the last axis of h with W's input
// axis plus the bias reshaped to 1×C; W in either weight layout. W and b must be nodes of wrt,
// and no tangent of wrt may reach the features h, as JVP propagates them (StopGradient cuts
// them, as it cuts the gradient): h may be a graph input, or the output of a frozen backbone, of
// non-trainable variables or behind a StopGradient. The other nodes of wrt then do not reach z.
// A layer over a layer that depends on wrt, or whose W also feeds h (a shared weight), is not
// one. Otherwise it returns an error that says why not.
func MatchAffine(z *Node, wrt []*Node) (Affine, error) {
	if z.Rank() != 2 {
		return Affine{}, fmt.Errorf("the logits are %s, not b×C", z.Shape())
	}
	isWrt := func(n *Node) bool { return slices.Contains(wrt, n) }
	product, bias := z, (*Node)(nil)
	if z.Type() == NodeTypeAdd {
		for k, term := range z.Inputs() {
			if bias = biasOf(term, z, isWrt); bias != nil {
				product = z.Inputs()[1-k]
				break
			}
		}
		if bias == nil {
			return Affine{}, errors.New("the logits are a sum of which no term is a bias of wrt broadcast over the batch")
		}
	}
	var h, w *Node
	var layout compute.DenseLayout
	switch product.Type() {
	case NodeTypeFusedDense:
		in := product.Inputs()
		h, w = in[0], in[1]
		cfg := denseConfig(product)
		if cfg.Activation.Type != compute.ActivationNone {
			return Affine{}, errors.New("the logits are a FusedDense with an activation")
		}
		layout = cfg.WeightLayout
		if len(in) == 3 {
			if bias != nil || !isWrt(in[2]) {
				return Affine{}, errors.New("the FusedDense's bias is not a node of wrt added once")
			}
			bias = in[2]
		}
	case NodeTypeDotGeneral:
		h, w = product.Inputs()[0], product.Inputs()[1]
		var ok bool
		if layout, ok = denseDotLayout(dotGeneralAxes(product)); !ok {
			return Affine{}, errors.New("the logits' DotGeneral does not contract the features' last axis with W's input axis")
		}
	default:
		return Affine{}, fmt.Errorf("the logits are computed by %s, not by a dense product", product.Type())
	}
	in, out := 0, 1
	if layout == compute.DenseLayoutOutputsInput {
		in, out = 1, 0
	}
	switch {
	case !isWrt(w):
		return Affine{}, errors.New("the dense weight is not a node of wrt")
	case h.Rank() != 2 || w.Rank() != 2 || h.Shape().Dim(0) != z.Shape().Dim(0) ||
		h.Shape().Dim(1) != w.Shape().Dim(in) || w.Shape().Dim(out) != z.Shape().Dim(1):
		return Affine{}, fmt.Errorf("the dense product of %s and %s is not that of a b×d batch", h.Shape(), w.Shape())
	case h.DType() != z.DType() || w.DType() != z.DType():
		return Affine{}, errors.New("the features, weight and logits differ in dtype")
	case w == bias:
		return Affine{}, errors.New("the weight is also the bias")
	case newWalk([]*Node{z}, wrt).carriesTangent(h):
		return Affine{}, errors.New("the features depend on a node of wrt")
	}
	return Affine{Features: h, Weights: w, Bias: bias, Layout: layout}, nil
}

// biasOf returns the node b of wrt when term is b (C) reshaped to 1×C, or broadcast to the b×C
// logits z, by the ops nn.Dense and ExpandAxes build; else nil.
func biasOf(term, z *Node, isWrt func(*Node) bool) *Node {
	c := z.Shape().Dim(1)
	for n := term; ; n = n.Inputs()[0] {
		switch {
		case n.DType() != z.DType():
			return nil
		case n.Rank() == 1 && n.Shape().Dim(0) == c && isWrt(n):
			return n
		case n.Type() == NodeTypeReshape && n.Rank() == 2 && n.Shape().Dim(0) == 1 && n.Shape().Dim(1) == c:
		case n.Type() == NodeTypeBroadcastInDim && n.Shape().Equal(z.Shape()) && z.Shape().Dim(0) != c &&
			n.Inputs()[0].Rank() == 2 && n.Inputs()[0].Shape().Dim(0) == 1:
			// From 1×C to b×C with b ≠ C, the class axis can only map to itself.
		default:
			return nil
		}
	}
}

// denseDotLayout returns the weight layout of a DotGeneral with axes a that computes h W
// (contracting h's axis 1 with W's axis 0, InputOutputs) or h Wᵀ (with W's axis 1,
// OutputsInput), without batch axes.
func denseDotLayout(a dotAxes) (compute.DenseLayout, bool) {
	if !slices.Equal(a.lhsContracting, []int{1}) || len(a.lhsBatch) != 0 || len(a.rhsBatch) != 0 {
		return 0, false
	}
	switch {
	case slices.Equal(a.rhsContracting, []int{0}):
		return compute.DenseLayoutInputOutputs, true
	case slices.Equal(a.rhsContracting, []int{1}):
		return compute.DenseLayoutOutputsInput, true
	}
	return 0, false
}
