package fgn

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"unsafe"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/support/exceptions"
)

// subgraph is the part of a built graph that lies between a set of source nodes and some
// outputs: the nodes the outputs depend on that depend on a source, in topological order (every
// node after its inputs). It is the one walk of the graph that Linearize needs, and it serves
// two transformations:
//
//   - clone rebuilds the outputs with other nodes substituted for the sources (Node.CloneWithInputs
//     on each node of the walk), e.g. the logits z(w + s) at a trial point, or a product built
//     once with placeholder inputs and applied to other inputs (linearMap);
//   - tangent propagates tangents of the sources forward through the walk, one rule per op type
//     (tangentRules), and returns the outputs' tangents: J v, forward-mode differentiation of the
//     graph as built.
//
// Nodes that do not depend on a source (the features, the labels, non-trainable variables) are
// shared, never copied.
type subgraph struct {
	outs    []*Node
	sources []*Node
	source  map[*Node]int // index in sources
	nodes   []*Node       // dependents of the sources reached from outs, topological order
}

// walk returns the subgraph from sources to outs. It panics if no output depends on a source.
func walk(outs, sources []*Node) *subgraph {
	s := &subgraph{outs: outs, sources: sources, source: make(map[*Node]int, len(sources))}
	for i, src := range sources {
		s.source[src] = i
	}
	depends := make(map[*Node]bool)
	var visit func(n *Node) bool
	visit = func(n *Node) bool {
		if d, seen := depends[n]; seen {
			return d
		}
		if _, ok := s.source[n]; ok {
			depends[n] = true
			return true
		}
		d := false
		for _, in := range n.Inputs() {
			if visit(in) {
				d = true
			}
		}
		depends[n] = d
		if d {
			s.nodes = append(s.nodes, n)
		}
		return d
	}
	reached := false
	for _, out := range outs {
		if visit(out) {
			reached = true
		}
	}
	if !reached {
		exceptions.Panicf("fgn: %s does not depend on any of the %d parameters", outs[0], len(sources))
	}
	return s
}

// clone returns the outputs computed from subst in place of the sources (same shapes and
// dtypes).
func (s *subgraph) clone(subst []*Node) []*Node {
	if len(subst) != len(s.sources) {
		exceptions.Panicf("fgn: got %d substitutes for %d parameters", len(subst), len(s.sources))
	}
	value := make(map[*Node]*Node, len(s.nodes)+len(subst))
	for i, src := range s.sources {
		if !subst[i].Shape().Equal(src.Shape()) {
			exceptions.Panicf("fgn: parameter %d has shape %s, its substitute %s", i, src.Shape(), subst[i].Shape())
		}
		value[src] = subst[i]
	}
	for _, n := range s.nodes {
		in := slices.Clone(n.Inputs())
		for k, x := range in {
			if v, ok := value[x]; ok {
				in[k] = v
			}
		}
		if fusedBroadcast(n) && in[0] != n.Inputs()[0] {
			value[n] = unfusedBroadcast(in[0], n.Shape())
			continue
		}
		value[n] = cloneNode(n, in)
	}
	outs := make([]*Node, len(s.outs))
	for k, out := range s.outs {
		if outs[k] = value[out]; outs[k] == nil {
			outs[k] = out // does not depend on the sources
		}
	}
	return outs
}

// cloneNode returns n's op applied to the inputs in, listed as n.Inputs lists them.
func cloneNode(n *Node, in []*Node) *Node {
	switch n.Type() {
	case NodeTypeFusedActivationVJP:
		if len(in) == 3 {
			in[1], in[2] = in[2], in[1] // see compat.go: compatFusedActivationVJPClone
		}
	case NodeTypeFusedScaledDotProductAttention:
		// Rebuilt from its parameters: see compat.go: compatMultiOutputClone.
		out, _ := BackendFusedScaledDotProductAttention(in[0], in[1], in[2],
			opParamAs[compute.AttentionAxesLayout](n, "axesLayout"),
			opParamAs[*compute.ScaledDotProductAttentionConfig](n, "options"))
		return out
	}
	return n.CloneWithInputs(in...)
}

