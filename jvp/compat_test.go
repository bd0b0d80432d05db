package jvp

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/nn"
	"github.com/gomlx/gomlx/support/exceptions"

	"github.com/fgn-paper/fgn/internal/compatcheck"
	"github.com/fgn-paper/fgn/internal/graphrun"
	"github.com/fgn-paper/fgn/internal/ref"
)

// The reproduction tests of the entries of compat.go, one TestCompat<Entry> each. Each passes
// while the upstream gap is there; its failure means it is closed, and says which workaround to
// delete.

// TestCompatOpParams is the canary of params.go: it builds a graph with every op whose parameters
// params.go reads, with parameters other than their defaults, and checks that each reader returns
// them. A reader that fails names the field GoMLX renamed or retyped.
func TestCompatOpParams(t *testing.T) {
	if !testBackend.Capabilities().Operations[compute.OpTypeFusedDense] {
		t.Skipf("backend %s does not fuse Dense", testBackend.Name())
	}
	g := NewGraph(testBackend, "canary")
	f32 := func(name string, dims ...int) *Node { return Parameter(g, name, shapes.Make(dtypes.Float32, dims...)) }
	x, w, b := f32("x", 2, 3, 4), f32("w", 5, 4), f32("b", 5)

	dot := Dot(x, f32("y", 2, 4, 6)).WithAccumulatorDType(dtypes.Float64).WithOutputDType(dtypes.Float32).
		General([]int{2}, []int{0}, []int{1}, []int{0})
	dense := BackendFusedDense(x, w, b, compute.DenseConfig{
		Activation: compute.ActivationConfig{Type: compute.ActivationRelu}, WeightLayout: compute.DenseLayoutOutputsInput})
	grads := Gradient(ReduceAllSum(dense), x, w)
	split := grads[1]
	denseVJP := split.Inputs()[0]
	pool := BackendReduceWindow(f32("p", 1, 6, 7, 2), compute.ReduceOpMin, []int{1, 3, 2, 1}, []int{1, 2, 1, 1},
		nil, nil, [][2]int{{0, 0}, {1, 1}, {0, 1}, {0, 0}})
	dilated := BackendReduceWindow(f32("q", 1, 6, 7, 2), compute.ReduceOpMax, []int{1, 2, 2, 1}, nil,
		[]int{1, 2, 1, 1}, []int{1, 1, 2, 1}, nil)
	axes := compute.ConvolveAxesConfig{
		InputBatch: 0, InputChannels: 3, InputSpatial: []int{1, 2},
		KernelInputChannels: 2, KernelOutputChannels: 3, KernelSpatial: []int{0, 1},
		OutputBatch: 0, OutputChannels: 3, OutputSpatial: []int{1, 2},
	}
	conv := ConvGeneral(f32("c", 2, 7, 8, 4), f32("k", 3, 2, 2, 6), axes, []int{2, 1}, [][2]int{{1, 1}, {0, 1}},
		[]int{1, 1}, []int{1, 2}, 2, 1)
	reduceMax, reduceMin := ReduceMax(x, 2, 0), ReduceMin(x, 1)
	broadcast := ExpandAndBroadcast(f32("v", 3), []int{2, 3, 5}, []int{0, 2})
	transpose := TransposeAllAxes(x, 2, 0, 1)
	sliced := Slice(x, AxisRange(1, 2), AxisRange(0, 3).Stride(2), AxisRange())
	qkv := f32("a", 2, 3, 1, 4)
	attentionConfig := &compute.ScaledDotProductAttentionConfig{Scale: 0.25, Causal: true}
	att, _ := BackendFusedScaledDotProductAttention(qkv, qkv, qkv, compute.AttentionAxesLayoutBSHD, attentionConfig)
	layerNorm := nn.LayerNorm(f32("l", 3, 4), []int{1}, 1e-3, nil, nil, nil)

	for _, tc := range []struct {
		op        *Node
		read      func() any
		want      any
		wantOpTyp NodeType
	}{
		{dot, func() any { return dotGeneralAxes(dot) }, dotAxes{lhsContracting: []int{2}, lhsBatch: []int{0},
			rhsContracting: []int{1}, rhsBatch: []int{0},
			config: compute.DotGeneralConfig{AccumulatorDType: dtypes.Float64, OutputDType: dtypes.Float32}}, NodeTypeDotGeneral},
		{dense, func() any { return denseConfig(dense) }, compute.DenseConfig{
			Activation: compute.ActivationConfig{Type: compute.ActivationRelu}, WeightLayout: compute.DenseLayoutOutputsInput}, NodeTypeFusedDense},
		{denseVJP, func() any { return denseConfig(denseVJP) }, compute.DenseConfig{
			Activation: compute.ActivationConfig{Type: compute.ActivationRelu}, WeightLayout: compute.DenseLayoutOutputsInput}, NodeTypeFusedDenseVJP},
		{split, func() any { return splitIndex(split) }, 1, NodeTypeSplitNode},
		{pool, func() any { return reduceWindow(pool) }, window{reduction: compute.ReduceOpMin,
			dimensions: []int{1, 3, 2, 1}, strides: []int{1, 2, 1, 1},
			paddings: [][2]int{{0, 0}, {1, 1}, {0, 1}, {0, 0}}}, NodeTypeReduceWindow},
		{dilated, func() any { return reduceWindow(dilated).inputDilations }, []int{1, 2, 1, 1}, NodeTypeReduceWindow},
		{dilated, func() any { return reduceWindow(dilated).dilations }, []int{1, 1, 2, 1}, NodeTypeReduceWindow},
		{conv, func() any { return convGeneral(conv) }, convolution{axes: axes, strides: []int{2, 1},
			paddings: [][2]int{{1, 1}, {0, 1}}, inputDilations: []int{1, 1}, kernelDilations: []int{1, 2},
			channelGroupCount: 2, batchGroupCount: 1}, NodeTypeConvGeneral},
		{reduceMax, func() any { return reducedAxes(reduceMax) }, []int{0, 2}, NodeTypeReduceMax},
		{reduceMin, func() any { return reducedAxes(reduceMin) }, []int{1}, NodeTypeReduceMin},
		{broadcast, func() any { return broadcastAxes(broadcast) }, []int{1}, NodeTypeBroadcastInDim},
		{transpose, func() any { return permutation(transpose) }, []int{2, 0, 1}, NodeTypeTranspose},
		{sliced, func() any { return sliceBounds(sliced) }, slice{starts: []int{1, 0, 0}, limits: []int{2, 3, 4},
			strides: []int{1, 2, 1}}, NodeTypeSlice},
		{att, func() any {
			layout, options := attention(att)
			return fmt.Sprint(layout, options == attentionConfig, *options)
		}, fmt.Sprint(compute.AttentionAxesLayoutBSHD, true, *attentionConfig), NodeTypeFusedScaledDotProductAttention},
		{layerNorm, func() any {
			alt := vjpAlternates(layerNorm)
			return fmt.Sprint(len(alt), alt[0].Shape())
		}, fmt.Sprint(1, layerNorm.Shape()), NodeTypeFusedLayerNorm},
	} {
		if tc.op.Type() != tc.wantOpTyp {
			t.Errorf("the canary built %s where it meant %s: fix the test", tc.op.Type(), tc.wantOpTyp)
			continue
		}
		var got any
		if err := exceptions.TryCatch[error](func() { got = tc.read() }); err != nil {
			t.Errorf("%s: %v", tc.op.Type(), err)
			continue
		}
		if g, w := fmt.Sprintf("%+v", got), fmt.Sprintf("%+v", tc.want); g != w {
			t.Errorf("%s: params.go reads %s, the graph was built with %s", tc.op.Type(), g, w)
		}
	}
	if _, ok := any(dot).(interface{ OpInputs() NodeInputs }); ok {
		fixed(t, compatOpParams, "graph.Node has the method OpInputs")
	}
}

