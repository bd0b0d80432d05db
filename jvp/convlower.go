package jvp

import (
	"slices"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/gobackend"
	. "github.com/gomlx/gomlx/core/graph"
)

// LowerConvolutions returns outputs computed with every convolution they depend on (ConvGeneral,
// what layers.Convolution and graph.Convolve build) that has at least 8 output channels per group
// (minLoweredChannels) as one matrix product of the input's patches and the kernel (im2col), on
// the pure-Go backend, whose packed matrix kernel runs the product faster than its direct
// convolution runs most such layers (BENCHMARKS.md measures both); on any other backend it
// returns outputs as they are. A model opts in by returning LowerConvolutions(logits)[0]: the
// values are GoMLX's convolutions' to rounding, GoMLX's reverse mode differentiates the lowered
// graph (slices, concatenations and a product), and Linearize's products and Linearization.At
// follow it. The patches take the kernel's spatial size times the input's memory. Linearize
// lowers the convolutions of its own products, and At those of the outputs it evaluates, whether
// or not the model opts in (lowerConvolutions).
func LowerConvolutions(outputs ...*Node) []*Node {
	return lower(outputs, nil, lowering{differentiable: true, minChannels: minLoweredChannels})
}

// lowerConvolutions is the pass of Linearize's products (passes) that computes the ConvGeneral
// nodes between in and outs as matrix products as LowerConvolutions does, on the pure-Go
// backend. The products are cloned, never differentiated, so they are built for speed
// alone: the slices of stride 1 are Pad nodes with negative paddings, which the pure-Go backend
// copies in contiguous runs where it copies a Slice element by element (the pass rewrites the
// products' other Slice nodes of stride 1 so too, such as those of a lowered model's patches and
// GoMLX's VJP of Concatenate), and the kernel is contracted in the axes it has, which relayout,
// the pass after this one, lays out once when it is invariant. The nodes that depend on no input
// are kept, so what is invariant in a lowered convolution (the patches of a primal activation, a
// kernel's layout) is formed once, outside every clone.
func lowerConvolutions(outs, in []*Node) []*Node {
	return lower(outs, in, lowering{minChannels: minLoweredChannels})
}

// lower returns outs rebuilt with every ConvGeneral node that depends on in (every one reached
// from outs when in is nil) and that l lowers (lowering.lowers) computed as a matrix product, on
// the pure-Go backend, and when not differentiable the Slice nodes of stride 1 that depend on in
// as crops (lowering.cut). A convolution with channel groups G and batch groups G_b (one of them
// 1),
//
//	y[n, o, p] = Σ_{j, c} x̂[g_b(o)·N' + n, g(o)·C' + c, p·s + j·δ] · k[c, o, j],
//
// where x̂ is the input dilated (zeros between its elements) and padded, p runs over the
// output's spatial positions, j over the kernel's, s are the strides, δ the kernel dilations,
// C' = C/G and N' = N/G_b, is the product of the patches P[n, p, (j, c)] = x̂[n, c, p·s + j·δ]
// with the kernel K[(j, c), o], batched over the groups (convPatches, convAsDot). Every rewrite is
// exact algebra (the sums run in another order, so values agree to rounding); convolutions of
// other dtypes than float32 and float64 are kept, and so are those with few output channels per
// group (minLoweredChannels).
//
// The pure-Go backend (compute v0.1.14) computes ConvGeneral directly, one output element at a
// time, and DotGeneral on its packed SIMD matrix kernel; XLA lowers convolutions itself.
func lower(outs, in []*Node, l lowering) []*Node {
	if len(outs) == 0 || outs[0].Graph().Backend().String() != gobackend.BackendName {
		return outs
	}
	var dependent map[*Node]bool // nil: every node
	if in != nil {
		dependent = make(map[*Node]bool)
		for _, n := range Dependents(outs, in) {
			dependent[n] = true
		}
	}
	value := make(map[*Node]*Node)
	var rebuild func(n *Node) *Node
	rebuild = func(n *Node) *Node {
		if v, ok := value[n]; ok {
			return v
		}
		value[n] = n
		if dependent != nil && !dependent[n] {
			return n
		}
		inputs := make([]*Node, len(n.Inputs()))
		changed := false
		for k, x := range n.Inputs() {
			inputs[k] = rebuild(x)
			changed = changed || inputs[k] != x
		}
		switch {
		case n.Type() == NodeTypeConvGeneral && l.lowers(n):
			value[n] = l.convAsDot(inputs[0], inputs[1], readConv(n))
		case n.Type() == NodeTypeSlice && !l.differentiable && unitStrides(n):
			bounds := sliceBounds(n)
			value[n] = l.cut(inputs[0], bounds.starts, bounds.limits, nil)
		case changed:
			value[n] = cloneNode(n, inputs)
		}
		return value[n]
	}
	rebuilt := make([]*Node, len(outs))
	for k, out := range outs {
		rebuilt[k] = rebuild(out)
	}
	return rebuilt
}

