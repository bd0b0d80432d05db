package jvp

import (
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/support/exceptions"
)

// Rule is the forward-mode rule of one op type: it returns the tangent of node's output from the
// tangents of its inputs, listed as node.Inputs lists them, nil for a zero tangent (at least one
// is not nil); it returns nil for a zero tangent. A tangent of another shape than node's (a
// broadcast operand's) is broadcast to it.
//
// A rule may build any node from node's primal inputs and output: a Linearization computes those
// once, however many tangents it is applied to, and applies the rule by cloning only the nodes
// that depend on the tangents. A rule panics (exceptions.Panicf) when it cannot differentiate
// node; the error then names the op and the inputs it depends on.
type Rule func(node *Node, tangents []*Node) *Node

// fit broadcasts t to shape when an op broadcast its operands implicitly.
func fit(t *Node, shape shapes.Shape) *Node {
	if t.Shape().Equal(shape) {
		return t
	}
	if t.DType() != shape.DType {
		exceptions.Panicf("tangent %s does not match its node %s", t.Shape(), shape)
	}
	return BroadcastToDims(t, shape.Dimensions...)
}

// orZeros returns ts with each zero tangent of a floating-point input replaced by zeros.
func orZeros(node *Node, ts []*Node) []*Node {
	out := make([]*Node, len(ts))
	for k, x := range node.Inputs() {
		out[k] = ts[k]
		if out[k] == nil {
			out[k] = ZerosLike(x)
		}
	}
	return out
}

// addTerm returns sum + term, or term when sum is nil.
func addTerm(sum, term *Node) *Node {
	if sum == nil {
		return term
	}
	return Add(sum, term)
}
