package jvp

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/support/exceptions"
)

// walk is the part of a built graph that lies between a set of source nodes and some outputs:
// the nodes the outputs depend on that depend on a source, in topological order (every node
// after its inputs). It serves three transformations:
//
//   - clone rebuilds the outputs with other nodes substituted for the sources (Node.CloneWithInputs
//     on each node downstream of a substitute): the outputs at other values of the sources
//     (Linearization.At), or a map built once from placeholder inputs and applied to other inputs
//     (linearMap);
//   - tangent propagates tangents of the sources forward through the walk (the engine,
//     tangent.go) and returns the outputs' tangents: J v;
//   - transpose returns Jᵀu by GoMLX's reverse mode, on a clone whose ops follow the forward
//     rules' conventions (Adjoints).
//
// Nodes that do not depend on a source (the batch, non-trainable variables) are shared, never
// copied.
type walk struct {
	outputs []*Node
	sources []*Node
	source  map[*Node]int // index in sources
	nodes   []*Node       // dependents of the sources reached from outputs, topological order
}

// newWalk returns the walk from sources to outputs. It panics if no output depends on a source.
func newWalk(outputs, sources []*Node) *walk {
	w := &walk{outputs: outputs, sources: sources, source: make(map[*Node]int, len(sources))}
	for i, src := range sources {
		w.source[src] = i
	}
	var reached bool
	if w.nodes, reached = dependents(outputs, w.source); !reached {
		exceptions.Panicf("jvp: %s does not depend on any of the %d nodes it is differentiated with respect to",
			outputs[0], len(sources))
	}
	return w
}

// dependents returns the nodes the outputs depend on that depend on a source (but are not one),
// in topological order, and whether any output depends on a source or is one.
func dependents(outputs []*Node, source map[*Node]int) (nodes []*Node, reached bool) {
	depends := make(map[*Node]bool)
	var visit func(n *Node) bool
	visit = func(n *Node) bool {
		if d, seen := depends[n]; seen {
			return d
		}
		if _, ok := source[n]; ok {
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
			nodes = append(nodes, n)
		}
		return d
	}
	for _, out := range outputs {
		if visit(out) {
			reached = true
		}
	}
	return nodes, reached
}

// at returns the outputs computed from values in place of the sources (same shapes and dtypes).
func (w *walk) at(values []*Node) []*Node {
	if len(values) != len(w.sources) {
		exceptions.Panicf("jvp: got %d values for %d inputs", len(values), len(w.sources))
	}
	subst := make(map[*Node]*Node, len(values))
	for i, src := range w.sources {
		if !values[i].Shape().Equal(src.Shape()) {
			exceptions.Panicf("jvp: input %d has shape %s, its substitute %s", i, src.Shape(), values[i].Shape())
		}
		subst[src] = values[i]
	}
	return w.clone(subst, nil)
}

// clone returns the outputs rebuilt with subst[n] in place of each source n it holds: every node
// of the walk downstream of a substitute is rebuilt on its new inputs, and every other node is
// kept. When adjust is not nil, each node of the walk, rebuilt or kept, is replaced by adjust's
// result (the node itself, or another of the same value) before the nodes that read it are built.
func (w *walk) clone(subst map[*Node]*Node, adjust func(*Node) *Node) []*Node {
	value := make(map[*Node]*Node, len(w.nodes)+len(subst))
	for n, v := range subst {
		value[n] = v
	}
	for _, n := range w.nodes {
		in := slices.Clone(n.Inputs())
		changed := false
		for k, x := range in {
			if v, ok := value[x]; ok {
				in[k], changed = v, true
			}
		}
		v := n
		switch {
		case !changed:
		case fusedBroadcast(n) && in[0] != n.Inputs()[0]:
			v = unfusedBroadcast(in[0], n.Shape())
		default:
			v = cloneNode(n, in)
		}
		if adjust != nil {
			v = adjust(v)
		}
		if v != n {
			value[n] = v
		}
	}
	outs := make([]*Node, len(w.outputs))
	for k, out := range w.outputs {
		if outs[k] = value[out]; outs[k] == nil {
			outs[k] = out // does not depend on a substitute
		}
	}
	return outs
}

