package jvp

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
)

// benchConvCases are float32 convolutions of the zoo's models and a few common layers beside
// them: the digits CNN's two (b = 128, 8×8), the text CNN's (b = 32, 16 characters, 32
// channels, a kernel of 5), the CNN's second with 4 output channels; at b = 32 a 3×3 layer of
// 32 → 64 channels on 16×16, a strided 5×5, a depthwise 3×3 and one with 4 output channels per
// input channel; a 1×1.
var benchConvCases = []convCase{
	{name: "cnn-conv1", n: 128, c: 1, out: 16, spatial: []int{8, 8}, kernel: []int{3, 3}, paddings: [][2]int{{1, 1}, {1, 1}}},
	{name: "cnn-conv2", n: 128, c: 16, out: 16, spatial: []int{8, 8}, kernel: []int{3, 3}, paddings: [][2]int{{1, 1}, {1, 1}}},
	{name: "cnn-conv2-to-4", n: 128, c: 16, out: 4, spatial: []int{8, 8}, kernel: []int{3, 3}, paddings: [][2]int{{1, 1}, {1, 1}}},
	{name: "text-cnn", n: 32, c: 32, out: 32, spatial: []int{16}, kernel: []int{5}},
	{name: "3x3-32to64", n: 32, c: 32, out: 64, spatial: []int{16, 16}, kernel: []int{3, 3}, paddings: [][2]int{{1, 1}, {1, 1}}},
	{name: "5x5-stride2", n: 32, c: 16, out: 32, spatial: []int{28, 28}, kernel: []int{5, 5}, strides: []int{2, 2},
		paddings: [][2]int{{2, 2}, {2, 2}}},
	{name: "depthwise-3x3", n: 32, c: 64, out: 64, spatial: []int{16, 16}, kernel: []int{3, 3}, groups: 64,
		paddings: [][2]int{{1, 1}, {1, 1}}},
	{name: "depthwise-3x3-x4", n: 32, c: 16, out: 64, spatial: []int{16, 16}, kernel: []int{3, 3}, groups: 16,
		paddings: [][2]int{{1, 1}, {1, 1}}},
	{name: "1x1", n: 128, c: 64, out: 64, spatial: []int{8, 8}, kernel: []int{1, 1}},
}

// BenchmarkConvLowering times, on the test backend, each benchConvCase's convolution (forward)
// and the two convolutions of its VJP (GoMLX's, with respect to the input and to the kernel) as
// the backend computes them (direct) and lowered to products as the products' convolution pass
// lowers them, whatever their channels (lower with minChannels 0; every input a parameter, so
// that the patches are formed on every call, where the products form those of a primal
// activation once per step): what minLoweredChannels is chosen from. Each iteration calls the
// two in turn, so that both see the same load; it reports both in ms, their ratio, and
// pass-lowers, 1 when the pass lowers the convolution (minLoweredChannels), else 0. Run it in
// the SIMD build: GOEXPERIMENT=simd go test -run '^$' -bench ConvLowering ./jvp (with
// GODEBUG=cpu.avx512f=off for the AVX2 kernels).
func BenchmarkConvLowering(b *testing.B) {
	for _, tc := range benchConvCases {
		xDims, kDims, _ := tc.shapes()
		for _, product := range []struct {
			name  string
			build func(x, k, u *Node) *Node
		}{
			{"forward", func(x, k, _ *Node) *Node { return tc.conv(x, k) }},
			{"VJP-input", func(x, k, u *Node) *Node { return Gradient(ReduceAllSum(Mul(tc.conv(x, k), u)), x)[0] }},
			{"VJP-kernel", func(x, k, u *Node) *Node { return Gradient(ReduceAllSum(Mul(tc.conv(x, k), u)), k)[0] }},
		} {
			b.Run(tc.name+"/"+product.name, func(b *testing.B) {
				g := NewGraph(testBackend, "shape")
				xp, kp := Parameter(g, "x", shapes.Make(dtypes.Float32, xDims...)), Parameter(g, "k", shapes.Make(dtypes.Float32, kDims...))
				y := tc.conv(xp, kp)
				yDims := y.Shape().Dimensions
				passLowers := 0.0
				if countConvs(lowerConvolutions([]*Node{product.build(xp, kp, Parameter(g, "u", y.Shape()))}, []*Node{xp, kp})) == 0 {
					passLowers = 1
				}
				g.Finalize()
				rng := rand.New(rand.NewPCG(1, 2))
				x, k, u := randTensor(rng, xDims), randTensor(rng, kDims), randTensor(rng, yDims)
				direct := MustNewExec(testBackend, product.build)
				lowered := MustNewExec(testBackend, func(x, k, u *Node) *Node {
					return lower([]*Node{product.build(x, k, u)}, []*Node{x, k, u}, lowering{})[0]
				})
				call := func(e *Exec) time.Duration {
					start := time.Now()
					for _, r := range e.MustCall(x, k, u) {
						r.MustFinalizeAll()
					}
					return time.Since(start)
				}
				call(direct) // compiles
				call(lowered)
				var tDirect, tLowered time.Duration
				b.ResetTimer()
				for range b.N {
					tDirect += call(direct)
					tLowered += call(lowered)
				}
				ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 / float64(b.N) }
				b.ReportMetric(ms(tDirect), "direct-ms")
				b.ReportMetric(ms(tLowered), "lowered-ms")
				b.ReportMetric(float64(tLowered)/float64(tDirect), "lowered/direct")
				b.ReportMetric(passLowers, "pass-lowers")
			})
		}
	}
}

// randTensor returns a float32 tensor of dims with entries uniform in [−1, 1).
func randTensor(rng *rand.Rand, dims []int) *tensors.Tensor {
	v := make([]float32, size(dims))
	for i := range v {
		v[i] = 2*rng.Float32() - 1
	}
	return tensors.FromFlatDataAndDimensions(v, dims...)
}
