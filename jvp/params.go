package jvp

import (
	"reflect"
	"unsafe"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/support/exceptions"
)

// This file is the package's one adapter to GoMLX's internals: it reads the static parameters of
// an op (axes, window sizes, a fused layer's configuration) into typed values, and rebuilds an op
// on new inputs. GoMLX v0.28.16 exposes a node's inputs (Node.Inputs) and a way to rebuild it
// (Node.CloneWithInputs) but not its static parameters, which live in unexported fields of the
// generated struct behind the unexported Node.inputs; the readers below reach them by reflection,
// and no other file of the package touches an unexported field (see compat.go: compatOpParams,
// which proposes the accessor that would replace this file, and TestCompatOpParams, the canary
// that reads every field below on a graph of every op).

// dotAxes are the axes and configuration of a DotGeneral node.
type dotAxes struct {
	lhsContracting, lhsBatch, rhsContracting, rhsBatch []int
	config                                             compute.DotGeneralConfig
}

// dotGeneralAxes reads the axes and configuration of DotGeneral node n.
func dotGeneralAxes(n *Node) dotAxes {
	config := param(n, "config", reflect.Struct)
	return dotAxes{
		lhsContracting: ints(n, "lhsContractingAxes"), lhsBatch: ints(n, "lhsBatchAxes"),
		rhsContracting: ints(n, "rhsContractingAxes"), rhsBatch: ints(n, "rhsBatchAxes"),
		config: compute.DotGeneralConfig{
			AccumulatorDType: dtypes.DType(member(n, config, "config", "AccumulatorDType", reflect.Int32).Int()),
			OutputDType:      dtypes.DType(member(n, config, "config", "OutputDType", reflect.Int32).Int()),
		},
	}
}

// denseConfig reads the activation and weight layout of a FusedDense or FusedDenseVJP node.
func denseConfig(n *Node) compute.DenseConfig {
	options := param(n, "options", reflect.Struct)
	act := member(n, options, "options", "Activation", reflect.Struct)
	return compute.DenseConfig{
		Activation:   compute.ActivationConfig{Type: compute.ActivationType(member(n, act, "options.Activation", "Type", reflect.Int).Int())},
		WeightLayout: compute.DenseLayout(member(n, options, "options", "WeightLayout", reflect.Int).Int()),
	}
}

// window is the configuration of a ReduceWindow node (max, min and sum pooling).
type window struct {
	reduction                                      compute.ReduceOpType
	dimensions, strides, inputDilations, dilations []int
	paddings                                       [][2]int // (start, end) per axis; nil for none
}

// reduceWindow reads the configuration of ReduceWindow node n.
func reduceWindow(n *Node) window {
	return window{
		reduction:      compute.ReduceOpType(param(n, "reductionType", reflect.Int).Int()),
		dimensions:     ints(n, "windowDimensions"),
		strides:        ints(n, "strides"),
		inputDilations: ints(n, "inputDilations"),
		dilations:      ints(n, "windowDilations"),
		paddings:       pairs(n, "paddings"),
	}
}

// convolution is the configuration of a ConvGeneral node.
type convolution struct {
	axes                               compute.ConvolveAxesConfig
	strides                            []int
	paddings                           [][2]int
	inputDilations, kernelDilations    []int
	channelGroupCount, batchGroupCount int
}

// convGeneral reads the configuration of ConvGeneral node n.
func convGeneral(n *Node) convolution {
	axes := param(n, "axes", reflect.Struct)
	axis := func(name string) int { return int(member(n, axes, "axes", name, reflect.Int).Int()) }
	axisList := func(name string) []int {
		return intSlice(n, "axes."+name, member(n, axes, "axes", name, reflect.Slice))
	}
	return convolution{
		axes: compute.ConvolveAxesConfig{
			InputBatch: axis("InputBatch"), InputChannels: axis("InputChannels"), InputSpatial: axisList("InputSpatial"),
			KernelInputChannels: axis("KernelInputChannels"), KernelOutputChannels: axis("KernelOutputChannels"),
			KernelSpatial: axisList("KernelSpatial"),
			OutputBatch:   axis("OutputBatch"), OutputChannels: axis("OutputChannels"), OutputSpatial: axisList("OutputSpatial"),
		},
		strides:           ints(n, "strides"),
		paddings:          pairs(n, "paddings"),
		inputDilations:    ints(n, "inputDilations"),
		kernelDilations:   ints(n, "kernelDilations"),
		channelGroupCount: int(param(n, "channelGroupCount", reflect.Int).Int()),
		batchGroupCount:   int(param(n, "batchGroupCount", reflect.Int).Int()),
	}
}