// TestCompatReduceMaxTies: f(w) = max(w², w²) at w = 2, whose derivative is 4.
func TestCompatReduceMaxTies(t *testing.T) {
	out := run(t, func(in []*Node) []*Node {
		w := in[0]
		f := func(w *Node) *Node { return ReduceMax(Stack([]*Node{Square(w), Square(w)}, 0)) }
		return []*Node{Gradient(f(w), w)[0], JVP([]*Node{f(w)}, in[:1], []*Node{OnesLike(w)})[0]}
	}, 2.0)
	if out[1][0] != 4 {
		t.Errorf("J v of max(w², w²) at w = 2 along 1 is %v, want 4", out[1][0])
	}
	if out[0][0] == 4 {
		fixed(t, compatReduceMaxTies, "the gradient of max(w², w²) at w = 2 is 4")
	}
	t.Logf("still present: the gradient of max(w², w²) at w = 2 is %v", out[0][0])
}

// doubleVJPError returns the error of building J v = ∇_a⟨J_wᵀa, v⟩ for y = op(x, w) by two
// reverse passes, nil if GoMLX builds and runs it.
func doubleVJPError(op func(x, w *Node) *Node, xShape, wShape shapes.Shape) error {
	_, err := graphrun.Run(testBackend, func(x, w, v *Node) *Node {
		y := op(x, w)
		a := ZerosLike(y)
		vjp := Gradient(ReduceAllSum(Mul(y, a)), w)[0]
		return Gradient(ReduceAllSum(Mul(vjp, v)), a)[0]
	}, tensors.FromShape(xShape), tensors.FromShape(wShape), tensors.FromShape(wShape))
	return err
}

