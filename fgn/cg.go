package fgn

import (
	"strconv"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/support/exceptions"
)

// CGSettings configures conjugate gradients.
type CGSettings struct {
	// MaxIter caps the number of iterations (the paper's N_CG; default 5).
	MaxIter int
	// Tol is the relative residual tolerance: CG stops once ‖A x - b‖ ≤ Tol·‖b‖ (default 1e-5).
	Tol float64
}

// DefaultCGSettings are the paper's settings: at most 5 iterations, relative tolerance 1e-5.
var DefaultCGSettings = CGSettings{MaxIter: 5, Tol: 1e-5}

// CGResult is the outcome of an in-graph CG solve.
type CGResult struct {
	// X is the approximate solution.
	X Vec
	// Iterations is the number of iterations performed (int32 scalar).
	Iterations *Node
	// Residual is the final relative residual ‖r‖/‖b‖ of the CG recurrence (scalar), 0 when b = 0.
	Residual *Node
}

// CG solves A x = rhs for a symmetric positive definite operator A by conjugate gradients,
// starting from x0 (zeros when nil), inside the graph being built.
//
// With inLoop the iterations run in a GoMLX While loop that exits as soon as the tolerance is
// met, so on XLA the whole solve stays on the device. Otherwise the MaxIter iterations are
// unrolled into the graph and an iteration past convergence is masked to a no-op, which gives the
// same iterates and iteration count. op must be buildable inside a While body when inLoop is
// set; see Linearization.
func CG(op func(Vec) Vec, rhs, x0 Vec, s CGSettings, inLoop bool) CGResult {
	if s.MaxIter < 1 {
		exceptions.Panicf("fgn.CG: MaxIter must be ≥ 1, got %d", s.MaxIter)
	}
	if s.Tol < 0 {
		exceptions.Panicf("fgn.CG: Tol must be ≥ 0, got %g", s.Tol)
	}
	g := rhs[0].Graph()
	dtype := rhs[0].DType()
	x := x0
	var r Vec
	if x == nil {
		x = vecZerosLike(rhs)
		r = rhs
	} else {
		r = vecAxpy(rhs, Scalar(g, dtype, -1), op(x))
	}
	bb := vecDot(rhs, rhs)
	threshold := Mul(Scalar(g, dtype, s.Tol*s.Tol), bb) // stop when ‖r‖² ≤ tol²‖b‖²
	state := cgState{k: Const(g, int32(0)), x: x, r: r, p: r, rr: vecDot(r, r)}
	maxIter := Const(g, int32(s.MaxIter))

	active := func(st cgState) *Node {
		return LogicalAnd(LessThan(st.k, maxIter), GreaterThan(st.rr, threshold))
	}
	if inLoop {
		state = whileLoop(state, active, func(st cgState) cgState { return cgIteration(op, st, nil) })
	} else {
		for range s.MaxIter {
			state = cgIteration(op, state, active(state))
		}
	}
	residual := Where(GreaterThan(bb, ZerosLike(bb)), Sqrt(Div(state.rr, bb)), ZerosLike(bb))
	return CGResult{X: state.x, Iterations: state.k, Residual: residual}
}

// cgState is the loop state of CG: iteration count, iterate, residual, direction, ‖r‖².
type cgState struct {
	k       *Node
	x, r, p Vec
	rr      *Node
}

func (st cgState) flatten() []*Node {
	out := []*Node{st.k, st.rr}
	out = append(out, st.x...)
	out = append(out, st.r...)
	return append(out, st.p...)
}

func unflattenCG(nodes []*Node) cgState {
	n := (len(nodes) - 2) / 3
	return cgState{k: nodes[0], rr: nodes[1], x: nodes[2 : 2+n], r: nodes[2+n : 2+2*n], p: nodes[2+2*n:]}
}

// cgIteration performs one CG iteration. When mask is not nil, the iteration only takes effect
// where mask is true (used by the unrolled form).
func cgIteration(op func(Vec) Vec, st cgState, mask *Node) cgState {
	ap := op(st.p)
	pAp := vecDot(st.p, ap)
	alpha := Div(st.rr, pAp)
	if mask != nil {
		// Past convergence p may be 0 and pAp = 0: select 0 rather than multiply by NaN.
		alpha = Where(mask, alpha, ZerosLike(alpha))
	}
	x := vecAxpy(st.x, alpha, st.p)
	r := vecAxpy(st.r, Neg(alpha), ap)
	rr := vecDot(r, r)
	beta := Div(rr, st.rr)
	if mask != nil {
		beta = Where(mask, beta, ZerosLike(beta))
	}
	p := vecAxpy(r, beta, st.p)
	k := AddScalar(st.k, 1)
	if mask != nil {
		rr = Where(mask, rr, st.rr)
		k = Where(mask, k, st.k)
		p = vecSelect(mask, p, st.p)
	}
	return cgState{k: k, x: x, r: r, p: p, rr: rr}
}

func vecSelect(mask *Node, onTrue, onFalse Vec) Vec {
	out := make(Vec, len(onTrue))
	for k := range onTrue {
		out[k] = Where(BroadcastToDims(mask, onTrue[k].Shape().Dimensions...), onTrue[k], onFalse[k])
	}
	return out
}

// whileLoop runs body while cond holds, as a GoMLX While loop.
//
// GoMLX v0.28.3 caches scalar constants per graph rather than per function, so a scalar first
// created inside a closure and later requested by the main function (or a sibling closure) is a
// node of the wrong scope. Building cond and body once in the main function before the closures
// (dead code, removed by the backends) puts every scalar they use in the cache as a main-function
// node, which closures may capture.
func whileLoop(init cgState, cond func(cgState) *Node, body func(cgState) cgState) cgState {
	flat := init.flatten()
	g := flat[0].Graph()
	_ = cond(init)
	_ = body(init)
	params := func(g *Graph) cgState {
		nodes := make([]*Node, len(flat))
		for i, n := range flat {
			nodes[i] = Parameter(g, "cg_state_"+strconv.Itoa(i), n.Shape())
		}
		return unflattenCG(nodes)
	}
	condFn := NewClosure(g, func(g *Graph) []*Node { return []*Node{cond(params(g))} })
	bodyFn := NewClosure(g, func(g *Graph) []*Node { return body(params(g)).flatten() })
	return unflattenCG(While(condFn, bodyFn, flat...))
}
