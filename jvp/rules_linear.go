package jvp

import (
	"slices"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/support/exceptions"
)

// The rules of linear and multilinear ops.

// linearTangent: node is linear in all its inputs jointly, so its tangent is node applied to the
// tangents.
func linearTangent(node *Node, ts []*Node) *Node {
	return node.CloneWithInputs(orZeros(node, ts)...)
}

// linearExcept is linearTangent for an op linear in all its inputs but input k, which it keeps
// (the indices of a Gather, the condition of a Where).
func linearExcept(k int) Rule {
	return func(node *Node, ts []*Node) *Node {
		if ts[k] != nil {
			exceptions.Panicf("input %d of %s carries a tangent", k, node.Type())
		}
		in := orZeros(node, ts)
		in[k] = node.Inputs()[k]
		return node.CloneWithInputs(in...)
	}
}

// addTangent: Add and Sub, without materialising a zero tangent.
func addTangent(node *Node, ts []*Node) *Node {
	switch {
	case ts[1] == nil:
		return ts[0]
	case ts[0] == nil && node.Type() == NodeTypeSub:
		return Neg(ts[1])
	case ts[0] == nil:
		return ts[1]
	}
	return node.CloneWithInputs(ts...)
}

// multilinearTangent: node is linear in each input separately (a product), so its tangent is the
// sum over the inputs with a tangent of node with that input replaced by its tangent.
func multilinearTangent(node *Node, ts []*Node) *Node {
	var sum *Node
	for k, t := range ts {
		if t == nil {
			continue
		}
		in := slices.Clone(node.Inputs())
		in[k] = t
		sum = addTerm(sum, fit(node.CloneWithInputs(in...), node.Shape()))
	}
	return sum
}

// divTangent: (a/b)' = (a' − (a/b)·b')/b.
func divTangent(node *Node, ts []*Node) *Node {
	b := node.Inputs()[1]
	num := ts[0]
	if ts[1] != nil {
		term := Mul(node, ts[1])
		if num == nil {
			num = Neg(term)
		} else {
			num = Sub(num, term)
		}
	}
	return Div(num, b)
}
