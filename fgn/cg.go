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
// dtype. For a factored system, LX is L x, formed from the products CG made.
//
// With a gradient start (cgSystem.gradientStart) that CG took, FromGradientStart holds: the
// solution is then x₀ + X with x₀ = rhs/σ, which CG does not form, and LX = L(x₀ + X).
type cgResult struct {
	X                 Vec
	Iterations        *Node
	Residual          *Node
	LX                Vec
	FromGradientStart *Node // boolean scalar; nil for a system without a gradient start
}

// cgSystem is the damped system (C + σI) x = rhs that solveCG solves, with C symmetric positive
// semi-definite (positive definite when shift is nil). C is given either as the product
// curvature (v ↦ C v), or factored as C = Lᵀ L by factor (v ↦ L v) and cofactor (y ↦ Lᵀ y).
type cgSystem struct {
	curvature        func(Vec) Vec // v ↦ C v; nil for a factored system
	factor, cofactor func(Vec) Vec // v ↦ L v and y ↦ Lᵀ y for C = Lᵀ L; nil otherwise
	factorRHS        Vec           // L rhs, required with factor
	shift            *Node         // σ (scalar); nil for σ = 0
	rhs, x0          Vec
	// rhsProduct is C rhs (without the shift), when the caller formed it (to choose σ, see
	// DampingPolicy): CG started from zero then takes it as its first product instead of forming
	// it. Nil otherwise.
	rhsProduct Vec
	// tolerance (a scalar), when not nil, raises the relative tolerance of the stopping test to
	// max(tolerance, CGSettings.Tolerance) (CGSettings.StopAtNoise).
	tolerance *Node
	// With curvatureNorm the stopping test is on the C-seminorm of the residual e,
	// ‖e‖_C² = eᵀC e ≤ Tolerance²·refNorm2, instead of on its Euclidean norm, ‖e‖² ≤
	// Tolerance²·refNorm2 with refNorm2 = ‖rhs‖² when nil.
	curvatureNorm bool
	refNorm2      *Node
	// gradientStart (a boolean scalar; nil for never) makes CG, when it holds, ignore x0 and
	// start from the damped gradient step x₀ = rhs/σ (σ > 0) instead of zero: its first iteration
	// forms C rhs, from the product of rhs it makes anyway, and restarts as CG from zero on
	//
	//	(C + σI) w = rhs − (C + σI) x₀ = −C rhs/σ,      x = x₀ + w.
	//
	// The restart's residual is formed from C rhs alone, so rhs may be too large for its square, or
	// for σ x₀ − rhs, to be formed accurately; only C rhs (and L rhs) must be representable. The
	// Krylov space is then x₀ + span{C rhs, C² rhs, …}: on a system whose large components C
	// barely couples (FGN's saturated rows) x₀ solves them exactly and w is of ordinary size.
	gradientStart *Node
}

// first returns the first factor of the product C v: L v for a factored system, C v otherwise.
func (sys cgSystem) first(v Vec) Vec {
	if sys.factor != nil {
		return sys.factor(v)
	}
	return sys.curvature(v)
}

// product returns C v from first(v).
func (sys cgSystem) product(firstV Vec) Vec {
	if sys.factor != nil {
		return sys.cofactor(firstV)
	}
	return firstV
}

// damped returns (C + σI) v from C v.
func (sys cgSystem) damped(v, cv Vec) Vec {
	if sys.shift == nil {
		return cv
	}
	return vecAxpy(cv, sys.shift, v)
}

// seminorm returns ‖e‖_C² from e and first(e): ‖L e‖² for a factored system, eᵀ(C e) otherwise.
func (sys cgSystem) seminorm(e, firstE Vec) *Node {
	if sys.factor != nil {
		return vecDot(firstE, firstE)
	}
	return vecDot(e, firstE)
}