// closureSafe reports whether the clone of the subgraph may be built inside a closure (a While
// body) on every backend: it holds no BroadcastInDim of a node the clone computes that the
// pure-Go backend's optimiser removes after the closure's execution plan is compiled (see
// compat.go: compatWhileGradient). clone builds the broadcasts it would remove, to the same rank
// with unit dimensions expanded or from a scalar, in a form it keeps (unfusedBroadcast); a
// same-rank broadcast that also permutes axes is the one it cannot.
func (s *subgraph) closureSafe() bool {
	cloned := make(map[*Node]bool, len(s.nodes)+len(s.sources))
	for _, n := range s.sources {
		cloned[n] = true
	}
	for _, n := range s.nodes {
		cloned[n] = true
	}
	for _, n := range s.nodes {
		if x := n.Inputs(); n.Type() == NodeTypeBroadcastInDim && cloned[x[0]] && x[0].Rank() == n.Rank() && !fusedBroadcast(n) {
			return false
		}
	}
	return true
}

// fusedBroadcast reports whether n is a BroadcastInDim that the pure-Go backend's optimiser
// (ImplicitBroadcastFusion) folds into the element-wise operations that read it and that
// unfusedBroadcast can build instead: from a scalar, or to the same rank with the axes in order.
func fusedBroadcast(n *Node) bool {
	if n.Type() != NodeTypeBroadcastInDim {
		return false
	}
	x := n.Inputs()[0]
	if x.IsScalar() {
		return true
	}
	if x.Rank() != n.Rank() {
		return false
	}
	for k, axis := range intsOf(opParam(n, "broadcastAxes")) {
		if axis != int64(k) {
			return false
		}
	}
	return true
}

// unfusedBroadcast returns x broadcast to shape (x a scalar or of shape's rank) through a
// broadcast to shape with a unit axis appended, which a reshape then removes: the optimiser
// folds only the broadcasts read by element-wise operations, so the closure's plan stays valid
// (see compat.go: compatWhileGradient).
func unfusedBroadcast(x *Node, shape shapes.Shape) *Node {
	dims := shape.Dimensions
	expanded := append(slices.Clone(dims), 1)
	if !x.IsScalar() {
		x = Reshape(x, append(slices.Clone(x.Shape().Dimensions), 1)...)
	}
	return Reshape(BroadcastToShape(x, shapes.Make(shape.DType, expanded...)), dims...)
}

// tangent returns the tangents of the outputs given the tangents v of the sources (shaped like
// them; a nil entry is a zero tangent): J v, where J is the Jacobian of the outputs with respect
// to the sources.
//
// Each node's tangent is built from its inputs' tangents by the rule of its op type
// (tangentRules), from the primal nodes of the walk, which the forward pass computes once. A
// zero tangent is carried as nil and never materialised: a term of a rule whose tangent input is
// zero is dropped, and a node with only zero tangent inputs has a zero tangent. StopGradient
// nodes (GoMLX marks comparisons so) and nodes of integer or boolean dtype have a zero tangent,
// as their VJP is zero. An op with no rule falls back to the double VJP of that one op
// (localJVP); when that fails too, tangent panics naming the op and the parameters it depends
// on.
func (s *subgraph) tangent(v []*Node) []*Node {
	tan := make(map[*Node]*Node, len(s.nodes)+len(v))
	for i, src := range s.sources {
		if v[i] != nil {
			if !v[i].Shape().Equal(src.Shape()) {
				exceptions.Panicf("fgn: tangent %d has shape %s, want %s", i, v[i].Shape(), src.Shape())
			}
			tan[src] = v[i]
		}
	}
	for _, n := range s.nodes {
		if n.StopGradient() || !n.DType().IsFloat() {
			continue // comparisons, indices: no tangent
		}
		inputs := n.Inputs()
		ts := make([]*Node, len(inputs))
		nonzero := false
		for k, x := range inputs {
			ts[k] = tan[x]
			nonzero = nonzero || ts[k] != nil
		}
		if !nonzero {
			continue
		}
		var t *Node
		err := exceptions.TryCatch[error](func() { t = nodeTangent(n, ts) })
		if err != nil {
			panic(fmt.Errorf("fgn: J_z v: cannot differentiate op %s (%s)%s in forward mode: %w",
				n.Type(), n.Shape(), s.layerOf(n), err))
		}
		if t != nil {
			t = fit(t, n.Shape())
		}
		tan[n] = t
	}
	outs := make([]*Node, len(s.outs))
	for k, out := range s.outs {
		if outs[k] = tan[out]; outs[k] == nil {
			outs[k] = ZerosLike(out)
		}
	}
	return outs
}

