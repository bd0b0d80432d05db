package jvp

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"

	"github.com/fgn-paper/fgn/internal/ref"
)

// convCase is a convolution: input [n, spatial…, c] (or [n, c, spatial…] when channelsFirst),
// kernel [kernel…, c/groups, out] (or [out, c/groups, kernel…]).
type convCase struct {
	name                                     string
	n, c, out                                int
	spatial, kernel                          []int
	strides, inputDilations, kernelDilations []int
	paddings                                 [][2]int
	groups, batchGroups                      int
	channelsFirst                            bool
}

var convCases = []convCase{
	{name: "3×3 same padding (the zoo's CNN)", n: 3, c: 4, out: 5, spatial: []int{6, 6}, kernel: []int{3, 3},
		paddings: [][2]int{{1, 1}, {1, 1}}},
	{name: "one input channel, no padding", n: 2, c: 1, out: 3, spatial: []int{5, 7}, kernel: []int{3, 2}},
	{name: "strides 2 and 3, asymmetric padding", n: 2, c: 3, out: 4, spatial: []int{9, 8}, kernel: []int{3, 2},
		strides: []int{2, 3}, paddings: [][2]int{{1, 2}, {0, 1}}},
	{name: "kernel dilation", n: 2, c: 3, out: 2, spatial: []int{9, 8}, kernel: []int{3, 3},
		kernelDilations: []int{2, 3}, paddings: [][2]int{{2, 2}, {3, 1}}},
	{name: "input dilation and stride", n: 2, c: 2, out: 3, spatial: []int{4, 5}, kernel: []int{3, 3},
		inputDilations: []int{2, 3}, strides: []int{1, 2}, paddings: [][2]int{{2, 1}, {1, 2}}},
	{name: "negative padding crops", n: 2, c: 2, out: 3, spatial: []int{8, 7}, kernel: []int{2, 3},
		paddings: [][2]int{{-1, 1}, {2, -2}}},
	{name: "channel groups", n: 2, c: 6, out: 4, spatial: []int{5, 5}, kernel: []int{3, 3},
		groups: 2, paddings: [][2]int{{1, 1}, {1, 1}}},
	{name: "depthwise with strides", n: 2, c: 3, out: 6, spatial: []int{7, 6}, kernel: []int{3, 3},
		groups: 3, strides: []int{2, 2}},
	{name: "batch groups", n: 4, c: 3, out: 4, spatial: []int{5, 6}, kernel: []int{3, 3},
		batchGroups: 2, paddings: [][2]int{{0, 1}, {1, 1}}},
	{name: "channels first", n: 2, c: 3, out: 4, spatial: []int{6, 5}, kernel: []int{3, 3},
		strides: []int{2, 1}, paddings: [][2]int{{1, 1}, {1, 1}}, channelsFirst: true},
	{name: "kernel larger than the output", n: 3, c: 2, out: 2, spatial: []int{6, 5}, kernel: []int{5, 4}},
	{name: "channels first, kernel larger than the output", n: 2, c: 3, out: 2, spatial: []int{5, 6}, kernel: []int{5, 3},
		paddings: [][2]int{{0, 1}, {1, 0}}, channelsFirst: true},
	{name: "1×1 with stride", n: 2, c: 3, out: 2, spatial: []int{5, 4}, kernel: []int{1, 1}, strides: []int{2, 2}},
	{name: "one spatial axis", n: 2, c: 3, out: 2, spatial: []int{9}, kernel: []int{5},
		strides: []int{2}, paddings: [][2]int{{1, 2}}},
	{name: "three spatial axes", n: 2, c: 2, out: 3, spatial: []int{4, 5, 6}, kernel: []int{3, 1, 3},
		paddings: [][2]int{{1, 1}, {0, 0}, {2, 2}}, kernelDilations: []int{1, 1, 2}},
}

// shapes returns the case's input, kernel and axes.
func (tc convCase) shapes() (x, k []int, axes compute.ConvolveAxesConfig) {
	r := len(tc.spatial)
	groups := max(tc.groups, 1)
	if tc.channelsFirst {
		x = slices.Concat([]int{tc.n, tc.c}, tc.spatial)
		k = slices.Concat([]int{tc.out, tc.c / groups}, tc.kernel)
		spatial := axisRange(2, r)
		return x, k, compute.ConvolveAxesConfig{InputBatch: 0, InputChannels: 1, InputSpatial: spatial,
			KernelOutputChannels: 0, KernelInputChannels: 1, KernelSpatial: spatial,
			OutputBatch: 0, OutputChannels: 1, OutputSpatial: spatial}
	}
	x = slices.Concat([]int{tc.n}, tc.spatial, []int{tc.c})
	k = slices.Concat(tc.kernel, []int{tc.c / groups, tc.out})
	return x, k, compute.ConvolveAxesConfig{InputBatch: 0, InputChannels: r + 1, InputSpatial: axisRange(1, r),
		KernelInputChannels: r, KernelOutputChannels: r + 1, KernelSpatial: axisRange(0, r),
		OutputBatch: 0, OutputChannels: r + 1, OutputSpatial: axisRange(1, r)}
}

