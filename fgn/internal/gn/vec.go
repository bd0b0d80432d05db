package gn

import (
	. "github.com/gomlx/gomlx/core/graph"
)

// Vec is a point or a direction in parameter space, one node per parameter tensor (fgn.Vec).
type Vec = []*Node

// VecDot returns Σ_k ⟨a_k, b_k⟩ as a scalar node.
func VecDot(a, b Vec) *Node {
	var sum *Node
	for k := range a {
		term := ReduceAllSum(Mul(a[k], b[k]))
		if sum == nil {
			sum = term
		} else {
			sum = Add(sum, term)
		}
	}
	return sum
}

// VecAxpy returns x + alpha·y, alpha a scalar node.
func VecAxpy(x Vec, alpha *Node, y Vec) Vec {
	out := make(Vec, len(x))
	for k := range x {
		out[k] = Add(x[k], Mul(ConvertDType(alpha, y[k].DType()), y[k]))
	}
	return out
}

// VecScale returns alpha·x, alpha a scalar node.
func VecScale(alpha *Node, x Vec) Vec {
	out := make(Vec, len(x))
	for k := range x {
		out[k] = Mul(ConvertDType(alpha, x[k].DType()), x[k])
	}
	return out
}

// VecZerosLike returns zeros shaped like x.
func VecZerosLike(x Vec) Vec {
	out := make(Vec, len(x))
	for k := range x {
		out[k] = ZerosLike(x[k])
	}
	return out
}
