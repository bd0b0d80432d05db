// Package jvp differentiates GoMLX graphs in forward mode: it builds Jacobian-vector products
// J v of any nodes of a graph with respect to any nodes they depend on, which GoMLX's reverse
// mode (graph.Gradient) does not offer. With both modes one gets Hessian-vector products by
// forward-over-reverse (the J v of a gradient, see Example), Gauss-Newton products Jᵀ(H (J v))
// for least squares and classifiers, and Jacobian products for sensitivity analysis.
//
//   - JVP(outputs, wrt, tangents) returns J v, propagating the tangents through the graph once.
//   - Linearize(outputs, wrt) builds J once and applies it, and its transpose, to any number of
//     vectors (Linearization.JVP and Linearization.VJP, ⟨J v, u⟩ = ⟨v, Jᵀu⟩), and evaluates the
//     outputs at other values of wrt (Linearization.At). Its products may be applied inside a
//     While loop (Linearization.WhileSafe).
//   - Substitute evaluates outputs at other values of wrt, and Dependents lists the nodes between
//     wrt and the outputs, those JVP gives a tangent to.
//   - MatchAffine recognises outputs that are a dense layer affine in wrt, whose products have
//     closed forms.
//   - LowerConvolutions computes the convolutions of a model's forward pass as matrix products on
//     the pure-Go backend (see Passes), an opt-in.
//
// The nodes of wrt may be variables' values, graph parameters or intermediate nodes. Nodes that
// do not depend on wrt (the batch, non-trainable variables) are shared with the graph, never
// copied, and have a zero tangent, as have StopGradient nodes and nodes of integer or boolean
// dtype.
//
// # How
//
// The nodes between wrt and the outputs are walked in topological order (walk.go), and the
// tangent of each is built from its inputs' tangents by the rule of its op type (tangent.go, with
// the rules in Rules), in terms of the primal nodes, which the forward pass computes once: J v
// costs about one more forward pass of the nodes that depend on wrt. A zero tangent is never
// materialised: a term of a rule whose tangent input is zero is dropped.
//
// The ops with a rule, and their rules:
//
//	Identity Reshape Transpose BroadcastInDim   linear: the op applied to the tangents
//	Slice Concatenate Pad ReduceSum Neg Add Sub
//	ConvertDType Reverse CumSum
//	Gather Where                                 linear in all inputs but the indices, the condition
//	DotGeneral ConvGeneral Mul                   multilinear: one term per input with a tangent
//	Div                                          quotient rule
//	FusedDense                                   multilinear, then the activation's derivative
//	Exp Expm1 Log Log1p Tanh Logistic Sqrt       the derivative, from the op's input and output
//	Rsqrt Erf Abs Sin Cos Pow
//	Sign Floor Ceil Round                        zero
//	Max Min Clamp                                the tangent of the operand selected (GoMLX's at ties)
//	FusedActivation (ReLU, GELU, swish, …)       its VJP, which is its JVP (diagonal Jacobian)
//	ReduceMax ReduceMin                          the mean of the tangents of the tied entries
//	ReduceWindow                                 sum pooling: linear; max and min pooling: the
//	                                             tangent at each window's first extremal element
//
// Every other op falls back to the double VJP of that op alone, J_n t = ∇_a⟨J_nᵀa, t⟩ at a = 0
// with J_nᵀa from GoMLX's VJP of the op: it covers the fused ops whose VJP GoMLX builds from
// their decomposed form (FusedSoftmax, FusedLayerNorm, FusedScaledDotProductAttention) and any
// other op whose VJP GoMLX can differentiate again. An op that neither covers panics when its
// product is built, naming the op and the nodes of wrt it depends on.
//
// At ties (ReduceMax, ReduceMin, Max, Min, max pooling) J v is the directional derivative wherever
// the tied entries' tangents are equal, as when they are the same parameter. For ReduceMax and
// ReduceMin this takes the mean over the tied entries, JAX's convention, where GoMLX's VJP credits
// every tied entry: Adjoints gives Linearization.VJP the transpose of the forward rule there (see
// compat.go: compatReduceMaxTies). Elsewhere the rules follow GoMLX's reverse-mode conventions,
// so Linearization.VJP is GoMLX's reverse mode.
//
// # Compared with the double VJP of the whole graph
//
// J v is also ∇_a⟨Jᵀa, v⟩ for any a, with Jᵀa by reverse mode: two reverse passes and no rules.
// That needs the gradient of every op's gradient, which GoMLX's fused Dense and convolution VJPs
// lack (see compat.go: compatFusedDenseVJPNoGradient, compatConvVJPNotDifferentiable), and it
// differentiates a reverse pass, so J v costs a forward and a reverse pass more than a tangent
// pass. Second-order rules registered for those VJPs would mend the first problem and keep the
// second. This package keeps the identity for single ops without a rule.
//
// # Adding a rule
//
// Rules maps op types to rules, as graph.VJPRegistration maps them to VJPs, and may be extended
// or changed by any package before graphs are built. A Rule receives the node and the tangents
// of its inputs (nil for zero) and returns the node's tangent; for Atan2, which has neither a
// rule nor a VJP (see ExampleRules):
//
//	// atan2(y, x)′ = (x ẏ − y ẋ)/(x² + y²)
//	jvp.Rules[graph.NodeTypeAtan2] = func(node *graph.Node, tangents []*graph.Node) *graph.Node {
//		y, x := node.Inputs()[0], node.Inputs()[1]
//		dy, dx := tangents[0], tangents[1]
//		if dy == nil {
//			dy = graph.ZerosLike(y)
//		}
//		if dx == nil {
//			dx = graph.ZerosLike(x)
//		}
//		return graph.Div(graph.Sub(graph.Mul(x, dy), graph.Mul(y, dx)), graph.Add(graph.Square(x), graph.Square(y)))
//	}
//
// An op whose GoMLX VJP is not the transpose of its new rule registers an Adjoint too, so that
// Linearization.VJP stays adjoint to Linearization.JVP.
//
// # Passes
//
// Linearize builds its two products once, from placeholder inputs, and applies them by cloning
// the nodes that depend on those inputs. Before the first application, each product goes through
// the package's passes, rewrites that keep its values and move work out of the clones. On the
// pure-Go backend, whose direct convolution is slower than its matrix product on most layers, the
// convolution pass (convlower.go) computes each convolution with enough output channels per
// group to pay for it as one matrix product of its input's patches and its kernel (im2col), the
// patches of an input that does not depend on the map's inputs formed once; other backends keep
// their convolutions. Then relayout (relayout.go) lays
// out the operands of matrix products once, as the pure-Go backend's DotGeneral multiplies them
// without copying, and small products' invariant operands as its small SIMD kernels multiply
// them fastest; other backends compute the same values from the rewritten graph.
// LowerConvolutions offers the convolution pass to a model's own forward pass, and At lowers the
// convolutions of the outputs it evaluates.
//
// # GoMLX internals
//
// GoMLX does not expose ops' static parameters (axes, window sizes, a fused layer's
// configuration). params.go, the package's one adapter to GoMLX's internals, reads them by
// reflection into typed values; compat.go lists that gap (compatOpParams) with the upstream
// accessor that would remove it, beside the other upstream bugs the package works around, each
// with its reproduction test.
package jvp