// solveCG runs CG on sys. With inLoop the iterations run in a GoMLX While loop that exits as soon
// as the test passes, so on XLA the whole solve stays on the device; sys's operator must then be
// buildable inside a While body (see WhileSafe). Otherwise they are unrolled into the graph and an
// iteration past convergence is masked to a no-op, so the operator may be any graph function,
// autodiff products included.
//
// The Euclidean test of r_k uses the recurrence's ‖r_k‖², known when r_k is formed, so CG makes
// one operator product per iteration: MaxIterations at most.
//
// The C-seminorm test of r_{k+1} needs C r_{k+1} (or L r_{k+1} for C = Lᵀ L), which CG does not
// form; since r_{k+1} = p_{k+1} − β_k p_k and the operator is linear,
//
//	C r_{k+1} = C p_{k+1} − β_k C p_k,      L r_{k+1} = L p_{k+1} − β_k L p_k,
//
// so iteration k forms C p_{k+1} (or L p_{k+1}) as soon as p_{k+1} is known, tests r_{k+1} with it
// and with the product kept from p_k, and iteration k+1 reuses it. A factored system thus costs
// MaxIterations products C = Lᵀ L and one more L product at most, the first of them L rhs
// (factorRHS) when CG starts from zero; an unfactored one MaxIterations + 1 products C. The
// residual reported is always that of the returned iterate.
//
// For a factored system CG also accumulates L x_{k+1} = L x_k + α_k L p_k from the products it
// makes (cgResult.LX), so a caller that needs L x (FGN's back-projection) makes no product more.
//
// When CG starts from zero and the caller gives C rhs (sys.rhsProduct), the first iteration, whose
// direction p_0 = rhs, takes it instead of forming the product; in a While loop that iteration
// runs before the loop.
func solveCG(sys cgSystem, s CGSettings, inLoop bool) cgResult {
	if err := s.Validate(); err != nil {
		exceptions.Panicf("%v", err)
	}
	rhs := sys.rhs
	g := rhs[0].Graph()
	dtype := rhs[0].DType()
	x := sys.x0
	if x != nil && sys.gradientStart != nil {
		x = vecSelect(sys.gradientStart, vecZerosLike(x), x)
	}
	var r, lx Vec
	if x == nil {
		x = vecZerosLike(rhs)
		r = rhs
		if sys.factor != nil {
			lx = vecZerosLike(sys.factorRHS)
		}
	} else {
		fx := sys.first(x)
		r = vecAxpy(rhs, Scalar(g, dtype, -1), sys.damped(x, sys.product(fx)))
		if sys.factor != nil {
			lx = fx
		}
	}
	ref := sys.refNorm2
	if ref == nil {
		ref = vecDot(rhs, rhs)
	}
	tol2 := Scalar(g, dtype, s.Tolerance*s.Tolerance)
	if sys.tolerance != nil {
		tol2 = Max(tol2, Square(ConvertDType(sys.tolerance, dtype)))
	}
	threshold := Mul(tol2, ref)
	rr := vecDot(r, r)
	state := cgState{k: Const(g, int32(0)), x: x, r: r, p: r, rr: rr, res2: rr, lx: lx, start: sys.gradientStart}
	if sys.curvatureNorm {
		switch {
		case sys.x0 == nil && sys.factor != nil:
			state.fp = sys.factorRHS
		case sys.x0 == nil && sys.rhsProduct != nil: // first(rhs) = C rhs
			state.fp = sys.rhsProduct
		default:
			state.fp = sys.first(r)
		}
		state.res2 = sys.seminorm(r, state.fp)
	}
	maxIter := Const(g, int32(s.MaxIterations))
	state.stop = LogicalNot(LogicalAnd(GreaterThan(state.res2, threshold), LessThan(state.k, maxIter)))

	body := func(st cgState) cgState { return cgIteration(sys, st, cgProducts{}, maxIter, threshold) }
	iterations := s.MaxIterations
	if sys.x0 == nil && sys.rhsProduct != nil {
		// p_0 = rhs: its products are C rhs and, for a factored system, L rhs.
		state = cgIteration(sys, state, cgProducts{fp: sys.factorRHS, cp: sys.rhsProduct}, maxIter, threshold)
		iterations--
	}
	if inLoop {
		state = whileLoop(state, func(st cgState) *Node { return LogicalNot(st.stop) }, body)
	} else {
		for range iterations {
			state = body(state)
		}
	}
	// A non-finite right-hand side must give a non-finite residual: CG's comparisons are false on
	// NaN, so its iterate may have stayed at x0, and Max may map NaN to a number (see compat.go:
	// compatSIMDNaN).
	zero := ScalarZero(g, dtype)
	res2 := state.res2
	residual := Where(GreaterThan(ref, zero), Sqrt(Div(Max(res2, zero), ref)), zero)
	residual = Where(LogicalAnd(IsFinite(ref), IsFinite(res2)), residual, Scalar(g, dtype, math.NaN()))
	result := cgResult{X: state.x, Iterations: state.k, Residual: residual, LX: state.lx}
	if sys.gradientStart != nil {
		// The gradient start is CG's first iteration, so it was taken iff an iteration was.
		result.FromGradientStart = LogicalAnd(sys.gradientStart, GreaterThan(state.k, Const(g, int32(0))))
	}
	return result
}

