package jvp

import (
	"github.com/gomlx/compute"
	. "github.com/gomlx/gomlx/core/graph"
)

// fusedDenseTangent: FusedDense(x, W, bias) = act(x·W + bias) (GoMLX's nn.Dense on backends that
// fuse it). Without activation it is multilinear in (x, W) plus the bias; with one, the
// pre-activation tangent is formed by FusedDense without activation, and the activation's
// derivative is applied by its VJP (diagonal, see diagonalTangent), from the output y when the
// activation's VJP needs only y (the activations GoMLX fuses into FusedDense), else from the
// pre-activation recomputed.
func fusedDenseTangent(node *Node, ts []*Node) *Node {
	options := denseConfig(node)
	act := options.Activation
	noAct := compute.DenseConfig{WeightLayout: options.WeightLayout}
	in := node.Inputs()
	var pre *Node
	for k := range 2 {
		if ts[k] == nil {
			continue
		}
		args := []*Node{in[0], in[1]}
		args[k] = ts[k]
		pre = addTerm(pre, BackendFusedDense(args[0], args[1], nil, noAct))
	}
	if len(ts) > 2 && ts[2] != nil {
		pre = addTerm(pre, ExpandLeftToRank(ts[2], node.Rank()))
	}
	if act.Type == compute.ActivationNone {
		return pre
	}
	var x *Node
	if act.Type.VJPRequiresInput() {
		var bias *Node
		if len(in) > 2 {
			bias = in[2]
		}
		x = BackendFusedDense(in[0], in[1], bias, noAct)
	}
	return BackendFusedActivationVJP(node, x, pre, act)
}
