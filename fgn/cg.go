package fgn

import (
	"math"
	"strconv"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/support/exceptions"
)

// cgResult is the outcome of an in-graph CG solve: the approximate solution x, the number of CG
// steps applied to reach it (int32 scalar) and the final relative residual that the stopping
// test compared with the tolerance (scalar), 0 when the reference norm is 0 and NaN when the
// right-hand side or the final residual is not finite or CG stopped because a step overflowed the
// dtype.
type cgResult struct {
	X          Vec
	Iterations *Node
	Residual   *Node
}

// cgSystem is the damped system (C + σI) x = rhs that solveCG solves, with C symmetric positive
// semi-definite (positive definite when shift is nil).
type cgSystem struct {
	curvature func(Vec) Vec // v ↦ C v
	shift     *Node         // σ (scalar); nil for σ = 0
	rhs, x0   Vec
	// With curvatureNorm the stopping test is on the C-seminorm of the residual e,
	// ‖e‖_C² = eᵀC e ≤ Tolerance²·refNorm2, instead of on its Euclidean norm relative to ‖rhs‖.
	curvatureNorm bool
	refNorm2      *Node
}

func (sys cgSystem) apply(v Vec) (cv, av Vec) {
	cv = sys.curvature(v)
	if sys.shift == nil {
		return cv, cv
	}
	return cv, vecAxpy(cv, sys.shift, v)
}

// solveCG runs CG on sys. With inLoop the iterations run in a GoMLX While loop that exits as soon
// as the test passes, so on XLA the whole solve stays on the device; sys's operator must then be
// buildable inside a While body (see WhileSafe). Otherwise they are unrolled into the graph and an
// iteration past convergence is masked to a no-op, so the operator may be any graph function,
// autodiff products included.
//
// The Euclidean test ‖e_k‖ uses the recurrence's ‖r_k‖², known before iteration k applies the
// operator, so iteration k runs only if r_k fails the test (MaxIterations operator products at
// most).
// The C-seminorm test needs C r_k, which CG does not form; since r_k = p_k − β_{k−1} p_{k−1},
//
//	C r_k = C p_k − β_{k−1} C p_{k−1},
//
// so iteration k applies the operator to p_k first, tests r_k with that product and the one kept
// from iteration k−1, and updates the iterate only if the test fails. The last pass only tests:
// MaxIterations + 1 operator products at most, and the residual reported is always that of the
// returned iterate.
func solveCG(sys cgSystem, s CGSettings, inLoop bool) cgResult {
	if err := s.Validate(); err != nil {
		exceptions.Panicf("%v", err)
	}
	rhs := sys.rhs
	g := rhs[0].Graph()
	dtype := rhs[0].DType()
	x := sys.x0
	var r Vec
	if x == nil {
		x = vecZerosLike(rhs)
		r = rhs
	} else {
		_, ax := sys.apply(x)
		r = vecAxpy(rhs, Scalar(g, dtype, -1), ax)
	}
	ref := sys.refNorm2
	if !sys.curvatureNorm {
		ref = vecDot(rhs, rhs)
	}
	threshold := Mul(Scalar(g, dtype, s.Tolerance*s.Tolerance), ref)
	rr := vecDot(r, r)
	zero := ScalarZero(g, dtype)
	state := cgState{k: Const(g, int32(0)), x: x, r: r, p: r, rr: rr, beta: zero, res2: rr, stop: Const(g, false)}
	if sys.curvatureNorm {
		state.cp = vecZerosLike(rhs)
	}
	maxIter := Const(g, int32(s.MaxIterations))

	body := func(st cgState) cgState { return cgIteration(sys, st, maxIter, threshold) }
	if inLoop {
		cond := func(st cgState) *Node { return LogicalNot(st.stop) }
		if !sys.curvatureNorm {
			cond = func(st cgState) *Node {
				return LogicalAnd(LogicalNot(st.stop), euclideanActive(st, maxIter, threshold))
			}
		}
		state = whileLoop(state, cond, body)
	} else {
		passes := s.MaxIterations
		if sys.curvatureNorm {
			passes++
		}
		for range passes {
			state = body(state)
		}
	}
	res2 := state.res2
	if !sys.curvatureNorm {
		res2 = state.rr
	}
	// A non-finite right-hand side must give a non-finite residual: CG's comparisons are false on
	// NaN, so its iterate may have stayed at x0, and Max may map NaN to a number (see compat.go:
	// compatSIMDNaN).
	residual := Where(GreaterThan(ref, zero), Sqrt(Div(Max(res2, zero), ref)), zero)
	residual = Where(LogicalAnd(IsFinite(ref), IsFinite(res2)), residual, Scalar(g, dtype, math.NaN()))
	return cgResult{X: state.x, Iterations: state.k, Residual: residual}
}

// cgState is the loop state of CG: iteration count k, iterate x, residual r, direction p,
// ‖r‖², and for the C-seminorm test C p_{k−1} (cp, nil for the Euclidean test), β_{k−1} and the
// last tested ‖r‖_C²; stop is true once the iterate is final.
type cgState struct {
	k, rr, beta, res2, stop *Node
	x, r, p, cp             Vec
}

// flatten lists the state for a While loop, the iterate x last: a graph whose only outputs are
// early outputs of the loop fails (a caller that keeps only the iterate, Direction.Solution); with
// x the loop's last output it runs (see compat.go: compatWhileEarlyOutputs).
func (st cgState) flatten() []*Node {
	out := []*Node{st.k, st.rr, st.beta, st.res2, st.stop}
	for _, v := range []Vec{st.r, st.p, st.cp, st.x} {
		out = append(out, v...)
	}
	return out
}