// lowering builds the lowered convolutions for a graph that GoMLX's reverse mode differentiates
// (a model's forward pass) or for products that are only cloned. GoMLX's VJP of Pad takes only
// non-negative paddings, and its VJP of DotGeneral only contracting axes in increasing order on
// the rhs (see compat.go: compatPadVJPNegative, compatDotVJPAxesOrder), so a differentiable
// lowering cuts by Slice and contracts a kernel laid out as [j…, c, o]. It lowers the
// convolutions with at least minChannels output channels per group (0: all that can be).
type lowering struct {
	differentiable bool
	minChannels    int
}

// cut returns x restricted to [starts[i], limits[i]) with strides (nil: all 1) on each axis: a
// Slice when differentiable or a stride exceeds 1, else a Pad with non-positive paddings. That
// Pad's output holds no padding, so its fill value is never read: it is 1, not 0, because the
// pure-Go backend (compute v0.1.14) first fills a Pad's output, a zero one element by element and
// any other value by doubling copies, at the speed of a memory copy.
func (l lowering) cut(x *Node, starts, limits, strides []int) *Node {
	if l.differentiable || slices.ContainsFunc(strides, func(s int) bool { return s > 1 }) {
		spec := make([]SliceAxisSpec, len(starts))
		for i := range starts {
			spec[i] = AxisRange(starts[i], limits[i])
			if strides != nil {
				spec[i] = spec[i].Stride(strides[i])
			}
		}
		return Slice(x, spec...)
	}
	pads := make([]PadAxis, len(starts))
	for i, d := range x.Shape().Dimensions {
		pads[i] = PadAxis{Start: -starts[i], End: -(d - limits[i])}
	}
	return Pad(x, ScalarOne(x.Graph(), x.DType()), pads...)
}

// unitStrides reports whether Slice node n has stride 1 on every axis.
func unitStrides(n *Node) bool {
	return !slices.ContainsFunc(sliceBounds(n).strides, func(s int) bool { return s > 1 })
}

// convAdjoint is the Adjoint of ConvGeneral: node itself, but for a convolution whose kernel has
// an even size along a spatial axis, whose VJP with respect to the input GoMLX shifts by one
// position (see compat.go: compatConvVJPEvenKernel), the convolution lowered to a product as
// LowerConvolutions lowers it, on any backend: GoMLX's reverse mode of the slices, the
// concatenation and the product is the transpose of the convolution.
func convAdjoint(node *Node) *Node {
	c := readConv(node)
	k := node.Inputs()[1]
	even := slices.ContainsFunc(c.axes.KernelSpatial, func(axis int) bool { return k.Shape().Dim(axis)%2 == 0 })
	if !even || !node.DType().IsFloat() || c.channelGroups > 1 && c.batchGroups > 1 {
		return node
	}
	return lowering{differentiable: true}.convAsDot(node.Inputs()[0], k, c)
}

// minLoweredChannels is the fewest output channels per group of a convolution that lower
// computes as a product. Each element of the patches, which the lowering copies from the input,
// is used once per output channel of its group, so with fewer channels the copies outweigh what
// the packed kernel saves: on the pure-Go backend (compute v0.1.14) a 3×3 convolution of 16
// channels into 1, the VJP with respect to the kernel of one into 2 or 4, and the depthwise
// convolutions' VJPs run slower lowered, every measured convolution with 8 or more runs faster
// (BenchmarkConvLowering).
const minLoweredChannels = 8