func (tc convCase) conv(x, k *Node) *Node {
	_, _, axes := tc.shapes()
	return ConvGeneral(x, k, axes, tc.strides, tc.paddings, tc.inputDilations, tc.kernelDilations,
		max(tc.groups, 1), max(tc.batchGroups, 1))
}

// TestLowerConvolutions checks, in float64 on every convCase, that the convolution lowered to a
// matrix product equals GoMLX's to 1e-12, as a model's forward pass (LowerConvolutions, patches
// cut by Slice) and as the products of Linearize (the pass lowerConvolutions, patches cut by
// Pad), with no ConvGeneral left (nor, in the
// products, a Slice of stride 1); that the pass lowers the two convolutions of GoMLX's VJP (with
// respect to the input and to the kernel, convolutions with input dilations, swapped axes and an
// activation as their kernel) to the same values; and that the lowered products are adjoint,
// ⟨y(ẋ, k), u⟩ = ⟨ẋ, ∂ₓ⟨y, u⟩⟩ and ⟨y(x, k̇), u⟩ = ⟨k̇, ∂ₖ⟨y, u⟩⟩, both with the pass's VJPs and with
// GoMLX's reverse mode of the lowered forward pass, itself passed through lowerConvolutions (its
// Slice nodes cut by Pad). GoMLX's VJP of ConvGeneral with respect to the input is shifted by one
// position when a kernel's size is even (see compat.go: compatConvVJPEvenKernel): on those cases
// the pass reproduces it, and the first identity is checked on the lowered forward pass's VJP
// alone (Linearize's VJP uses that one there: TestLinearizeConvolutions).
func TestLowerConvolutions(t *testing.T) {
	for _, tc := range convCases {
		t.Run(tc.name, func(t *testing.T) {
			xDims, kDims, _ := tc.shapes()
			rng := rand.New(rand.NewPCG(5, 17))
			x, k := ref.RandVec(rng, size(xDims)), ref.RandVec(rng, size(kDims))
			dx, dk := ref.RandVec(rng, size(xDims)), ref.RandVec(rng, size(kDims))
			var yDims []int
			// The cotangent's shape is the output's: build once to read it.
			run(t, func(in []*Node) []*Node {
				y := tc.conv(in[0], in[1])
				yDims = y.Shape().Dimensions
				return []*Node{y}
			}, tensors.FromFlatDataAndDimensions(x, xDims...), tensors.FromFlatDataAndDimensions(k, kDims...))
			u := ref.RandVec(rng, size(yDims))
			left, unitSlices := 0, 0
			out := run(t, func(in []*Node) []*Node {
				x, k, u, dx, dk := in[0], in[1], in[2], in[3], in[4]
				y := tc.conv(x, k)
				vjp := Gradient(ReduceAllSum(Mul(y, u)), x, k)
				lowered := lower([]*Node{y}, nil, lowering{differentiable: true})[0]
				loweredVJP := Gradient(ReduceAllSum(Mul(lowered, u)), x, k)
				products := slices.Concat(lower(vjp, []*Node{u}, lowering{}),
					lower([]*Node{tc.conv(dx, k), tc.conv(x, dk)}, []*Node{dx, dk}, lowering{}),
					lower(loweredVJP, []*Node{u}, lowering{}))
				outs := slices.Concat([]*Node{lowered}, products)
				left = countConvs(outs)
				for _, n := range Dependents(products, []*Node{u, dx, dk}) {
					if n.Type() == NodeTypeSlice && unitStrides(n) {
						unitSlices++
					}
				}
				return slices.Concat([]*Node{y}, vjp, outs)
			}, tensors.FromFlatDataAndDimensions(x, xDims...), tensors.FromFlatDataAndDimensions(k, kDims...),
				tensors.FromFlatDataAndDimensions(u, yDims...), tensors.FromFlatDataAndDimensions(dx, xDims...),
				tensors.FromFlatDataAndDimensions(dk, kDims...))
			if left != 0 {
				t.Errorf("%d ConvGeneral nodes left in the lowered graphs", left)
			}
			if unitSlices != 0 {
				t.Errorf("the pass left %d Slice nodes of stride 1 in the products", unitSlices)
			}
			y, vx, vk, ly, lvx, lvk, ldx, ldk, fvx, fvk := out[0], out[1], out[2], out[3], out[4], out[5], out[6],
				out[7], out[8], out[9]
			ref.Check(t, "LowerConvolutions vs GoMLX's convolution (relative)", ref.RelErr(ly, y), 1e-12)
			ref.Check(t, "lowered VJP wrt the input vs GoMLX's (relative)", ref.RelErr(lvx, vx), 1e-12)
			ref.Check(t, "lowered VJP wrt the kernel vs GoMLX's (relative)", ref.RelErr(lvk, vk), 1e-12)
			ref.Check(t, "reverse mode of LowerConvolutions wrt the kernel vs GoMLX's (relative)", ref.RelErr(fvk, vk), 1e-12)
			ref.Check(t, "⟨y(x, k̇), u⟩ vs ⟨k̇, ∂ₖ⟨y, u⟩⟩ (relative)", relDiff(ref.Dot(ldk, u), ref.Dot(dk, lvk)), 1e-12)
			ref.Check(t, "⟨y(ẋ, k), u⟩ vs ⟨ẋ, ∂ₓ⟨y, u⟩⟩, reverse mode of LowerConvolutions (relative)",
				relDiff(ref.Dot(ldx, u), ref.Dot(dx, fvx)), 1e-12)
			if !slices.ContainsFunc(tc.kernel, func(k int) bool { return k%2 == 0 }) {
				ref.Check(t, "⟨y(ẋ, k), u⟩ vs ⟨ẋ, ∂ₓ⟨y, u⟩⟩ (relative)", relDiff(ref.Dot(ldx, u), ref.Dot(dx, lvx)), 1e-12)
				ref.Check(t, "reverse mode of LowerConvolutions wrt the input vs GoMLX's (relative)", ref.RelErr(fvx, vx), 1e-12)
			}
		})
	}
}