// layerOf names the parameters n depends on (variables are named after their layer's scope).
func (s *subgraph) layerOf(n *Node) string {
	var names []string
	seen := make(map[*Node]bool)
	var visit func(x *Node)
	visit = func(x *Node) {
		if seen[x] {
			return
		}
		seen[x] = true
		if _, ok := s.source[x]; ok {
			name := fmt.Sprintf("parameter %s", x.Shape())
			if x.Type() == NodeTypeParameter {
				name = x.GetParameterName()
			}
			names = append(names, name)
			return
		}
		for _, in := range x.Inputs() {
			visit(in)
		}
	}
	visit(n)
	if len(names) == 0 {
		return ""
	}
	slices.Sort(names)
	return " in the layer of " + strings.Join(names, ", ")
}

// tangentRule returns the tangent of node n from the tangents ts of its inputs (nil for a zero
// tangent; at least one is not nil), or nil for a zero tangent.
type tangentRule func(n *Node, ts []*Node) *Node

// tangentRules holds the forward-mode rule of each op type; ops without one use localJVP. The
// semantics of each op, and its conventions at ties, follow GoMLX's reverse-mode rules
// (VJPRegistration), so that ⟨J v, u⟩ = ⟨v, Jᵀu⟩ with Jᵀu from Gradient.
var tangentRules map[NodeType]tangentRule

func init() {
	linear := tangentRule(linearTangent)
	multilinear := tangentRule(multilinearTangent)
	tangentRules = map[NodeType]tangentRule{
		// Linear (jointly in all inputs) and structural ops: the op applied to the tangents.
		NodeTypeIdentity: linear, NodeTypeReshape: linear, NodeTypeTranspose: linear,
		NodeTypeBroadcastInDim: linear, NodeTypeSlice: linear, NodeTypeConcatenate: linear,
		NodeTypeReduceSum: linear, NodeTypeNeg: linear, NodeTypeConvertDType: linear,
		NodeTypeReverse: linear, NodeTypeCumSum: linear,
		NodeTypeAdd: addTangent, NodeTypeSub: addTangent,
		NodeTypePad:          linear,          // linear in (x, pad value) jointly
		NodeTypeGather:       linearExcept(1), // (operand, indices)
		NodeTypeWhere:        linearExcept(0), // (condition, onTrue, onFalse)
		NodeTypeReduceWindow: reduceWindowTangent,

		// Multilinear ops: one term per input with a tangent.
		NodeTypeDotGeneral:  multilinear,
		NodeTypeConvGeneral: multilinear,
		NodeTypeMul:         multilinear,
		NodeTypeFusedDense:  fusedDenseTangent,
		NodeTypeDiv:         divTangent,

		// Element-wise non-linear ops: the derivative in terms of primal nodes.
		NodeTypeExp:      unary(func(x, y *Node) *Node { return y }),
		NodeTypeExpm1:    unary(func(x, y *Node) *Node { return AddScalar(y, 1) }),
		NodeTypeLog:      unary(func(x, y *Node) *Node { return Reciprocal(x) }),
		NodeTypeLog1p:    unary(func(x, y *Node) *Node { return Reciprocal(AddScalar(x, 1)) }),
		NodeTypeTanh:     unary(func(x, y *Node) *Node { return OneMinus(Square(y)) }),
		NodeTypeLogistic: unary(func(x, y *Node) *Node { return Mul(y, OneMinus(y)) }),
		NodeTypeSqrt:     unary(func(x, y *Node) *Node { return Reciprocal(MulScalar(y, 2)) }),
		NodeTypeRsqrt:    unary(func(x, y *Node) *Node { return MulScalar(Mul(y, Square(y)), -0.5) }),
		NodeTypeErf: unary(func(x, y *Node) *Node {
			return MulScalar(Exp(Neg(Square(x))), 2/math.Sqrt(math.Pi))
		}),
		NodeTypeAbs:  unary(func(x, y *Node) *Node { return Sign(x) }),
		NodeTypeSin:  unary(func(x, y *Node) *Node { return Cos(x) }),
		NodeTypeCos:  unary(func(x, y *Node) *Node { return Neg(Sin(x)) }),
		NodeTypeSign: zeroTangent, NodeTypeFloor: zeroTangent, NodeTypeCeil: zeroTangent,
		NodeTypeRound: zeroTangent,
		NodeTypeMax:   minMaxTangent, NodeTypeMin: minMaxTangent,
		NodeTypeClamp: clampTangent,
		NodeTypePow:   powTangent,

		NodeTypeFusedActivation: diagonalTangent,
	}
}