// unflatten rebuilds a state shaped like st from nodes in flatten's order.
func (st cgState) unflatten(nodes []*Node) cgState {
	n := len(st.x)
	v := nodes[5:]
	out := cgState{k: nodes[0], rr: nodes[1], beta: nodes[2], res2: nodes[3], stop: nodes[4],
		r: v[:n], p: v[n : 2*n], x: v[len(v)-n:]}
	if st.cp != nil {
		out.cp = v[2*n : 3*n]
	}
	return out
}

// euclideanActive reports whether r_k fails the Euclidean test and the cap is not reached.
func euclideanActive(st cgState, maxIter, threshold *Node) *Node {
	return LogicalAnd(LessThan(st.k, maxIter), GreaterThan(st.rr, threshold))
}

// cgIteration is one pass of solveCG: test r_k, then take the CG step
//
//	α_k = r_kᵀr_k / p_kᵀA p_k,   x_{k+1} = x_k + α_k p_k,   r_{k+1} = r_k − α_k A p_k,
//	β_k = r_{k+1}ᵀr_{k+1} / r_kᵀr_k,   p_{k+1} = r_{k+1} + β_k p_k,
//
// unless r_k passed or the iteration cap is reached. The step is taken only if p_kᵀA p_k is
// finite and > 0 and β_k is finite (which requires r_kᵀr_k > 0 and a finite α_k and r_{k+1});
// otherwise CG stops with x_k:
//   - at exact convergence or breakdown, p_kᵀA p_k ≤ 0 or r_kᵀr_k = 0. In exact arithmetic on a
//     positive definite A this happens only at the solution, r_k = 0; in floating point
//     r_kᵀr_k can underflow to 0 while the C-seminorm test still fails, and p_kᵀA p_k can
//     underflow to 0 while r_kᵀr_k does not;
//   - on overflow, p_kᵀA p_k not finite, or p_kᵀA p_k > 0 and r_kᵀr_k > 0 with β_k not finite:
//     a quantity of the step left the dtype's range. The residual is then recorded as +∞, so
//     that solveCG reports NaN.
//
// A pass on a stopped state changes nothing. The test costs scalar operations only: β_k is
// formed from r_{k+1} before x moves, and x_{k+1} = x_k + 0·p_k = x_k on a pass without a step.
func cgIteration(sys cgSystem, st cgState, maxIter, threshold *Node) cgState {
	zero := ZerosLike(st.rr)
	inf := Scalar(st.rr.Graph(), st.rr.DType(), math.Inf(1))
	cp, ap := sys.apply(st.p)
	active := LogicalAnd(LogicalNot(st.stop), euclideanActive(st, maxIter, threshold))
	res2 := st.rr
	if sys.curvatureNorm {
		cr := vecAxpy(cp, Neg(st.beta), st.cp)
		res2 = Where(st.stop, st.res2, vecDot(st.r, cr))
		active = LogicalAnd(LogicalNot(st.stop),
			LogicalAnd(GreaterThan(res2, threshold), LessThan(st.k, maxIter)))
	}

	pap := vecDot(st.p, ap)
	alpha := Div(st.rr, pap)
	r := vecAxpy(st.r, Neg(alpha), ap)
	rr := vecDot(r, r)
	beta := Div(rr, st.rr)
	positive := LogicalAnd(IsFinite(pap), GreaterThan(pap, zero))
	update := LogicalAnd(active, LogicalAnd(positive, IsFinite(beta)))
	overflow := LogicalAnd(active, LogicalOr(LogicalNot(IsFinite(pap)),
		LogicalAnd(LogicalAnd(positive, GreaterThan(st.rr, zero)), LogicalNot(IsFinite(beta)))))
	next := cgState{
		k:    Where(update, AddScalar(st.k, 1), st.k),
		x:    vecAxpy(st.x, Where(update, alpha, zero), st.p),
		r:    vecSelect(update, r, st.r),
		p:    vecSelect(update, vecAxpy(r, beta, st.p), st.p),
		rr:   Where(update, rr, Where(overflow, inf, st.rr)),
		beta: Where(update, beta, st.beta),
		res2: Where(overflow, inf, res2),
		stop: LogicalNot(update),
	}
	if st.cp != nil {
		next.cp = vecSelect(update, cp, st.cp)
	}
	return next
}

// vecSelect returns onTrue where the boolean scalar mask holds, else onFalse, one keepUnless per
// tensor.
func vecSelect(mask *Node, onTrue, onFalse Vec) Vec {
	out := make(Vec, len(onTrue))
	for k := range onTrue {
		out[k] = keepUnless(mask, onTrue[k], onFalse[k])
	}
	return out
}

// whileLoop runs body while cond holds, as a GoMLX While loop, which exits as soon as the
// tolerance is met and keeps the whole solve on the device on XLA.
//
// Only the closed-form Gram and the products of a WhileSafe linearisation may run in it: the
// pure-Go backend runs some While bodies with a stale plan, a Gradient built inside one among them
// (see compat.go: compatWhileGradient). CG on any other operator is unrolled instead.
//
// A scalar constant first created inside a closure and later requested by the main function (or a
// sibling closure) is a node of the wrong scope (see compat.go: compatScalarCache). Building cond and
// body once in the main function before the closures (dead code, removed by the backends) puts
// every scalar they use in the cache as a main-function node, which closures may capture.
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
		return init.unflatten(nodes)
	}
	condFn := NewClosure(g, func(g *Graph) []*Node { return []*Node{cond(params(g))} })
	bodyFn := NewClosure(g, func(g *Graph) []*Node { return body(params(g)).flatten() })
	return init.unflatten(While(condFn, bodyFn, flat...))
}