// TestLinearizeConvolutions checks Linearize on every convCase, as it is and with its channel
// counts times minLoweredChannels, its products built through the convolution pass (which
// lowers every convolution of the wider cases and keeps those with fewer output channels per
// group) and, for the kernels of even size, convAdjoint: J v equals GoMLX's convolutions of the
// tangents (a convolution is bilinear, so J (ẋ, k̇) = y(ẋ, k) + y(x, k̇)) to 1e-12, and
// ⟨J (ẋ, k̇), u⟩ = ⟨ẋ, Jₓᵀu⟩ + ⟨k̇, Jₖᵀu⟩ to 1e-12.
func TestLinearizeConvolutions(t *testing.T) {
	for _, narrow := range convCases {
		for _, width := range []int{1, minLoweredChannels} {
			tc := narrow
			tc.c, tc.out = width*tc.c, width*tc.out
			t.Run(fmt.Sprintf("%s, channels ×%d", tc.name, width), func(t *testing.T) {
				xDims, kDims, _ := tc.shapes()
				rng := rand.New(rand.NewPCG(7, 19))
				x, k := ref.RandVec(rng, size(xDims)), ref.RandVec(rng, size(kDims))
				dx, dk := ref.RandVec(rng, size(xDims)), ref.RandVec(rng, size(kDims))
				var yDims []int
				run(t, func(in []*Node) []*Node {
					y := tc.conv(in[0], in[1])
					yDims = y.Shape().Dimensions
					return []*Node{y}
				}, tensors.FromFlatDataAndDimensions(x, xDims...), tensors.FromFlatDataAndDimensions(k, kDims...))
				u := ref.RandVec(rng, size(yDims))
				left := 0
				out := run(t, func(in []*Node) []*Node {
					x, k, u, dx, dk := in[0], in[1], in[2], in[3], in[4]
					lin := Linearize([]*Node{tc.conv(x, k)}, []*Node{x, k})
					products := slices.Concat(lin.JVP(dx, dk), lin.VJP(u))
					left = countConvs(Dependents(products, []*Node{u, dx, dk}))
					return slices.Concat(products, []*Node{Add(tc.conv(dx, k), tc.conv(x, dk))})
				}, tensors.FromFlatDataAndDimensions(x, xDims...), tensors.FromFlatDataAndDimensions(k, kDims...),
					tensors.FromFlatDataAndDimensions(u, yDims...), tensors.FromFlatDataAndDimensions(dx, xDims...),
					tensors.FromFlatDataAndDimensions(dk, kDims...))
				if width == minLoweredChannels && left != 0 {
					t.Errorf("%d ConvGeneral nodes left in the products", left)
				}
				jv, vx, vk, want := out[0], out[1], out[2], out[3]
				ref.Check(t, "J v vs y(ẋ, k) + y(x, k̇) (relative)", ref.RelErr(jv, want), 1e-12)
				ref.Check(t, "⟨J v, u⟩ vs ⟨v, Jᵀu⟩ (relative)", relDiff(ref.Dot(jv, u), ref.Dot(dx, vx)+ref.Dot(dk, vk)), 1e-12)
			})
		}
	}
}