// cgState is the loop state of CG: iteration count k, iterate x, residual r, direction p, ‖r‖²,
// the tested squared residual norm res2 (‖r‖² or ‖r‖_C²), and stop, true once the iterate is
// final. For the C-seminorm test fp is first(p) (C p, or L p for a factored system), formed by the
// iteration that formed p; for a factored system lx is L x. Both are nil otherwise. For a system
// with a gradient start, start holds until the first iteration, the restart, is taken (nil
// otherwise).
type cgState struct {
	k, rr, res2, stop, start *Node
	x, r, p, fp, lx          Vec
}

// flatten lists the state for a While loop, the iterate x last: a graph whose only outputs are
// early outputs of the loop fails (a caller that keeps only the iterate, Direction.Solution); with
// x the loop's last output it runs (see compat.go: compatWhileEarlyOutputs).
func (st cgState) flatten() []*Node {
	out := []*Node{st.k, st.rr, st.res2, st.stop}
	if st.start != nil {
		out = append(out, st.start)
	}
	for _, v := range []Vec{st.r, st.p, st.fp, st.lx, st.x} {
		out = append(out, v...)
	}
	return out
}

// unflatten rebuilds a state shaped like st from nodes in flatten's order.
func (st cgState) unflatten(nodes []*Node) cgState {
	out := cgState{k: nodes[0], rr: nodes[1], res2: nodes[2], stop: nodes[3]}
	v := nodes[4:]
	if st.start != nil {
		out.start, v = v[0], v[1:]
	}
	take := func(n int) Vec {
		if n == 0 {
			return nil
		}
		taken := v[:n]
		v = v[n:]
		return taken
	}
	out.r, out.p, out.fp, out.lx, out.x = take(len(st.r)), take(len(st.p)), take(len(st.fp)), take(len(st.lx)), take(len(st.x))
	return out
}