// fit broadcasts t to shape when an op broadcast its operands implicitly.
func fit(t *Node, shape shapes.Shape) *Node {
	if t.Shape().Equal(shape) {
		return t
	}
	if t.DType() != shape.DType {
		exceptions.Panicf("fgn: tangent %s does not match its node %s", t.Shape(), shape)
	}
	return BroadcastToDims(t, shape.Dimensions...)
}

// orZeros returns ts with each zero tangent of a floating-point input replaced by zeros.
func orZeros(n *Node, ts []*Node) []*Node {
	out := make([]*Node, len(ts))
	for k, x := range n.Inputs() {
		out[k] = ts[k]
		if out[k] == nil {
			out[k] = ZerosLike(x)
		}
	}
	return out
}

// linearTangent: n is linear in all its inputs jointly, so its tangent is n applied to the
// tangents.
func linearTangent(n *Node, ts []*Node) *Node {
	return n.CloneWithInputs(orZeros(n, ts)...)
}

// linearExcept is linearTangent for an op linear in all its inputs but input k, which it keeps
// (the indices of a Gather, the condition of a Where).
func linearExcept(k int) tangentRule {
	return func(n *Node, ts []*Node) *Node {
		if ts[k] != nil {
			exceptions.Panicf("input %d of %s carries a tangent", k, n.Type())
		}
		in := orZeros(n, ts)
		in[k] = n.Inputs()[k]
		return n.CloneWithInputs(in...)
	}
}

// addTangent: Add and Sub, without materialising a zero tangent.
func addTangent(n *Node, ts []*Node) *Node {
	switch {
	case ts[1] == nil:
		return ts[0]
	case ts[0] == nil && n.Type() == NodeTypeSub:
		return Neg(ts[1])
	case ts[0] == nil:
		return ts[1]
	}
	return n.CloneWithInputs(ts...)
}

// multilinearTangent: n is linear in each input separately (a product), so its tangent is the
// sum over the inputs with a tangent of n with that input replaced by its tangent.
func multilinearTangent(n *Node, ts []*Node) *Node {
	var sum *Node
	for k, t := range ts {
		if t == nil {
			continue
		}
		in := slices.Clone(n.Inputs())
		in[k] = t
		term := fit(n.CloneWithInputs(in...), n.Shape())
		if sum == nil {
			sum = term
		} else {
			sum = Add(sum, term)
		}
	}
	return sum
}

// divTangent: (a/b)' = (a' − (a/b)·b')/b.
func divTangent(n *Node, ts []*Node) *Node {
	b := n.Inputs()[1]
	num := ts[0]
	if ts[1] != nil {
		term := Mul(n, ts[1])
		if num == nil {
			num = Neg(term)
		} else {
			num = Sub(num, term)
		}
	}
	return Div(num, b)
}

// unary returns the rule of an element-wise map y = f(x) with derivative df(x, y).
func unary(df func(x, y *Node) *Node) tangentRule {
	return func(n *Node, ts []*Node) *Node {
		return Mul(df(n.Inputs()[0], n), ts[0])
	}
}

func zeroTangent(*Node, []*Node) *Node { return nil }

// minMaxTangent selects the tangent of the selected operand, with GoMLX's convention at ties
// (Max takes its first operand where a ≥ b, Min its second).
func minMaxTangent(n *Node, ts []*Node) *Node {
	a, b := n.Inputs()[0], n.Inputs()[1]
	first := GreaterOrEqual(Sub(a, b), ZerosLike(Sub(a, b)))
	if n.Type() == NodeTypeMin {
		first = LogicalNot(first)
	}
	in := orZeros(n, ts)
	return Where(first, fit(in[0], n.Shape()), fit(in[1], n.Shape()))
}