// TestLowerConvolutionsKeepsNarrow checks that LowerConvolutions and the products' pass keep a
// convolution with fewer than minLoweredChannels output channels per group and lower one with
// that many (the graphs are built, never run).
func TestLowerConvolutionsKeepsNarrow(t *testing.T) {
	for _, tc := range []struct {
		conv convCase
		kept bool
	}{
		{convCase{name: "16 → 4", n: 8, c: 16, out: 4, spatial: []int{8, 8}, kernel: []int{3, 3}}, true},
		{convCase{name: "16 → 8", n: 8, c: 16, out: 8, spatial: []int{8, 8}, kernel: []int{3, 3}}, false},
		{convCase{name: "depthwise, 2 per group", n: 8, c: 16, out: 32, spatial: []int{8, 8}, kernel: []int{3, 3}, groups: 16}, true},
		{convCase{name: "2 groups of 8", n: 8, c: 16, out: 16, spatial: []int{8, 8}, kernel: []int{3, 3}, groups: 2}, false},
		{convCase{name: "batch groups, 4 per group", n: 8, c: 16, out: 8, spatial: []int{8, 8}, kernel: []int{3, 3}, batchGroups: 2}, true},
	} {
		xDims, kDims, _ := tc.conv.shapes()
		g := NewGraph(testBackend, "narrow")
		x := Parameter(g, "x", shapes.Make(dtypes.Float32, xDims...))
		k := Parameter(g, "k", shapes.Make(dtypes.Float32, kDims...))
		y := tc.conv.conv(x, k)
		want := 0
		if tc.kept {
			want = 1
		}
		if got := countConvs(LowerConvolutions(y)); got != want {
			t.Errorf("%s: LowerConvolutions left %d ConvGeneral nodes, want %d", tc.conv.name, got, want)
		}
		if got := countConvs(lowerConvolutions([]*Node{y}, []*Node{x})); got != want {
			t.Errorf("%s: the products' pass left %d ConvGeneral nodes, want %d", tc.conv.name, got, want)
		}
		g.Finalize()
	}
}

// relDiff returns |a − b| / max(|a|, |b|).
func relDiff(a, b float64) float64 { return math.Abs(a-b) / math.Max(math.Abs(a), math.Abs(b)) }

// countConvs returns the number of ConvGeneral nodes that outs depend on.
func countConvs(outs []*Node) int {
	seen := make(map[*Node]bool)
	count := 0
	var visit func(n *Node)
	visit = func(n *Node) {
		if seen[n] {
			return
		}
		seen[n] = true
		if n.Type() == NodeTypeConvGeneral {
			count++
		}
		for _, x := range n.Inputs() {
			visit(x)
		}
	}
	for _, out := range outs {
		visit(out)
	}
	return count
}

// TestLowerConvolutionsKeepsLarge checks that a convolution whose patches would exceed
// maxPatchBytes stays a ConvGeneral (the graph is built, never run).
func TestLowerConvolutionsKeepsLarge(t *testing.T) {
	tc := convCase{n: 64, c: 64, out: 64, spatial: []int{256, 256}, kernel: []int{3, 3}, paddings: [][2]int{{1, 1}, {1, 1}}}
	xDims, kDims, _ := tc.shapes()
	g := NewGraph(testBackend, "large")
	x := Parameter(g, "x", shapes.Make(dtypes.Float32, xDims...))
	k := Parameter(g, "k", shapes.Make(dtypes.Float32, kDims...))
	y := tc.conv(x, k)
	if got := countConvs(LowerConvolutions(y)); got != 1 {
		t.Errorf("a convolution with %.1f GiB of patches: %d ConvGeneral nodes after lowering, want it kept (1)",
			float64(64*256*256*9*64*4)/(1<<30), got)
	}
}