func TestCompatConvVJPNotDifferentiable(t *testing.T) {
	x, k := shapes.Make(dtypes.Float64, 2, 5, 5, 3), shapes.Make(dtypes.Float64, 3, 3, 3, 4)
	err := doubleVJPError(func(x, k *Node) *Node { return Convolve(x, k).PadSame().Done() }, x, k)
	present(t, compatConvVJPNotDifferentiable, err, "ConvGeneral", "the VJP of a convolution is differentiated again")
}

func TestCompatFusedDenseVJPNoGradient(t *testing.T) {
	if !testBackend.Capabilities().Operations[compute.OpTypeFusedDenseVJP] {
		t.Skipf("backend %s does not fuse Dense", testBackend.Name())
	}
	x, w := shapes.Make(dtypes.Float64, 4, 3), shapes.Make(dtypes.Float64, 3, 2)
	err := doubleVJPError(func(x, w *Node) *Node { return nn.Dense(x, w, nil, compute.DenseLayoutInputOutputs) }, x, w)
	present(t, compatFusedDenseVJPNoGradient, err, "FusedDenseVJP", "FusedDenseVJP is differentiated")
}

func TestCompatFusedCloneGradient(t *testing.T) {
	x := shapes.Make(dtypes.Float64, 3, 4)
	_, err := graphrun.Run(testBackend, func(x *Node) *Node {
		y := nn.LayerNorm(x, []int{1}, 1e-3, nil, nil, nil)
		if y.Type() != NodeTypeFusedLayerNorm {
			exceptions.Panicf("the backend does not fuse LayerNorm (%s)", y.Type())
		}
		return Gradient(ReduceAllSum(Square(y.CloneWithInputs(x))), x)[0]
	}, tensors.FromShape(x))
	if err != nil && strings.Contains(err.Error(), "does not fuse") {
		t.Skip(err)
	}
	present(t, compatFusedCloneGradient, err, "no gradient", "the clone of a FusedLayerNorm node is differentiated")
}

func TestCompatMultiOutputClone(t *testing.T) {
	q := make([]float64, 2*3*1*2)
	for k := range q {
		q[k] = float64(k%5) - 1.5
	}
	out := run(t, func(in []*Node) []*Node {
		x := Reshape(in[0], 2, 3, 1, 2)
		att, _ := BackendFusedScaledDotProductAttention(x, MulScalar(x, 0.5), OnesLike(x),
			compute.AttentionAxesLayoutBSHD, &compute.ScaledDotProductAttentionConfig{})
		return []*Node{att, att.CloneWithInputs(att.Inputs()...)}
	}, q)
	if ref.RelErr(out[1], out[0]) < 1e-12 {
		fixed(t, compatMultiOutputClone, "a FusedScaledDotProductAttention node cloned with its own inputs computes the same")
	}
	t.Logf("still present: attention %v, its clone %v (the query %v)", out[0], out[1], q)
}

func TestCompatFusedActivationVJPClone(t *testing.T) {
	x := []float64{-1.5, -0.3, 0.4, 2}
	out := run(t, func(in []*Node) []*Node {
		x, dOut := in[0], OnesLike(in[0])
		cfg := compute.ActivationConfig{Type: compute.ActivationGelu}
		vjp := BackendFusedActivationVJP(BackendFusedActivation(x, cfg), x, dOut, cfg)
		return []*Node{vjp, vjp.CloneWithInputs(vjp.Inputs()...)}
	}, x)
	if ref.RelErr(out[1], out[0]) < 1e-12 {
		fixed(t, compatFusedActivationVJPClone, "a FusedActivationVJP node cloned with its own inputs computes the same")
	}
	t.Logf("still present: GELU'(x) = %v, its clone %v", out[0], out[1])
}

