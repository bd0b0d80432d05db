package fgn

import (
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/support/exceptions"

	"github.com/fgn-paper/fgn/jvp"
)

// Vec is a point or a direction in parameter space: one node per model parameter tensor,
// in a fixed order. It is the parameter-space vector type of every operator in this package.
type Vec = []*Node

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
// as built, for any GoMLX model: package jvp's linearisation of the logits with respect to params.
//
// JVP is forward mode by graph transformation, one tangent rule per op type (see package jvp for
// the ops covered), so J_z v costs about one more forward pass of the layers that depend on the
// parameters. VJP is its transpose, GoMLX's reverse mode but at ties of ReduceMax and ReduceMin,
// where J_z v averages over the tied entries, and at convolutions with a kernel of even size,
// where GoMLX's VJP is shifted: ⟨J_z v, u⟩ = ⟨v, J_zᵀu⟩ holds to rounding. On the pure-Go
// backend the products' convolutions, and those of LogitsAt, run as matrix products (package
// jvp's convolution pass); jvp.LowerConvolutions offers the same to the model's own forward pass.
// StopGradient nodes, and everything that does not depend on params (non-trainable variables,
// the batch), have a zero tangent. An op that no rule covers panics when a product is built,
// naming the op and the parameters it depends on.
//
// Both products are built once, by the first product or WhileSafe call, which must not be made
// inside a While body; later calls clone them, reuse the forward nodes of logits (the forward
// pass is computed once per step, whatever the number of products) and may be made inside a
// While body. The linearisation is WhileSafe when the pure-Go backend runs those clones in a
// While loop, and CG then stops as soon as it converges.
//
// The linearisation is a LogitsEvaluator: LogitsAt(w') evaluates the logits with w' substituted
// for params, so adaptive damping evaluates the loss at a trial point on any model.
func Linearize(logits *Node, params Vec) LogitsEvaluator {
	if logits.Rank() != 2 {
		exceptions.Panicf("fgn.Linearize: logits must be b×C, got %s", logits.Shape())
	}
	if len(params) == 0 {
		exceptions.Panicf("fgn.Linearize: no parameters given")
	}
	return &autodiffLinearization{logits: logits, params: params, lin: jvp.Linearize([]*Node{logits}, params)}
}

type autodiffLinearization struct {
	logits *Node
	params Vec
	lin    *jvp.Linearization
}

func (l *autodiffLinearization) Logits() *Node { return l.logits }
func (l *autodiffLinearization) Params() Vec   { return l.params }

// VJP treats m as a constant: cotangents built from the logits (such as a ⊙ ∇_z s) must not be
// differentiated.
func (l *autodiffLinearization) VJP(m *Node) Vec           { return l.lin.VJP(m) }
func (l *autodiffLinearization) JVP(v Vec) *Node           { return l.lin.JVP(v...)[0] }
func (l *autodiffLinearization) LogitsAt(params Vec) *Node { return l.lin.At(params...)[0] }
func (l *autodiffLinearization) WhileSafe() bool           { return l.lin.WhileSafe() }