// clampTangent: Clamp(lo, x, hi) = min(max(x, lo), hi) selects the tangent of the operand it
// takes.
func clampTangent(n *Node, ts []*Node) *Node {
	in := orZeros(n, ts)
	shape := n.Shape()
	lo, x, hi := fit(n.Inputs()[0], shape), fit(n.Inputs()[1], shape), fit(n.Inputs()[2], shape)
	t := Where(LessThan(x, lo), fit(in[0], shape), fit(in[1], shape))
	return Where(GreaterThan(Max(x, lo), hi), fit(in[2], shape), t)
}

// powTangent: (aᵇ)' = b·aᵇ⁻¹·a' + aᵇ·log(a)·b'.
func powTangent(n *Node, ts []*Node) *Node {
	a, b := n.Inputs()[0], n.Inputs()[1]
	var sum *Node
	if ts[0] != nil {
		sum = Mul(Mul(b, Pow(a, AddScalar(b, -1))), ts[0])
	}
	if ts[1] != nil {
		term := Mul(Mul(n, Log(a)), ts[1])
		if sum == nil {
			sum = term
		} else {
			sum = Add(fit(sum, n.Shape()), fit(term, n.Shape()))
		}
	}
	return sum
}

// diagonalTangent is the rule of an element-wise map of one input whose parameters GoMLX does not
// expose (FusedActivation: ReLU, leaky ReLU, GELU, swish, …): its Jacobian is diagonal, hence
// symmetric, so J t = Jᵀ t is one local VJP, by the op's own registered VJP.
func diagonalTangent(n *Node, ts []*Node) *Node {
	x := n.Inputs()[0]
	return Gradient(ReduceAllSum(Mul(n, StopGradient(ts[0]))), x)[0]
}

// fusedDenseTangent: FusedDense(x, W, bias) = act(x·W + bias) (GoMLX's nn.Dense on backends that
// fuse it). Without activation it is multilinear in (x, W) plus the bias; with one, the
// pre-activation tangent is formed by FusedDense without activation, and the activation's
// derivative is applied by its VJP (diagonal, see diagonalTangent), from the output y when the
// activation's VJP needs only y (the activations GoMLX fuses into FusedDense), else from the
// pre-activation recomputed.
func fusedDenseTangent(n *Node, ts []*Node) *Node {
	options := denseConfig(n)
	act := options.Activation
	noAct := compute.DenseConfig{WeightLayout: options.WeightLayout}
	in := n.Inputs()
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
		pre = addTerm(pre, ExpandLeftToRank(ts[2], n.Rank()))
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
	return BackendFusedActivationVJP(n, x, pre, act)
}

// denseConfig reads the configuration of a FusedDense or FusedDenseVJP node (see opParam).
func denseConfig(n *Node) compute.DenseConfig {
	options := opParam(n, "options")
	return compute.DenseConfig{
		Activation:   compute.ActivationConfig{Type: compute.ActivationType(options.FieldByName("Activation").FieldByName("Type").Int())},
		WeightLayout: compute.DenseLayout(options.FieldByName("WeightLayout").Int()),
	}
}