// cgIteration is one pass of solveCG: unless the state has stopped, take the CG step
//
//	α_k = r_kᵀr_k / p_kᵀA p_k,   x_{k+1} = x_k + α_k p_k,   r_{k+1} = r_k − α_k A p_k,
//	β_k = r_{k+1}ᵀr_{k+1} / r_kᵀr_k,   p_{k+1} = r_{k+1} + β_k p_k,
//
// then test r_{k+1}: CG stops once it passes or the iteration cap is reached. The step is taken
// only if p_kᵀA p_k is finite and > 0 and β_k is finite (which requires r_kᵀr_k > 0 and a finite
// α_k and r_{k+1}); otherwise CG stops with x_k:
//   - at exact convergence or breakdown, p_kᵀA p_k ≤ 0 or r_kᵀr_k = 0. In exact arithmetic on a
//     positive definite A this happens only at the solution, r_k = 0; in floating point
//     r_kᵀr_k can underflow to 0 while the C-seminorm test still fails, and p_kᵀA p_k can
//     underflow to 0 while r_kᵀr_k does not;
//   - on overflow, p_kᵀA p_k not finite, or p_kᵀA p_k > 0 and r_kᵀr_k > 0 with β_k not finite:
//     a quantity of the step left the dtype's range. The residual is then recorded as +∞, so
//     that solveCG reports NaN.
//
// The gradient start (st.start, first iteration only, p_0 = rhs) is the restart of
// cgSystem.gradientStart instead: x and r stand for w = x − x₀ and its residual from then on,
//
//	x_1 = x_0 = 0,   r_1 = −C p_0/σ,   p_1 = r_1   (α_0 = β_0 = 0),   L x_1 = L p_0/σ,
//
// taken when r_1 is finite (else CG stops, as on overflow).
//
// A pass on a stopped state changes nothing: x_{k+1} = x_k + 0·p_k = x_k on a pass without a
// step. known holds the products of p_k that the caller already has (the first iteration's).
func cgIteration(sys cgSystem, st cgState, known cgProducts, maxIter, threshold *Node) cgState {
	zero := ZerosLike(st.rr)
	inf := Scalar(st.rr.Graph(), st.rr.DType(), math.Inf(1))
	fp := st.fp
	if fp == nil {
		fp = known.fp
	}
	if fp == nil && (known.cp == nil || st.lx != nil) {
		fp = sys.first(st.p)
	}
	cp := known.cp
	if cp == nil {
		cp = sys.product(fp)
	}
	ap := sys.damped(st.p, cp)
	active := LogicalNot(st.stop)

	pap := vecDot(st.p, ap)
	alpha := Div(st.rr, pap)
	r := vecAxpy(st.r, Neg(alpha), ap)
	rr := vecDot(r, r)
	beta := Div(rr, st.rr)
	positive := LogicalAnd(IsFinite(pap), GreaterThan(pap, zero))
	update := LogicalAnd(active, LogicalAnd(positive, IsFinite(beta)))
	overflow := LogicalAnd(active, LogicalOr(LogicalNot(IsFinite(pap)),
		LogicalAnd(LogicalAnd(positive, GreaterThan(st.rr, zero)), LogicalNot(IsFinite(beta)))))
	step := Where(update, alpha, zero)
	lxStep := step // the coefficient of fp in L x_{k+1} = L x_k + lxStep·L p_k
	var next cgState
	if st.start != nil {
		start := LogicalAnd(active, st.start)
		invShift := Reciprocal(sys.shift)
		restart := vecScale(Neg(invShift), cp) // −C p_0/σ
		restartRR := vecDot(restart, restart)
		r = vecSelect(start, restart, r)
		rr = Where(start, restartRR, rr)
		beta = Where(start, zero, beta)
		update = Where(start, IsFinite(restartRR), update)
		overflow = Where(start, LogicalNot(IsFinite(restartRR)), overflow)
		step = Where(start, zero, step)
		lxStep = Where(start, invShift, step)
		next.start = LogicalAnd(st.start, st.stop)
	}
	p := vecAxpy(r, beta, st.p)
	next.k = Where(update, AddScalar(st.k, 1), st.k)
	next.x = vecAxpy(st.x, step, st.p)
	next.r = vecSelect(update, r, st.r)
	next.p = vecSelect(update, p, st.p)
	next.rr = Where(update, rr, Where(overflow, inf, st.rr))
	if st.lx != nil {
		next.lx = vecAxpy(st.lx, lxStep, fp)
	}
	res2 := rr
	if st.fp != nil {
		fpNext := sys.first(p)
		res2 = sys.seminorm(r, vecAxpy(fpNext, Neg(beta), fp))
		next.fp = vecSelect(update, fpNext, st.fp)
	}
	next.res2 = Where(update, res2, Where(overflow, inf, st.res2))
	next.stop = LogicalNot(LogicalAnd(update, LogicalAnd(GreaterThan(res2, threshold), LessThan(next.k, maxIter))))
	return next
}

// cgProducts are products of a CG direction p known before its iteration: fp = first(p) and
// cp = C p (nil when not known).
type cgProducts struct{ fp, cp Vec }

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
// (see jvp/compat.go: compatWhileGradient). CG on any other operator is unrolled instead.
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
