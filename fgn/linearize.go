package fgn

import (
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/support/exceptions"
)

// Vec is a point or a direction in parameter space: one node per model parameter tensor,
// in a fixed order. It is the parameter-space vector type of every operator in this package.
type Vec []*Node

// Linearization is the logit map z(w) linearised at the current parameters: the logits and
// products with the logit Jacobian J_z (b·C × d). It is built once per step; VJP and JVP may be
// called any number of times and reuse the forward pass.
//
// Linearize provides it for any model by autodiff and NewAffineHead in closed form for an affine
// head; a model whose Jacobian products have another closed form implements it and hands it to
// the optimizers with RecordLinearization (or UpdateGraphWithLinearization). It may also
// implement GramLinearization (a closed-form margin Gram, for FGN's ClosedFormGram row operator),
// LogitsEvaluator (the logits at other parameters, for adaptive damping), LinearInParams and
// WhileSafe.
type Linearization interface {
	// Logits returns z (b×C) at the linearisation point.
	Logits() *Node
	// Params returns the parameter nodes w that the Jacobian is taken with respect to.
	Params() Vec
	// VJP returns J_zᵀ m for a cotangent m (b×C), shaped like Params.
	VJP(m *Node) Vec
	// JVP returns J_z v (b×C) for a tangent v shaped like Params.
	JVP(v Vec) *Node
}

// LogitsEvaluator is a Linearization that can also evaluate the logit map at other parameters,
// as adaptive damping needs for the batch loss at the trial point w + s (see DampingPolicy).
// Linearize provides it for any model.
type LogitsEvaluator interface {
	Linearization
	// LogitsAt returns the logits (b×C) of the same batch at params, shaped like Params().
	LogitsAt(params Vec) *Node
}

// LinearInParams is implemented by a Linearization that may state that its logits are affine in
// its parameters, z(w + s) = z + J_z s exactly (AffineHead does). Adaptive damping then takes the
// logits at the trial point from the product J_z s it already forms instead of evaluating the
// model (LogitsEvaluator); a Linearization that is neither needs a constant damping policy.
type LinearInParams interface {
	Linearization
	// LinearInParams reports whether the logits are affine in the parameters.
	LinearInParams() bool
}

// WhileSafe is implemented by a Linearization that may state that its VJP and JVP can be built
// inside the body of a GoMLX While loop (AffineHead does). CG then iterates in a While loop that
// exits as soon as its stopping rule holds, and on XLA the whole solve stays on the device;
// otherwise CG's iterations are unrolled and masked, so every one of CGSettings.MaxIterations is
// computed. FGN's closed-form Gram needs neither: it is formed before the loop, whose body then
// holds b×b products only.
type WhileSafe interface {
	Linearization
	// WhileSafe reports whether VJP and JVP may be called inside a While body.
	WhileSafe() bool
}

// inWhileLoop reports whether CG may iterate on lin's products in a While loop.
func inWhileLoop(lin Linearization) bool {
	w, ok := lin.(WhileSafe)
	return ok && w.WhileSafe()
}

// linearInParams reports whether lin's logits are affine in its parameters.
func linearInParams(lin Linearization) bool {
	l, ok := lin.(LinearInParams)
	return ok && l.LinearInParams()
}

// Linearize returns the linearisation of any logits node computed from params by the graph
// as built, for any GoMLX model.
//
// VJP is GoMLX reverse mode, one reverse pass: VJP(m) = ∇_w⟨z(w), m⟩.
//
// JVP is forward mode by graph transformation: the nodes between params and logits are walked
// in topological order and each one's tangent is built from its inputs' tangents by a rule per
// op type, so J_z v costs about one more forward pass of the layers that depend on the
// parameters. The rules cover:
//
//   - linear and structural ops (Reshape, Transpose, BroadcastInDim, Slice, Concatenate, Pad,
//     Gather (embeddings), ReduceSum, sum pooling, Add, Sub, Neg, ConvertDType, Reverse, Where):
//     the op applied to the tangents;
//   - multilinear ops (DotGeneral, ConvGeneral, Mul, FusedDense): one term per input with a
//     tangent, the op with that input replaced by its tangent; Div by the quotient rule;
//   - element-wise maps (Exp, Log, Log1p, Expm1, Tanh, Logistic, Sqrt, Rsqrt, Pow, Erf, Abs, Sin,
//     Cos, Max, Min, Clamp) by their derivatives in terms of the primal nodes, and the fused
//     activations (FusedActivation: ReLU, leaky ReLU, GELU, swish, …, and FusedDense's) by their
//     VJP, which equals their JVP as their Jacobian is diagonal;
//   - max and min pooling, with windows that overlap or not and padding, by the tangent at each
//     window's selected element, the one GoMLX's VJP selects;
//   - any other op by the double VJP of that op alone (localJVP), which covers the fused ops whose
//     VJP GoMLX builds from their decomposed form (FusedLayerNorm, FusedSoftmax) and ReduceMax.
//
// StopGradient nodes, and everything that does not depend on params (non-trainable variables,
// the batch), have a zero tangent. An op that no rule covers panics with an error naming the op
// and the parameters it depends on. The forward rules follow GoMLX's reverse-mode conventions
// (at ties of Max and Min, for instance), so ⟨J_z v, u⟩ = ⟨v, J_zᵀu⟩ holds to rounding.
//
// Forward mode rather than the double-VJP identity J_z v = ∇_a⟨J_zᵀa, v⟩ for the whole model:
// that needs the gradient of every op's gradient, which GoMLX's fused Dense and convolution
// VJPs do not have (see compat.go: compatFusedDenseVJPNoGradient, compatConvVJPNotDifferentiable),
// and it differentiates a reverse pass, so it costs a forward and a reverse pass more than a
// tangent pass does; second-order rules registered in graph.VJPRegistration for those VJPs would
// mend the first problem and keep the second.
//
// Both products are built once, from placeholder inputs, by the first product or WhileSafe call,
// which must not be made inside a While body. Every later call of VJP or JVP clones the nodes
// between the placeholders and the product with its own input substituted: it differentiates
// nothing, and may be made inside a While body. The linearisation is WhileSafe when the pure-Go
// backend runs those clones in a While loop (see compat.go: compatWhileGradient), and CG then
// stops as soon as it converges. A product that cannot be built panics when it is called, naming
// the op. All products reuse the forward nodes of logits, so the forward pass is computed once
// per step, whatever the number of products.
//
// The linearisation is a LogitsEvaluator: LogitsAt(w') clones the walk from params to logits with
// w' substituted for params, its convolutions lowered as the products' are (lowerConvolutions),
// so adaptive damping evaluates the loss at a trial point on any model.
func Linearize(logits *Node, params Vec) LogitsEvaluator {
	if logits.Rank() != 2 {
		exceptions.Panicf("fgn.Linearize: logits must be b×C, got %s", logits.Shape())
	}
	if len(params) == 0 {
		exceptions.Panicf("fgn.Linearize: no parameters given")
	}
	return &autodiffLinearization{logits: logits, params: params, walk: walk([]*Node{logits}, params)}
}