// tangent returns the tangents of the outputs given the tangents v of the sources (shaped like
// them; a nil entry is a zero tangent): J v, where J is the Jacobian of the outputs with respect
// to the sources, by the rules of Rules (see propagate). When no rule covers an op it panics
// naming the op and the sources it depends on.
func (w *walk) tangent(v []*Node) []*Node {
	if len(v) != len(w.sources) {
		exceptions.Panicf("jvp: got %d tangents for %d inputs", len(v), len(w.sources))
	}
	tan := make(map[*Node]*Node, len(w.nodes)+len(v))
	for i, src := range w.sources {
		if v[i] != nil {
			if !v[i].Shape().Equal(src.Shape()) {
				exceptions.Panicf("jvp: tangent %d has shape %s, want %s", i, v[i].Shape(), src.Shape())
			}
			tan[src] = v[i]
		}
	}
	if n, err := propagate(w.nodes, tan); err != nil {
		panic(fmt.Errorf("jvp: cannot differentiate op %s (%s)%s in forward mode: %w", n.Type(), n.Shape(), w.layerOf(n), err))
	}
	outs := make([]*Node, len(w.outputs))
	for k, out := range w.outputs {
		if outs[k] = tan[out]; outs[k] == nil {
			outs[k] = ZerosLike(out)
		}
	}
	return outs
}

// transpose returns Jᵀu for cotangents u of the outputs (shaped like them), treated as
// constants: ∇⟨outputs, u⟩ by GoMLX's reverse mode (graph.Gradient), on the outputs rebuilt with
// each node whose op registers an Adjoint replaced by it, so that ⟨J v, u⟩ = ⟨v, Jᵀu⟩ with J v
// from tangent. Only the nodes downstream of such a node are rebuilt; the forward pass up to it
// is shared.
func (w *walk) transpose(u []*Node) []*Node {
	if len(u) != len(w.outputs) {
		exceptions.Panicf("jvp: got %d cotangents for %d outputs", len(u), len(w.outputs))
	}
	outs := w.outputs
	if slices.ContainsFunc(w.nodes, func(n *Node) bool { _, ok := Adjoints[n.Type()]; return ok }) {
		outs = w.clone(nil, func(n *Node) *Node {
			if adjoint, ok := Adjoints[n.Type()]; ok {
				return adjoint(n)
			}
			return n
		})
	}
	var dot *Node
	for k, out := range outs {
		dot = addTerm(dot, ReduceAllSum(Mul(out, StopGradient(u[k]))))
	}
	return Gradient(dot, w.sources...)
}

// layerOf names the sources n depends on (model variables are named after their layer's scope).
func (w *walk) layerOf(n *Node) string {
	var names []string
	seen := make(map[*Node]bool)
	var visit func(x *Node)
	visit = func(x *Node) {
		if seen[x] {
			return
		}
		seen[x] = true
		if _, ok := w.source[x]; ok {
			name := fmt.Sprintf("input %s", x.Shape())
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

// carriesTangent reports whether a tangent of the sources reaches n when tangent propagates them:
// n is a source, or a node of the walk that is not a StopGradient and has an input that carries
// one.
func (w *walk) carriesTangent(n *Node) bool {
	carries := make(map[*Node]bool, len(w.nodes)+len(w.sources))
	for _, src := range w.sources {
		carries[src] = true
	}
	for _, x := range w.nodes { // topological order: inputs first
		if _, ok := w.source[x]; ok || x.StopGradient() {
			continue
		}
		for _, in := range x.Inputs() {
			if carries[in] {
				carries[x] = true
				break
			}
		}
	}
	return carries[n]
}

// closureSafe reports whether a clone of the walk with substituted sources may be built inside
// a closure (a While body) on every backend: it holds no BroadcastInDim of a node the clone
// computes that the pure-Go backend's optimiser removes after the closure's execution plan is
// compiled (see compat.go: compatWhileGradient). clone builds the broadcasts it would remove, to
// the same rank with unit dimensions expanded or from a scalar, in a form it keeps
// (unfusedBroadcast); a same-rank broadcast that also permutes axes is the one it cannot.
func (w *walk) closureSafe() bool {
	cloned := make(map[*Node]bool, len(w.nodes)+len(w.sources))
	for _, n := range w.sources {
		cloned[n] = true
	}
	for _, n := range w.nodes {
		cloned[n] = true
	}
	for _, n := range w.nodes {
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
	return x.Rank() == n.Rank() && slices.Equal(broadcastAxes(n), axisRange(0, n.Rank()))
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