// maxPatchBytes bounds the patches of a convolution that lower computes as a product: beyond
// it (a batch of large images) the convolution is kept, rather than hold the patches, which take
// the kernel's spatial size times the input's memory.
const maxPatchBytes = 1 << 30

// lowers reports whether lower computes ConvGeneral node n as a product: its dtype is float32 or
// float64, at most one of its group counts exceeds 1, it has at least l.minChannels output
// channels per group and its patches take at most maxPatchBytes.
func (l lowering) lowers(n *Node) bool {
	dtype := n.DType()
	c := readConv(n)
	if !(dtype == dtypes.Float32 || dtype == dtypes.Float64) || c.channelGroups > 1 && c.batchGroups > 1 ||
		n.Shape().Dim(c.axes.OutputChannels) < l.minChannels*c.channelGroups*c.batchGroups {
		return false
	}
	x, k := n.Inputs()[0].Shape(), n.Inputs()[1].Shape()
	patches := x.Dim(c.axes.InputBatch) * x.Dim(c.axes.InputChannels) * dtype.Size()
	for i := range c.axes.InputSpatial {
		patches *= n.Shape().Dim(c.axes.OutputSpatial[i]) * k.Dim(c.axes.KernelSpatial[i])
	}
	return patches <= maxPatchBytes
}

// convParams are the static parameters of a ConvGeneral node, with the defaults filled in: unit
// strides and dilations, zero paddings, group counts of 1.
type convParams struct {
	axes                                     compute.ConvolveAxesConfig
	strides, inputDilations, kernelDilations []int
	paddings                                 [][2]int
	channelGroups, batchGroups               int
}

// readConv reads the parameters of ConvGeneral node n (convGeneral).
func readConv(n *Node) convParams {
	g := convGeneral(n)
	c := convParams{axes: g.axes, paddings: g.paddings, channelGroups: max(g.channelGroupCount, 1),
		batchGroups: max(g.batchGroupCount, 1)}
	r := len(c.axes.InputSpatial)
	orOnes := func(v []int) []int {
		out := slices.Repeat([]int{1}, r)
		for i, x := range v {
			out[i] = max(x, 1)
		}
		return out
	}
	c.strides, c.inputDilations, c.kernelDilations = orOnes(g.strides), orOnes(g.inputDilations), orOnes(g.kernelDilations)
	if len(c.paddings) == 0 {
		c.paddings = make([][2]int, r)
	}
	return c
}

