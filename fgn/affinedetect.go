package fgn

import (
	"fmt"
	"slices"

	"github.com/gomlx/compute"
	. "github.com/gomlx/gomlx/core/graph"
)

// recogniseAffineHead returns the AffineHead of the logits z when z is affine in the parameters
// (walk.sources, the trainable variables) as a dense head,
//
//	z = h W + 1 bᵀ   or   z = h W,
//
// built as GoMLX's nn.Dense (hence layers.Dense and layers.DenseWithBias) builds it: a FusedDense
// without activation, or a DotGeneral contracting the last axis of h with W's input axis plus the
// bias reshaped to 1×C; W in either weight layout. The head is exact only when W and b are
// parameters and no tangent of the parameters reaches the features h on walk, the walk from the
// parameters to z along which Linearize's forward mode propagates tangents (StopGradient cuts it,
// as it cuts the gradient): h may be the input features, or the output of a frozen backbone, of
// non-trainable variables or behind a StopGradient. Parameters other than W and b then do not
// reach the logits: their Jacobian is zero, and so is their direction. A head over a trainable
// layer, or whose W also feeds h (a shared weight), is not one. Otherwise it returns nil and the
// reason.
func recogniseAffineHead(z *Node, walk *subgraph) (Linearization, string) {
	params := Vec(walk.sources)
	if z.Rank() != 2 {
		return nil, fmt.Sprintf("the logits are %s, not b×C", z.Shape())
	}
	isParam := func(n *Node) bool { return slices.Contains(params, n) }
	product, bias := z, (*Node)(nil)
	if z.Type() == NodeTypeAdd {
		for k, term := range z.Inputs() {
			if bias = biasParam(term, z, isParam); bias != nil {
				product = z.Inputs()[1-k]
				break
			}
		}
		if bias == nil {
			return nil, "the logits are a sum of which no term is a bias parameter broadcast over the batch"
		}
	}
	var h, w *Node
	var layout compute.DenseLayout
	switch product.Type() {
	case NodeTypeFusedDense:
		in := product.Inputs()
		h, w = in[0], in[1]
		var ok bool
		if layout, ok = fusedDenseLayout(product); !ok {
			return nil, "the logits are a FusedDense with an activation"
		}
		if len(in) == 3 {
			if bias != nil || !isParam(in[2]) {
				return nil, "the FusedDense's bias is not a parameter added once"
			}
			bias = in[2]
		}
	case NodeTypeDotGeneral:
		h, w = product.Inputs()[0], product.Inputs()[1]
		var ok bool
		if layout, ok = denseDotLayout(product); !ok {
			return nil, "the logits' DotGeneral does not contract the features' last axis with W's input axis"
		}
	default:
		return nil, fmt.Sprintf("the logits are computed by %s, not by a dense product", product.Type())
	}
	in, out := 0, 1
	if layout == compute.DenseLayoutOutputsInput {
		in, out = 1, 0
	}
	switch {
	case !isParam(w):
		return nil, "the dense weight is not a trainable variable's value"
	case h.Rank() != 2 || w.Rank() != 2 || h.Shape().Dim(0) != z.Shape().Dim(0) ||
		h.Shape().Dim(1) != w.Shape().Dim(in) || w.Shape().Dim(out) != z.Shape().Dim(1):
		return nil, fmt.Sprintf("the dense product of %s and %s is not that of a b×d batch", h.Shape(), w.Shape())
	case h.DType() != z.DType() || w.DType() != z.DType():
		return nil, "the features, weight and logits differ in dtype"
	case w == bias:
		return nil, "the weight is also the bias"
	case walk.carriesTangent(h):
		return nil, "the features depend on a trainable variable"
	}
	head := newDenseHead(h, w, bias, layout, z)
	var inert Vec
	for _, p := range params {
		if p != w && p != bias {
			inert = append(inert, p)
		}
	}
	if len(inert) == 0 {
		return head, ""
	}
	return &headWithInertParams{AffineHead: head, inert: inert}, ""
}

// headWithInertParams is an affine head whose Params also list parameters that do not reach its
// logits (a backbone behind a StopGradient): their Jacobian blocks are zero.
type headWithInertParams struct {
	*AffineHead
	inert Vec
}

func (a *headWithInertParams) Params() Vec {
	return slices.Concat(a.AffineHead.Params(), a.inert)
}

func (a *headWithInertParams) VJP(m *Node) Vec {
	return slices.Concat(a.AffineHead.VJP(m), vecZerosLike(a.inert))
}

func (a *headWithInertParams) JVP(v Vec) *Node {
	return a.AffineHead.JVP(v[:len(v)-len(a.inert)])
}

// biasParam returns the parameter b when term is b (C) reshaped to 1×C, or broadcast to the b×C
// logits z, by the ops nn.Dense and ExpandAxes build; else nil.
func biasParam(term, z *Node, isParam func(*Node) bool) *Node {
	c := z.Shape().Dim(1)
	for n := term; ; n = n.Inputs()[0] {
		switch {
		case n.DType() != z.DType():
			return nil
		case n.Rank() == 1 && n.Shape().Dim(0) == c && isParam(n):
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

// fusedDenseLayout returns the weight layout of a FusedDense node without activation; false when
// it has one.
func fusedDenseLayout(n *Node) (compute.DenseLayout, bool) {
	options := opParam(n, "options")
	if compute.ActivationType(options.FieldByName("Activation").FieldByName("Type").Int()) != compute.ActivationNone {
		return 0, false
	}
	return compute.DenseLayout(options.FieldByName("WeightLayout").Int()), true
}

// denseDotLayout returns the weight layout of a DotGeneral node that computes h W (contracting
// h's axis 1 with W's axis 0, InputOutputs) or h Wᵀ (with W's axis 1, OutputsInput), without
// batch axes.
func denseDotLayout(n *Node) (compute.DenseLayout, bool) {
	axes := func(field string) []int {
		v := opParam(n, field)
		out := make([]int, v.Len())
		for k := range out {
			out[k] = int(v.Index(k).Int())
		}
		return out
	}
	if !slices.Equal(axes("lhsContractingAxes"), []int{1}) || len(axes("lhsBatchAxes")) != 0 ||
		len(axes("rhsBatchAxes")) != 0 {
		return 0, false
	}
	switch rhs := axes("rhsContractingAxes"); {
	case slices.Equal(rhs, []int{0}):
		return compute.DenseLayoutInputOutputs, true
	case slices.Equal(rhs, []int{1}):
		return compute.DenseLayoutOutputsInput, true
	}
	return 0, false
}

// carriesTangent reports whether a tangent of the sources reaches n when tangent propagates them:
// n is a source, or a node of the walk that is not a StopGradient and has an input that carries
// one.
func (s *subgraph) carriesTangent(n *Node) bool {
	carries := make(map[*Node]bool, len(s.nodes)+len(s.sources))
	for _, src := range s.sources {
		carries[src] = true
	}
	for _, x := range s.nodes { // topological order: inputs first
		if _, ok := s.source[x]; ok || x.StopGradient() {
			continue
		}
		for _, in := range x.Inputs() {
			if carries[in] {
				carries[x] = true
				break
			}
		}
	}
	return carries[n]
}