type autodiffLinearization struct {
	logits   *Node
	params   Vec
	walk     *subgraph  // from params to logits
	jvp, vjp *linearMap // built on first use (products)
}

// products builds the two products' linear maps, once, in the function being built: the first
// call must not be inside a While body, which FGNDirection and SGNDirection ensure by asking
// WhileSafe first.
func (l *autodiffLinearization) products() {
	if l.jvp != nil {
		return
	}
	tangents := placeholders(l.params...)
	l.jvp = newLinearMap(tangents, func() []*Node { return l.walk.tangent(tangents) })
	cotangent := placeholders(l.logits)
	l.vjp = newLinearMap(cotangent, func() []*Node {
		return Gradient(ReduceAllSum(Mul(l.logits, StopGradient(cotangent[0]))), l.params...)
	})
}

func (l *autodiffLinearization) Logits() *Node { return l.logits }
func (l *autodiffLinearization) Params() Vec   { return l.params }

// VJP treats m as a constant: cotangents built from the logits (such as a ⊙ ∇_z s) must not be
// differentiated.
func (l *autodiffLinearization) VJP(m *Node) Vec {
	l.products()
	return l.vjp.apply(m)
}

func (l *autodiffLinearization) JVP(v Vec) *Node {
	if len(v) != len(l.params) {
		exceptions.Panicf("fgn.Linearize: JVP got %d tangents for %d parameters", len(v), len(l.params))
	}
	l.products()
	return l.jvp.apply(v...)[0]
}

func (l *autodiffLinearization) LogitsAt(params Vec) *Node {
	return lowerConvolutions(l.walk.clone(params), params)[0]
}

// WhileSafe reports whether both products may be cloned inside a While body: they can be built
// and subgraph.closureSafe holds.
func (l *autodiffLinearization) WhileSafe() bool {
	l.products()
	return l.jvp.err == nil && l.vjp.err == nil && l.jvp.sg.closureSafe() && l.vjp.sg.closureSafe()
}

// linearMap is a linear map of nodes built once, in the function being built, from placeholder
// inputs, with the operands of its matrix products laid out for its clones (relayout), and
// applied to other inputs by cloning the nodes between the placeholders and its outputs
// (subgraph.clone). An application differentiates nothing, so it costs no Gradient call,
// and it may be built inside a While body. A map that cannot be built (an op without a rule or
// without a VJP) keeps the error, which applying it raises.
type linearMap struct {
	sg  *subgraph
	err error
}

func newLinearMap(in []*Node, build func() []*Node) *linearMap {
	m := &linearMap{}
	m.err = exceptions.TryCatch[error](func() { m.sg = walk(relayout(lowerConvolutions(build(), in), in), in) })
	return m
}

func (m *linearMap) apply(in ...*Node) []*Node {
	if m.err != nil {
		panic(m.err)
	}
	return m.sg.clone(in)
}

// placeholders returns a distinct node shaped like each of xs, to build a linearMap from.
func placeholders(xs ...*Node) []*Node {
	out := make([]*Node, len(xs))
	for k, x := range xs {
		out[k] = Identity(ZerosLike(x))
	}
	return out
}

// vecDot returns Σ_k ⟨a_k, b_k⟩ as a scalar node.
func vecDot(a, b Vec) *Node {
	var sum *Node
	for k := range a {
		term := ReduceAllSum(Mul(a[k], b[k]))
		if sum == nil {
			sum = term
		} else {
			sum = Add(sum, term)
		}
	}
	return sum
}

// vecAxpy returns x + alpha·y, alpha a scalar node.
func vecAxpy(x Vec, alpha *Node, y Vec) Vec {
	out := make(Vec, len(x))
	for k := range x {
		out[k] = Add(x[k], Mul(ConvertDType(alpha, y[k].DType()), y[k]))
	}
	return out
}

// vecScale returns alpha·x, alpha a scalar node.
func vecScale(alpha *Node, x Vec) Vec {
	out := make(Vec, len(x))
	for k := range x {
		out[k] = Mul(ConvertDType(alpha, x[k].DType()), x[k])
	}
	return out
}

func vecZerosLike(x Vec) Vec {
	out := make(Vec, len(x))
	for k := range x {
		out[k] = ZerosLike(x[k])
	}
	return out
}