// slice is the configuration of a Slice node: the first index, the limit (exclusive) and the
// stride on each axis.
type slice struct{ starts, limits, strides []int }

// sliceBounds reads the configuration of Slice node n.
func sliceBounds(n *Node) slice {
	return slice{starts: ints(n, "starts"), limits: ints(n, "limits"), strides: ints(n, "strides")}
}

// reducedAxes reads the axes a ReduceMax or ReduceMin node n reduces, in increasing order (all
// of its input's axes when the op lists none).
func reducedAxes(n *Node) []int {
	axes := ints(n, "axes")
	if len(axes) == 0 {
		axes = axisRange(0, n.Inputs()[0].Rank())
	}
	return axes
}

// broadcastAxes reads, for each axis of BroadcastInDim node n's input, the output axis it maps to.
func broadcastAxes(n *Node) []int { return ints(n, "broadcastAxes") }

// permutation reads the permutation of Transpose node n: output axis k is input axis perm[k].
func permutation(n *Node) []int { return ints(n, "permutation") }

// splitIndex reads which output of its multi-output input SplitNode n is.
func splitIndex(n *Node) int { return int(param(n, "index", reflect.Int).Int()) }

// attention reads the axes layout and configuration of FusedScaledDotProductAttention node n.
func attention(n *Node) (compute.AttentionAxesLayout, *compute.ScaledDotProductAttentionConfig) {
	layout := compute.AttentionAxesLayout(param(n, "axesLayout", reflect.Int).Int())
	options := param(n, "options", reflect.Pointer)
	if want := reflect.TypeFor[*compute.ScaledDotProductAttentionConfig](); options.Type() != want {
		exceptions.Panicf("jvp: cannot read the parameter \"options\" of op %s: it is a %s, not a %s "+
			"(see compat.go: compatOpParams)", n.Type(), options.Type(), want)
	}
	// Interface is refused on an unexported field: the pointer is read as an address.
	return layout, (*compute.ScaledDotProductAttentionConfig)(unsafe.Pointer(options.Pointer()))
}

// cloneNode returns n's op applied to the inputs in, listed as n.Inputs lists them: it is
// n.CloneWithInputs(in...), but for the ops whose clone GoMLX builds wrong: FusedActivationVJP,
// whose clone reads its inputs in another order than Node.Inputs lists them (see compat.go:
// compatFusedActivationVJPClone), and FusedScaledDotProductAttention, whose clone is its query,
// and which is rebuilt from its parameters (see compat.go: compatMultiOutputClone).
//
// A fused node that keeps its decomposed form for reverse mode (graph.InternalFusedOpCaller) gets
// that form rebuilt on the new inputs too, before the node, as GoMLX builds it, so that the clone
// can be differentiated (see compat.go: compatFusedCloneGradient).
func cloneNode(n *Node, in []*Node) *Node {
	var alternates []*Node
	if alt := vjpAlternates(n); len(alt) > 0 {
		subst := make(map[*Node]*Node, len(in))
		for k, x := range n.Inputs() {
			subst[x] = in[k]
		}
		sources := make(map[*Node]int, len(subst))
		for x := range subst {
			sources[x] = len(sources)
		}
		nodes, _ := dependents(alt, sources)
		alternates = (&walk{outputs: alt, nodes: nodes}).clone(subst, nil)
	}
	var out *Node
	switch n.Type() {
	case NodeTypeFusedActivationVJP:
		if len(in) == 3 {
			in[1], in[2] = in[2], in[1]
		}
		out = n.CloneWithInputs(in...)
	case NodeTypeFusedScaledDotProductAttention:
		layout, options := attention(n)
		out, _ = BackendFusedScaledDotProductAttention(in[0], in[1], in[2], layout, options)
	default:
		out = n.CloneWithInputs(in...)
	}
	if alternates != nil {
		*vjpAlternatesOf(out) = alternates
	}
	return out
}