// convAsDot returns the convolution of x with kernel k (parameters c) as the product of x's
// patches with the kernel laid out as [(j, c), o], batched over the groups (see
// lowerConvolutions).
func (l lowering) convAsDot(x, k *Node, c convParams) *Node {
	r := len(c.axes.InputSpatial)
	kernelSpatial := make([]int, r)
	for i, axis := range c.axes.KernelSpatial {
		kernelSpatial[i] = k.Shape().Dim(axis)
	}
	patches, outSpatial, channelsMajor := l.convPatches(x, kernelSpatial, c)
	kk := prod(kernelSpatial)
	cIn, cOut := k.Shape().Dim(c.axes.KernelInputChannels), k.Shape().Dim(c.axes.KernelOutputChannels)
	n := patches.Shape().Dim(0)
	spatial := slices.Concat([]int{n}, outSpatial) // patches: [n, p…, (j, c)] or [n, p…, (c, j)]
	// The patches' minor axes and the kernel's axes paired with them, in order.
	minorDims, kernelAxes := slices.Concat(kernelSpatial, []int{cIn}), append(slices.Clone(c.axes.KernelSpatial), c.axes.KernelInputChannels)
	if channelsMajor {
		minorDims, kernelAxes = slices.Concat([]int{cIn}, kernelSpatial), slices.Concat([]int{c.axes.KernelInputChannels}, c.axes.KernelSpatial)
	}
	if !l.differentiable && c.channelGroups == 1 && c.batchGroups == 1 {
		// patches [n, p…, minor…] · kernel over its axes in the same order, the kernel's axes as
		// they are: the pass that follows (relayout) lays out whichever operand is invariant,
		// once.
		lhs := Reshape(patches, slices.Concat(spatial, minorDims)...)
		return toOutputAxes(Dot(lhs, k).General(axisRange(r+1, r+1), nil, kernelAxes, nil), c)
	}
	// The kernel laid out as [minor…, o], then [(minor…), o]: with groups the minor axes are
	// (j…, c) (convPatches).
	k = Reshape(transposed(k, append(kernelAxes, c.axes.KernelOutputChannels)), kk*cIn, cOut)
	var y *Node // [n', p…, o]
	switch {
	case c.channelGroups == 1 && c.batchGroups == 1:
		y = Dot(patches, k).General([]int{r + 1}, nil, []int{0}, nil)
	case c.channelGroups > 1:
		g := c.channelGroups
		// patches [n, p…, j, g, c'] · kernel [j, c', g, o'] over (j, c'), batched over g.
		lhs := Reshape(patches, slices.Concat(spatial, []int{kk, g, cIn})...)
		rhs := Reshape(k, kk, cIn, g, cOut/g)
		y = Dot(lhs, rhs).General([]int{r + 1, r + 3}, []int{r + 2}, []int{0, 1}, []int{2}) // [g, n, p…, o']
		y = TransposeAllAxes(y, slices.Concat(axisRange(1, r+1), []int{0, r + 2})...)
		y = Reshape(y, slices.Concat(spatial, []int{cOut})...)
	default:
		g := c.batchGroups
		// patches [g, n', p…, (j, c)] · kernel [(j, c), g, o'] over (j, c), batched over g.
		lhs := Reshape(patches, slices.Concat([]int{g, n / g}, outSpatial, []int{kk * cIn})...)
		rhs := Reshape(k, kk*cIn, g, cOut/g)
		y = Dot(lhs, rhs).General([]int{r + 2}, []int{0}, []int{0}, []int{1}) // [g, n', p…, o']
		y = TransposeAllAxes(y, slices.Concat(axisRange(1, r+1), []int{0, r + 2})...)
		y = Reshape(y, slices.Concat([]int{n / g}, outSpatial, []int{cOut})...)
	}
	return toOutputAxes(y, c)
}

// toOutputAxes returns y, [batch, spatial…, channels], with its axes in the convolution's
// output layout.
func toOutputAxes(y *Node, c convParams) *Node {
	r := len(c.axes.InputSpatial)
	perm := make([]int, r+2)
	perm[c.axes.OutputBatch], perm[c.axes.OutputChannels] = 0, r+1
	for i, axis := range c.axes.OutputSpatial {
		perm[axis] = i + 1
	}
	return transposed(y, perm)
}

// transposed returns x with its axes permuted by perm (axis k of the result is axis perm[k] of
// x), x itself for the identity.
func transposed(x *Node, perm []int) *Node {
	if slices.Equal(perm, axisRange(0, x.Rank())) {
		return x
	}
	return TransposeAllAxes(x, perm...)
}