func TestCompatWhileGradient(t *testing.T) {
	x := []float64{1, 2, 3}
	_, err := graphrun.Run(testBackend, func(x *Node) *Node {
		return compatcheck.WhileLoop(x, func(v *Node) *Node { return Gradient(ReduceAllSum(Mul(v, v)), v)[0] })[1]
	}, x)
	present(t, compatWhileGradient, err, "not computed yet", "a Gradient built inside a While body runs")
}

// TestCompatPadVJPNegative: the gradient of a crop, a Pad with negative paddings, cannot be built.
func TestCompatPadVJPNegative(t *testing.T) {
	_, err := graphrun.Run(testBackend, func(x *Node) *Node {
		y := Pad(x, ScalarZero(x.Graph(), x.DType()), PadAxis{Start: -1, End: -2})
		return Gradient(ReduceAllSum(y), x)[0]
	}, []float64{1, 2, 3, 4, 5, 6})
	present(t, compatPadVJPNegative, err, "out of bounds", "the gradient of a Pad with negative paddings builds")
}

// TestCompatDotVJPAxesOrder: with the rhs's contracting axes out of order, the VJP with respect to
// the lhs is not the transpose of the product, ⟨J v, u⟩ ≠ ⟨v, Jᵀu⟩ for y = DotGeneral(x, w)
// contracting x's axes (1, 2) with w's (1, 0), all of size 3.
func TestCompatDotVJPAxesOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	x, w, v, u := ref.RandVec(rng, 2*3*3), ref.RandVec(rng, 3*3*4), ref.RandVec(rng, 2*3*3), ref.RandVec(rng, 2*4)
	out := run(t, func(in []*Node) []*Node {
		x, w, v, u := in[0], in[1], in[2], in[3]
		product := func(x *Node) *Node { return DotGeneral(x, []int{1, 2}, nil, w, []int{1, 0}, nil) }
		return []*Node{product(v), Gradient(ReduceAllSum(Mul(product(x), u)), x)[0]}
	}, tensors.FromFlatDataAndDimensions(x, 2, 3, 3), tensors.FromFlatDataAndDimensions(w, 3, 3, 4),
		tensors.FromFlatDataAndDimensions(v, 2, 3, 3), tensors.FromFlatDataAndDimensions(u, 2, 4))
	jv, jtu := ref.Dot(out[0], u), ref.Dot(v, out[1])
	if math.Abs(jv-jtu) <= 1e-12*math.Max(math.Abs(jv), math.Abs(jtu)) {
		fixed(t, compatDotVJPAxesOrder, "the VJP of DotGeneral with unordered rhs contracting axes is the product's transpose")
	}
	t.Logf("still present: ⟨J v, u⟩ = %.6g, ⟨v, Jᵀu⟩ = %.6g", jv, jtu)
}

// TestCompatConvVJPEvenKernel: y_i = 10 x_i + x_(i+1), a convolution with the kernel (10, 1) and
// no padding, has ∂(Σ y)/∂x = (10, 11, 11, 11, 1).
func TestCompatConvVJPEvenKernel(t *testing.T) {
	axes := compute.ConvolveAxesConfig{InputBatch: 0, InputChannels: 2, InputSpatial: []int{1},
		KernelInputChannels: 1, KernelOutputChannels: 2, KernelSpatial: []int{0},
		OutputBatch: 0, OutputChannels: 2, OutputSpatial: []int{1}}
	out := run(t, func(in []*Node) []*Node {
		y := ConvGeneral(in[0], in[1], axes, nil, nil, nil, nil, 1, 1)
		return []*Node{Gradient(ReduceAllSum(y), in[0])[0]}
	}, tensors.FromFlatDataAndDimensions([]float64{1, 2, 3, 4, 5}, 1, 5, 1),
		tensors.FromFlatDataAndDimensions([]float64{10, 1}, 2, 1, 1))
	if want := []float64{10, 11, 11, 11, 1}; ref.RelErr(out[0], want) < 1e-12 {
		fixed(t, compatConvVJPEvenKernel, "the VJP of a convolution with a kernel of size 2 is right")
	}
	t.Logf("still present: ∂(Σ y)/∂x = %v", out[0])
}

// TestCompatCitations checks that every compat.go name (compatX) cited in the module's Go and
// Markdown files is an entry of a compat.go, and that every entry of this one is cited outside the
// compat files.
func TestCompatCitations(t *testing.T) { compatcheck.Citations(t) }

// fixed and present report a reproduction's outcome (see package compatcheck).
var fixed, present = compatcheck.Fixed, compatcheck.Present