// vjpAlternates returns the decomposed outputs GoMLX keeps on a fused node n for its reverse-mode
// rule (the unexported field Node.vjpAlternateOutputs that graph.InternalFusedOpCaller sets), nil
// when it keeps none.
func vjpAlternates(n *Node) []*Node { return *vjpAlternatesOf(n) }

// vjpAlternatesOf returns the address of node n's field vjpAlternateOutputs. It panics naming the
// field when GoMLX has no such field, or one of another type (see compat.go: compatOpParams).
func vjpAlternatesOf(n *Node) *[]*Node {
	v := reflect.ValueOf(n).Elem().FieldByName("vjpAlternateOutputs")
	if want := reflect.TypeFor[[]*Node](); !v.IsValid() || v.Type() != want {
		exceptions.Panicf("jvp: cannot read the decomposed form of op %s: graph.Node has no field "+
			"\"vjpAlternateOutputs\" of type %s (see compat.go: compatOpParams)", n.Type(), want)
	}
	return (*[]*Node)(unsafe.Pointer(v.UnsafeAddr()))
}

// param returns the static parameter name of node n's op, which must be of the given kind. It
// panics naming the op and the field when GoMLX has no such field, or one of another kind (see
// compat.go: compatOpParams).
func param(n *Node, name string, kind reflect.Kind) reflect.Value {
	v := reflect.ValueOf(n).Elem().FieldByName("inputs")
	if !v.IsValid() {
		exceptions.Panicf("jvp: cannot read the parameter %q of op %s: graph.Node has no field \"inputs\" "+
			"(see compat.go: compatOpParams)", name, n.Type())
	}
	for (v.Kind() == reflect.Interface || v.Kind() == reflect.Pointer) && !v.IsNil() {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		exceptions.Panicf("jvp: cannot read the parameter %q of op %s: its inputs are a %s, not a struct "+
			"(see compat.go: compatOpParams)", name, n.Type(), v.Kind())
	}
	return checkKind(n, v.Type().String(), v.FieldByName(name), name, kind)
}

// member returns field name of the struct-valued parameter v of node n (path names v).
func member(n *Node, v reflect.Value, path, name string, kind reflect.Kind) reflect.Value {
	return checkKind(n, path, v.FieldByName(name), name, kind)
}

func checkKind(n *Node, holder string, v reflect.Value, name string, kind reflect.Kind) reflect.Value {
	switch {
	case !v.IsValid():
		exceptions.Panicf("jvp: cannot read the parameter %q of op %s: %s has no field %q "+
			"(see compat.go: compatOpParams)", name, n.Type(), holder, name)
	case v.Kind() != kind:
		exceptions.Panicf("jvp: cannot read the parameter %q of op %s: field %q of %s is of kind %s, not %s "+
			"(see compat.go: compatOpParams)", name, n.Type(), name, holder, v.Kind(), kind)
	}
	return v
}

// ints reads the []int parameter name of node n.
func ints(n *Node, name string) []int { return intSlice(n, name, param(n, name, reflect.Slice)) }

func intSlice(n *Node, name string, v reflect.Value) []int {
	if k := v.Type().Elem().Kind(); k != reflect.Int {
		exceptions.Panicf("jvp: cannot read the parameter %q of op %s: its elements are %s, not int "+
			"(see compat.go: compatOpParams)", name, n.Type(), k)
	}
	out := make([]int, v.Len())
	for k := range out {
		out[k] = int(v.Index(k).Int())
	}
	return out
}

// pairs reads the [][2]int parameter name of node n.
func pairs(n *Node, name string) [][2]int {
	v := param(n, name, reflect.Slice)
	if t := v.Type().Elem(); t.Kind() != reflect.Array || t.Len() != 2 || t.Elem().Kind() != reflect.Int {
		exceptions.Panicf("jvp: cannot read the parameter %q of op %s: its elements are %s, not [2]int "+
			"(see compat.go: compatOpParams)", name, n.Type(), t)
	}
	out := make([][2]int, v.Len())
	for k := range out {
		out[k] = [2]int{int(v.Index(k).Index(0).Int()), int(v.Index(k).Index(1).Int())}
	}
	return out
}

// axisRange returns start, start+1, …, start+n-1.
func axisRange(start, n int) []int {
	out := make([]int, n)
	for k := range out {
		out[k] = start + k
	}
	return out
}
