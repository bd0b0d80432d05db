package jvp

import (
	"math"

	. "github.com/gomlx/gomlx/core/graph"
)

// The rules of element-wise non-linear ops.

// unary returns the rule of an element-wise map y = f(x) with derivative df(x, y).
func unary(df func(x, y *Node) *Node) Rule {
	return func(node *Node, ts []*Node) *Node {
		return Mul(df(node.Inputs()[0], node), ts[0])
	}
}

// erfDerivative is erf′(x) = 2/√π · exp(−x²).
func erfDerivative(x, _ *Node) *Node {
	return MulScalar(Exp(Neg(Square(x))), 2/math.Sqrt(math.Pi))
}

// zeroTangent is the rule of a piecewise-constant op (Sign, Floor, Ceil, Round).
func zeroTangent(*Node, []*Node) *Node { return nil }

// minMaxTangent selects the tangent of the selected operand, with GoMLX's convention at ties
// (Max takes its first operand where a ≥ b, Min its second), under which J v is the directional
// derivative wherever the tied operands' tangents are equal.
func minMaxTangent(node *Node, ts []*Node) *Node {
	a, b := node.Inputs()[0], node.Inputs()[1]
	first := GreaterOrEqual(Sub(a, b), ZerosLike(Sub(a, b)))
	if node.Type() == NodeTypeMin {
		first = LogicalNot(first)
	}
	in := orZeros(node, ts)
	return Where(first, fit(in[0], node.Shape()), fit(in[1], node.Shape()))
}

// clampTangent: Clamp(lo, x, hi) = min(max(x, lo), hi) selects the tangent of the operand it
// takes.
func clampTangent(node *Node, ts []*Node) *Node {
	in := orZeros(node, ts)
	shape := node.Shape()
	lo, x, hi := fit(node.Inputs()[0], shape), fit(node.Inputs()[1], shape), fit(node.Inputs()[2], shape)
	t := Where(LessThan(x, lo), fit(in[0], shape), fit(in[1], shape))
	return Where(GreaterThan(Max(x, lo), hi), fit(in[2], shape), t)
}

// powTangent: (aᵇ)' = b·aᵇ⁻¹·a' + aᵇ·log(a)·b'.
func powTangent(node *Node, ts []*Node) *Node {
	a, b := node.Inputs()[0], node.Inputs()[1]
	var sum *Node
	if ts[0] != nil {
		sum = Mul(Mul(b, Pow(a, AddScalar(b, -1))), ts[0])
	}
	if ts[1] != nil {
		term := Mul(Mul(node, Log(a)), ts[1])
		if sum == nil {
			sum = term
		} else {
			sum = Add(fit(sum, node.Shape()), fit(term, node.Shape()))
		}
	}
	return sum
}

// diagonalTangent is the rule of an element-wise map of one input whose parameters GoMLX does not
// expose (FusedActivation: ReLU, leaky ReLU, GELU, swish, …): its Jacobian is diagonal, hence
// symmetric, so J t = Jᵀ t is one local VJP, by the op's own registered VJP.
func diagonalTangent(node *Node, ts []*Node) *Node {
	x := node.Inputs()[0]
	return Gradient(ReduceAllSum(Mul(node, StopGradient(ts[0]))), x)[0]
}