// addTerm returns sum + term, or term when sum is nil.
func addTerm(sum, term *Node) *Node {
	if sum == nil {
		return term
	}
	return Add(sum, term)
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
// covered as well. The masks depend on the primal values alone, so each product adds one strided
// slice and one selection per window offset. Windows with dilations are refused, as GoMLX's VJP
// refuses them.
func reduceWindowTangent(n *Node, ts []*Node) *Node {
	op := compute.ReduceOpType(opParam(n, "reductionType").Int())
	if op == compute.ReduceOpSum {
		return linearTangent(n, ts)
	}
	if op != compute.ReduceOpMax && op != compute.ReduceOpMin {
		exceptions.Panicf("ReduceWindow with reduction %s has no forward-mode rule", op)
	}
	x := n.Inputs()[0]
	rank := x.Rank()
	window, strides := intsOf(opParam(n, "windowDimensions")), intsOf(opParam(n, "strides"))
	for _, field := range []string{"inputDilations", "windowDilations"} {
		for _, d := range intsOf(opParam(n, field)) {
			if d != 1 {
				exceptions.Panicf("ReduceWindow %s with %s %v has no forward-mode rule", op, field, intsOf(opParam(n, field)))
			}
		}
	}
	pads := make([]PadAxis, rank)
	paddings := opParam(n, "paddings")
	for k := range paddings.Len() {
		pads[k] = PadAxis{Start: int(paddings.Index(k).Index(0).Int()), End: int(paddings.Index(k).Index(1).Int())}
	}
	fill := math.Inf(-1)
	if op == compute.ReduceOpMin {
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
			if k < len(strides) {
				stride = int(strides[k])
			}
			spec[k] = AxisRange(delta[k], delta[k]+stride*(n.Shape().Dim(k)-1)+1).Stride(stride)
		}
		return Slice(z, spec...)
	}
	zero := ZerosLike(n)
	var tangent, found *Node
	delta := make([]int, rank)
	for {
		selected := Equal(at(xp, delta), n)
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
			if delta[k]++; delta[k] < int(window[k]) {
				break
			}
			delta[k] = 0
		}
		if k < 0 {
			return tangent
		}
	}
}

func intsOf(v reflect.Value) []int64 {
	out := make([]int64, v.Len())
	for k := range out {
		out[k] = v.Index(k).Int()
	}
	return out
}

// opParam returns the static parameter field of node n's op (an activation type, window sizes),
// read by reflection: GoMLX v0.28.16 exposes an op's inputs (Node.Inputs) and a way to rebuild it
// (Node.CloneWithInputs), but not its static parameters. It panics naming the op if the field
// is not there, e.g. after GoMLX renamed it.
func opParam(n *Node, field string) reflect.Value {
	v := reflect.ValueOf(n).Elem().FieldByName("inputs")
	for v.IsValid() && (v.Kind() == reflect.Interface || v.Kind() == reflect.Pointer) && !v.IsNil() {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct || !v.FieldByName(field).IsValid() {
		exceptions.Panicf("cannot read the parameter %q of %s", field, n.Type())
	}
	return v.FieldByName(field)
}

// opParamAs returns the static parameter field of node n's op as a T (opParam's value is read-only:
// reflection refuses Interface on an unexported field, so the value is read through its address).
func opParamAs[T any](n *Node, field string) T {
	v := opParam(n, field)
	if !v.CanAddr() || v.Type() != reflect.TypeFor[T]() {
		exceptions.Panicf("cannot read the parameter %q of %s as %s", field, n.Type(), reflect.TypeFor[T]())
	}
	return *(*T)(unsafe.Pointer(v.UnsafeAddr()))
}

// nodeTangent applies n's rule, or localJVP when its op has none.
func nodeTangent(n *Node, ts []*Node) *Node {
	if rule, ok := tangentRules[n.Type()]; ok {
		return rule(n, ts)
	}
	return localJVP(n, ts)
}

// localJVP is the tangent of one op by the double-VJP identity: a ↦ J_nᵀa is linear, hence
// J_n t = ∇_a⟨J_nᵀa, t⟩ at any a (here 0), with J_nᵀa from GoMLX's VJP of n alone. It serves ops
// without a rule whose VJP GoMLX can differentiate again, such as fused ops whose VJP runs
// through their decomposed form (FusedLayerNorm, FusedSoftmax) and ReduceMax and ReduceMin.
func localJVP(n *Node, ts []*Node) *Node {
	var wrt, tangents []*Node
	for k, t := range ts {
		if x := n.Inputs()[k]; t != nil && !slices.Contains(wrt, x) {
			wrt = append(wrt, x)
			tangents = append(tangents, t)
		}
	}
	a := ZerosLike(n)
	vjps := Gradient(ReduceAllSum(Mul(n, a)), wrt...)
	var dot *Node
	for k, v := range vjps {
		dot = addTerm(dot, ReduceAllSum(Mul(v, StopGradient(tangents[k]))))
	}
	return Gradient(dot, a)[0]
}
