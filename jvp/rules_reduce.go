package jvp

import (
	"math"
	"slices"

	"github.com/gomlx/compute"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/support/exceptions"
)

// The rules of reductions that select an element: ReduceMax and ReduceMin, and max and min
// pooling (ReduceWindow).

// reduceExtremumTangent: y = max_i x_i (ReduceMax over some axes; ReduceMin alike) takes the
// mean of the tangents of the entries that attain it,
//
//	ẏ = Σ_i [x_i = y] ẋ_i / Σ_i [x_i = y],
//
// JAX's convention: J v is the directional derivative wherever the tied entries' tangents are
// equal (the same parameter, as an embedding row repeated in a sequence gives), where crediting
// every tied entry, as GoMLX's VJP does, counts the tangent once per tie (see compat.go:
// compatReduceMaxTies). The weights [x_i = y]/#ties depend on the primal values alone; each
// tangent costs one product and one sum. Linearization.VJP uses the transpose of this rule
// (reduceExtremumAdjoint), so its products stay adjoint.
func reduceExtremumTangent(node *Node, ts []*Node) *Node {
	tied, count := tiedEntries(node)
	x := node.Inputs()[0]
	axes := reducedAxes(node)
	return ReduceSum(Mul(Div(tied, BroadcastToDims(keepAxes(count, x, axes), x.Shape().Dimensions...)), ts[0]), axes...)
}

// reduceExtremumAdjoint is the Adjoint of ReduceMax and ReduceMin: node with a reverse-mode rule
// that divides the cotangent by the number of tied entries before GoMLX's VJP credits it to each
// of them, x̄_i = [x_i = y] ȳ / #ties, the transpose of reduceExtremumTangent.
func reduceExtremumAdjoint(node *Node) *Node {
	if !node.DType().IsFloat() {
		return node
	}
	_, count := tiedEntries(node)
	return IdentityWithCustomGradient(node, func(_, v *Node) *Node { return Div(v, count) })
}

// tiedEntries returns, for ReduceMax or ReduceMin node y of x, the indicator [x_i = y] shaped like x
// and the number of tied entries shaped like y (at least 1).
func tiedEntries(y *Node) (tied, count *Node) {
	x := y.Inputs()[0]
	axes := reducedAxes(y)
	tied = ConvertDType(Equal(x, BroadcastToDims(keepAxes(y, x, axes), x.Shape().Dimensions...)), x.DType())
	count = ReduceSum(tied, axes...)
	return tied, Max(count, OnesLike(count))
}

// keepAxes reshapes r, a reduction of x over axes, to x's rank with those axes of size 1.
func keepAxes(r, x *Node, axes []int) *Node {
	dims := slices.Clone(x.Shape().Dimensions)
	for _, a := range axes {
		dims[a] = 1
	}
	return Reshape(r, dims...)
}

// reduceWindowTangent: a sum over windows (mean pooling) is linear; a max (min) over windows takes
// the tangent at each window's selected element, the one GoMLX's VJP (SelectAndScatter) selects:
// the first element of the window, in row-major order, that attains the window's value y. With
// the input padded as the op pads it (by −∞ for a max, +∞ for a min) and z_δ the strided slice
// that holds, for every window, its element at offset δ,
//
//	ẏ = Σ_δ [z_δ(x) = y and z_{δ'}(x) ≠ y for every δ' before δ] · z_δ(t),
//
// so overlapping windows (strides below the window, as in a ResNet's 3×3 stride-2 pooling) are
// covered as well. At ties this is the directional derivative wherever the tied elements'
// tangents are equal, and its transpose is GoMLX's VJP. The masks depend on the primal values
// alone, so each product adds one strided slice and one selection per window offset. Windows
// with dilations are refused, as GoMLX's VJP refuses them.
func reduceWindowTangent(node *Node, ts []*Node) *Node {
	win := reduceWindow(node)
	if win.reduction == compute.ReduceOpSum {
		return linearTangent(node, ts)
	}
	if win.reduction != compute.ReduceOpMax && win.reduction != compute.ReduceOpMin {
		exceptions.Panicf("ReduceWindow with reduction %s has no forward-mode rule", win.reduction)
	}
	for _, d := range slices.Concat(win.inputDilations, win.dilations) {
		if d != 1 {
			exceptions.Panicf("ReduceWindow %s with input dilations %v and window dilations %v has no forward-mode rule",
				win.reduction, win.inputDilations, win.dilations)
		}
	}
	x := node.Inputs()[0]
	rank := x.Rank()
	pads := make([]PadAxis, rank)
	for k, p := range win.paddings {
		pads[k] = PadAxis{Start: p[0], End: p[1]}
	}
	fill := math.Inf(-1)
	if win.reduction == compute.ReduceOpMin {
		fill = math.Inf(1)
	}
	g := x.Graph()
	xp := Pad(x, Scalar(g, x.DType(), fill), pads...)
	tp := Pad(ts[0], ScalarZero(g, x.DType()), pads...)
	// at returns, for every window, its element at offset delta.
	at := func(z *Node, delta []int) *Node {
		spec := make([]SliceAxisSpec, rank)
		for k := range rank {
			stride := 1
			if k < len(win.strides) {
				stride = win.strides[k]
			}
			spec[k] = AxisRange(delta[k], delta[k]+stride*(node.Shape().Dim(k)-1)+1).Stride(stride)
		}
		return Slice(z, spec...)
	}
	zero := ZerosLike(node)
	var tangent, found *Node
	delta := make([]int, rank)
	for {
		selected := Equal(at(xp, delta), node)
		if found != nil {
			selected = LogicalAnd(selected, LogicalNot(found))
		}
		term := Where(selected, at(tp, delta), zero)
		if found == nil {
			tangent, found = term, selected
		} else {
			tangent, found = Add(tangent, term), LogicalOr(found, selected)
		}
		k := rank - 1 // the next offset, in row-major order
		for ; k >= 0; k-- {
			if delta[k]++; delta[k] < win.dimensions[k] {
				break
			}
			delta[k] = 0
		}
		if k < 0 {
			return tangent
		}
	}
}
