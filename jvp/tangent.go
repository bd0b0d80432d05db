package jvp

import (
	"slices"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/support/exceptions"
)

// propagate computes the tangent of each node of nodes (a walk's, in topological order) from
// tan, which holds the tangents of the sources they depend on, and adds it to tan. A zero tangent
// is carried as a missing entry and never materialised: a term of a rule whose tangent input is
// zero is dropped, and a node with only zero tangent inputs has a zero tangent. StopGradient
// nodes (GoMLX marks comparisons so) and nodes of integer or boolean dtype have a zero tangent,
// as their VJP is zero. An op without a rule in Rules falls back to localJVP. When a rule fails,
// propagate returns the node and the error.
func propagate(nodes []*Node, tan map[*Node]*Node) (*Node, error) {
	for _, n := range nodes {
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
		if err := exceptions.TryCatch[error](func() { t = nodeTangent(n, ts) }); err != nil {
			return n, err
		}
		if t != nil {
			tan[n] = fit(t, n.Shape())
		}
	}
	return nil, nil
}

// Rules maps each op type to its forward-mode rule. Ops without one fall back to the double VJP
// of the op alone (see the package documentation). Like graph.VJPRegistration, it may be extended
// or changed by other packages, before graphs are built:
//
//	jvp.Rules[graph.NodeTypeMyOp] = func(node *graph.Node, tangents []*graph.Node) *graph.Node { … }
//
// The rules follow GoMLX's reverse-mode conventions (VJPRegistration), so that ⟨J v, u⟩ = ⟨v, Jᵀu⟩
// with Jᵀu from graph.Gradient, except where Adjoints registers another reverse-mode rule.
var Rules = map[NodeType]Rule{
	// Linear (jointly in all inputs) and structural ops: the op applied to the tangents
	// (rules_linear.go).
	NodeTypeIdentity: linearTangent, NodeTypeReshape: linearTangent, NodeTypeTranspose: linearTangent,
	NodeTypeBroadcastInDim: linearTangent, NodeTypeSlice: linearTangent, NodeTypeConcatenate: linearTangent,
	NodeTypeReduceSum: linearTangent, NodeTypeNeg: linearTangent, NodeTypeConvertDType: linearTangent,
	NodeTypeReverse: linearTangent, NodeTypeCumSum: linearTangent,
	NodeTypePad:    linearTangent,   // linear in (x, pad value) jointly
	NodeTypeGather: linearExcept(1), // (operand, indices)
	NodeTypeWhere:  linearExcept(0), // (condition, onTrue, onFalse)
	NodeTypeAdd:    addTangent, NodeTypeSub: addTangent,

	// Multilinear ops: one term per input with a tangent (rules_linear.go, rules_fused.go).
	NodeTypeDotGeneral:  multilinearTangent,
	NodeTypeConvGeneral: multilinearTangent,
	NodeTypeMul:         multilinearTangent,
	NodeTypeDiv:         divTangent,
	NodeTypeFusedDense:  fusedDenseTangent,

	// Element-wise non-linear ops: the derivative in terms of primal nodes (rules_elementwise.go).
	NodeTypeExp:      unary(func(x, y *Node) *Node { return y }),
	NodeTypeExpm1:    unary(func(x, y *Node) *Node { return AddScalar(y, 1) }),
	NodeTypeLog:      unary(func(x, y *Node) *Node { return Reciprocal(x) }),
	NodeTypeLog1p:    unary(func(x, y *Node) *Node { return Reciprocal(AddScalar(x, 1)) }),
	NodeTypeTanh:     unary(func(x, y *Node) *Node { return OneMinus(Square(y)) }),
	NodeTypeLogistic: unary(func(x, y *Node) *Node { return Mul(y, OneMinus(y)) }),
	NodeTypeSqrt:     unary(func(x, y *Node) *Node { return Reciprocal(MulScalar(y, 2)) }),
	NodeTypeRsqrt:    unary(func(x, y *Node) *Node { return MulScalar(Mul(y, Square(y)), -0.5) }),
	NodeTypeErf:      unary(erfDerivative),
	NodeTypeAbs:      unary(func(x, y *Node) *Node { return Sign(x) }),
	NodeTypeSin:      unary(func(x, y *Node) *Node { return Cos(x) }),
	NodeTypeCos:      unary(func(x, y *Node) *Node { return Neg(Sin(x)) }),
	NodeTypeSign:     zeroTangent, NodeTypeFloor: zeroTangent, NodeTypeCeil: zeroTangent,
	NodeTypeRound: zeroTangent,
	NodeTypeMax:   minMaxTangent, NodeTypeMin: minMaxTangent,
	NodeTypeClamp: clampTangent,
	NodeTypePow:   powTangent,

	NodeTypeFusedActivation: diagonalTangent,

	// Reductions that select (rules_reduce.go).
	NodeTypeReduceMax:    reduceExtremumTangent,
	NodeTypeReduceMin:    reduceExtremumTangent,
	NodeTypeReduceWindow: reduceWindowTangent,
}

// Adjoint returns node, for an op whose GoMLX reverse-mode rule is not the transpose of its rule
// in Rules, as a node of the same value whose reverse-mode rule is: Linearization.VJP
// differentiates the outputs rebuilt on it, so that its products stay adjoint to the JVP's.
type Adjoint func(node *Node) *Node

// Adjoints maps the op types whose reverse-mode rule Linearization.VJP replaces to their Adjoint:
// ReduceMax and ReduceMin at ties (see reduceExtremumTangent), ConvGeneral with a kernel of even
// size (convAdjoint). It may be extended as Rules is.
var Adjoints = map[NodeType]Adjoint{
	NodeTypeReduceMax:   reduceExtremumAdjoint,
	NodeTypeReduceMin:   reduceExtremumAdjoint,
	NodeTypeConvGeneral: convAdjoint,
}

// nodeTangent applies n's rule, or localJVP when its op has none.
func nodeTangent(n *Node, ts []*Node) *Node {
	if rule, ok := Rules[n.Type()]; ok {
		return rule(n, ts)
	}
	return localJVP(n, ts)
}

// localJVP is the tangent of one op by the double-VJP identity: a ↦ J_nᵀa is linear, hence
// J_n t = ∇_a⟨J_nᵀa, t⟩ at any a (here 0), with J_nᵀa from GoMLX's VJP of n alone. It serves ops
// without a rule whose VJP GoMLX can differentiate again, such as the fused ops whose VJP GoMLX
// builds from their decomposed form (FusedLayerNorm, FusedSoftmax).
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