// convPatches returns the patches of the convolution's input x, [n, p…, (j, c)] with the
// kernel's spatial positions j (of sizes kernelSpatial) major and the channels c minor, or
// [n, p…, (c, j)] when channelsMajor, the output's spatial dimensions p, and channelsMajor. x is
// laid out as [n, spatial…, c] ([n, c, spatial…] when channelsMajor), dilated and padded by the
// non-negative paddings (Pad, whose VJP GoMLX builds for those alone), and cut (a negative
// padding moves the cuts) once per kernel position (x̂ at j·δ + p·s over p) or once per output
// position (x̂ at p·s + j·δ over j), whichever are fewer, so that the convolutions of reverse
// mode whose kernel is an activation (GoMLX's VJP with respect to a kernel) are gathered in as
// few pieces as forward ones; the pieces are concatenated. The pieces of output positions take
// the channels major when the kernel lists its input channels before its spatial axes (as that
// VJP's kernel, the cotangent [n, spatial…, o], does), so that the product contracts the kernel
// in the order it is laid out.
func (l lowering) convPatches(x *Node, kernelSpatial []int, c convParams) (patches *Node, outSpatial []int, channelsMajor bool) {
	r := len(c.axes.InputSpatial)
	outSpatial = make([]int, r)
	for i, axis := range c.axes.InputSpatial {
		dilated := (x.Shape().Dim(axis)-1)*c.inputDilations[i] + 1
		span := (kernelSpatial[i]-1)*c.kernelDilations[i] + 1
		outSpatial[i] = (dilated+c.paddings[i][0]+c.paddings[i][1]-span)/c.strides[i] + 1
	}
	perKernelPosition := prod(kernelSpatial) <= prod(outSpatial)
	channelsMajor = !perKernelPosition && c.channelGroups == 1 && c.batchGroups == 1 &&
		c.axes.KernelInputChannels < slices.Min(c.axes.KernelSpatial)
	sp, chAxis := 1, r+1 // x's first spatial axis and its channels axis
	if channelsMajor {
		sp, chAxis = 2, 1
		x = transposed(x, slices.Concat([]int{c.axes.InputBatch, c.axes.InputChannels}, c.axes.InputSpatial))
	} else {
		x = transposed(x, slices.Concat([]int{c.axes.InputBatch}, c.axes.InputSpatial, []int{c.axes.InputChannels}))
	}
	n, ch := x.Shape().Dim(0), x.Shape().Dim(chAxis)
	pads := make([]PadAxis, r+2)
	begin := make([]int, r) // where x̂ begins in x padded by the non-negative paddings
	for i := range r {
		lo, hi := c.paddings[i][0], c.paddings[i][1]
		pads[sp+i] = PadAxis{Start: max(lo, 0), End: max(hi, 0), Interior: c.inputDilations[i] - 1}
		begin[i] = max(-lo, 0)
	}
	if slices.ContainsFunc(pads, func(p PadAxis) bool { return p != PadAxis{} }) {
		x = Pad(x, ScalarZero(x.Graph(), x.DType()), pads...)
	}
	// The pieces: count positions of step t each, starting at offset·(index of the piece).
	pieceDims, pieceCount, step, offset := outSpatial, kernelSpatial, c.strides, c.kernelDilations
	if !perKernelPosition {
		pieceDims, pieceCount, step, offset = kernelSpatial, outSpatial, c.kernelDilations, c.strides
	}
	var pieces []*Node
	for k := range prod(pieceCount) {
		starts, limits, strides := make([]int, r+2), slices.Clone(x.Shape().Dimensions), slices.Repeat([]int{1}, r+2)
		for i, ki := range unravel(k, pieceCount) {
			starts[sp+i] = begin[i] + ki*offset[i]
			limits[sp+i] = starts[sp+i] + (pieceDims[i]-1)*step[i] + 1
			strides[sp+i] = step[i]
		}
		piece := l.cut(x, starts, limits, strides)
		if !perKernelPosition {
			piece = Reshape(piece, n, 1, prod(kernelSpatial)*ch)
		}
		pieces = append(pieces, piece)
	}
	if perKernelPosition {
		if len(pieces) == 1 {
			return pieces[0], outSpatial, false
		}
		return Concatenate(pieces, r+1), outSpatial, false
	}
	patches = Reshape(Concatenate(pieces, 1), slices.Concat([]int{n}, outSpatial, []int{prod(kernelSpatial) * ch})...)
	return patches, outSpatial, channelsMajor
}

// unravel returns the multi-index of flat index k in an array of dimensions dims (row-major).
func unravel(k int, dims []int) []int {
	idx := make([]int, len(dims))
	for i := len(dims) - 1; i >= 0; i-- {
		idx[i] = k % dims[i]
		k /= dims[i]
	}
	return idx
}

// prod returns the product of dims (1 for none).
func prod(dims []int) int {
	p := 1
	for _, d := range dims {
		p *= d
	}
	return p
}
