package jvp

import (
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/support/exceptions"
)

// JVP returns J v, the tangents of outputs when the nodes wrt move along tangents (one per node
// of wrt, shaped like it; nil for a zero tangent): forward-mode differentiation of the graph as
// built. The nodes of wrt may be any nodes the outputs depend on: variables' values, parameters,
// or intermediate nodes (whose own inputs are then held fixed). An output that does not depend
// on wrt has a zero tangent; it panics if none does, or when an op has no forward-mode rule,
// naming the op and the inputs it depends on.
//
// Each call propagates tangents through the graph anew; to apply J or Jᵀ to many vectors, build
// a Linearization once.
func JVP(outputs, wrt, tangents []*Node) []*Node {
	return newWalk(outputs, wrt).tangent(tangents)
}

// Substitute returns outputs computed with values in place of the nodes wrt (shaped like them),
// by a clone of the nodes between wrt and the outputs: a function of the graph evaluated at
// another point, such as a trial step's. An output that does not depend on wrt is returned as it
// is; it panics if none does.
func Substitute(outputs, wrt, values []*Node) []*Node {
	return newWalk(outputs, wrt).at(values)
}

// Dependents returns the nodes between wrt and outputs: those the outputs depend on that depend
// on a node of wrt (and are not one), in topological order, every node after its inputs. They are
// the nodes JVP gives a tangent to and Substitute clones; none when no output depends on wrt.
func Dependents(outputs, wrt []*Node) []*Node {
	source := make(map[*Node]int, len(wrt))
	for i, n := range wrt {
		source[n] = i
	}
	nodes, _ := dependents(outputs, source)
	return nodes
}

// Linearization is a differentiable map of graph nodes, outputs = f(wrt), linearised at the
// values wrt have in the graph: the Jacobian J of the outputs with respect to wrt, built once and
// applied to any number of tangents (JVP) and cotangents (VJP), and f evaluated at other values
// of wrt (At). It is what an optimizer that solves with J — Gauss-Newton, a Krylov method on a
// Hessian — needs.
type Linearization struct {
	outputs, wrt []*Node
	walk         *walk      // from wrt to outputs
	jvp, vjp     *linearMap // built on first use (products)
}

// Linearize returns the linearisation of outputs with respect to wrt. It panics if no output
// depends on wrt; an op without a forward-mode rule panics when a product is first asked for.
//
// Both products are built once, from placeholder inputs, by the first call of JVP, VJP or
// WhileSafe, which must not be made inside a While body, and then rewritten by the package's
// passes (the convolution pass, relayout). Every later call clones the nodes between the
// placeholders and the product with its own input substituted: it differentiates nothing, may be
// made inside a While body (see WhileSafe), and reuses the forward nodes of outputs, so the
// forward pass is computed once whatever the number of products.
func Linearize(outputs, wrt []*Node) *Linearization {
	if len(wrt) == 0 {
		exceptions.Panicf("jvp.Linearize: no nodes to differentiate with respect to")
	}
	return &Linearization{outputs: outputs, wrt: wrt, walk: newWalk(outputs, wrt)}
}

// Outputs returns the nodes the linearisation maps to.
func (l *Linearization) Outputs() []*Node { return l.outputs }

// Wrt returns the nodes the Jacobian is taken with respect to.
func (l *Linearization) Wrt() []*Node { return l.wrt }

// JVP returns J v for tangents v shaped like Wrt (nil for a zero tangent), shaped like Outputs.
func (l *Linearization) JVP(v ...*Node) []*Node {
	if len(v) != len(l.wrt) {
		exceptions.Panicf("jvp: JVP got %d tangents for %d inputs", len(v), len(l.wrt))
	}
	l.products()
	in := make([]*Node, len(v))
	for k, t := range v {
		if in[k] = t; t == nil {
			in[k] = ZerosLike(l.wrt[k])
		}
	}
	return l.jvp.apply(in)
}

// VJP returns Jᵀu for cotangents u shaped like Outputs, shaped like Wrt: the transpose of JVP,
// ⟨J v, u⟩ = ⟨v, Jᵀu⟩. It is GoMLX's reverse mode, except at the ops whose reverse-mode rule
// Adjoints replaces. The cotangents are constants: cotangents built from the outputs are not
// differentiated.
func (l *Linearization) VJP(u ...*Node) []*Node {
	if len(u) != len(l.outputs) {
		exceptions.Panicf("jvp: VJP got %d cotangents for %d outputs", len(u), len(l.outputs))
	}
	l.products()
	return l.vjp.apply(u)
}

// At returns the outputs computed with values in place of wrt (shaped like them): f at another
// point, such as a trial step's, by a clone of the nodes between wrt and the outputs, its
// convolutions lowered as the products' are (lowerConvolutions).
func (l *Linearization) At(values ...*Node) []*Node {
	return lowerConvolutions(l.walk.at(values), values)
}

// WhileSafe reports whether JVP and VJP may be called inside the body of a GoMLX While loop on
// every backend: both products can be built, and their clones hold no broadcast that the pure-Go
// backend's optimiser rewires after the loop body is compiled (see compat.go:
// compatWhileGradient). It builds the products, so it must not itself be called inside a While
// body.
func (l *Linearization) WhileSafe() bool {
	l.products()
	return l.jvp.err == nil && l.vjp.err == nil && l.jvp.walk.closureSafe() && l.vjp.walk.closureSafe()
}

// products builds the two products' linear maps, once, in the function being built.
func (l *Linearization) products() {
	if l.jvp != nil {
		return
	}
	tangents := placeholders(l.wrt...)
	l.jvp = newLinearMap(tangents, func() []*Node { return l.walk.tangent(tangents) })
	cotangents := placeholders(l.outputs...)
	l.vjp = newLinearMap(cotangents, func() []*Node { return l.walk.transpose(cotangents) })
}

// A pass rewrites the outputs outs of a linear map built from the inputs in into nodes of the same
// values (to rounding, on every backend) that are cheaper to apply by cloning, typically by
// moving work that does not depend on in out of the clones.
type pass func(outs, in []*Node) []*Node

// passes are the passes applied, in order, to every linear map Linearize builds (its JVP and its
// VJP), before the map is first applied.
var passes = []pass{lowerConvolutions, relayout}

// linearMap is a linear map of nodes built once, in the function being built, from placeholder
// inputs, rewritten by the passes, and applied to other inputs by cloning the nodes between the
// placeholders and its outputs (walk.at). An application differentiates nothing, so it costs no
// Gradient call, and it may be built inside a While body. A map that cannot be built (an op
// without a rule or without a VJP) keeps the error, which applying it raises.
type linearMap struct {
	walk *walk
	err  error
}

func newLinearMap(in []*Node, build func() []*Node) *linearMap {
	m := &linearMap{}
	m.err = exceptions.TryCatch[error](func() {
		outs := build()
		for _, p := range passes {
			outs = p(outs, in)
		}
		m.walk = newWalk(outs, in)
	})
	return m
}

func (m *linearMap) apply(in []*Node) []*Node {
	if m.err != nil {
		panic(m.err)
	}
	return m.walk.at(in)
}

// placeholders returns a distinct node shaped like each of xs, to build a linearMap from.
func placeholders(xs ...*Node) []*Node {
	out := make([]*Node, len(xs))
	for k, x := range xs {
		out[k] = Identity(ZerosLike(x))
	}
	return out
}
