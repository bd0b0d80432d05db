package fgn

import (
	. "github.com/gomlx/gomlx/core/graph"
)

// The paper whitens every row: J̃ = Q^{1/2} J, r̃ = Q^{-1/2} r. For a saturated example with
// p_★ → 0, q_i underflows (to 0 in float32 once |s| ≳ 100) while r̃_i = √(p_†/p_★) = e^{s/2}
// overflows, although their product is the finite p_†. Rows whose weight is below a floor
// q_min are therefore solved in unwhitened form with q_i = 0: their row equation is then
// bλ δ_i = r_i exactly, so δ_R = r_R/(bλ), and the remaining rows solve
//
//	(K_WW + bλ I) u_W = Q_W^{-1/2} r_W − Q_W^{1/2} J_W J_Rᵀ δ_R,      d = −Jᵀ(δ_R + Q^{1/2} u).
//
// With no saturated row this is exactly eqs. (4.5)-(4.6); otherwise it solves the damped system
// whose curvature omits the rows with q_i < q_min, i.e. a perturbation of H_FGN of norm at most
// q_min·max‖J_i‖²/b, below the dtype's resolution for the default q_min = ε².
type whitening struct {
	sqrtQ  *Node // √q_i on whitened rows, 0 on saturated rows
	rTilde *Node // r_i/√q_i on whitened rows, 0 on saturated rows
	deltaR *Node // r_i/(bλ) on saturated rows, 0 on whitened rows
}

func newWhitening(m *Margin, bLambda *Node, floor float64) whitening {
	kept := GreaterOrEqual(m.Q, Scalar(m.Q.Graph(), m.Q.DType(), floor))
	zeros := ZerosLike(m.Q)
	sqrtQ := Where(kept, Sqrt(m.Q), zeros)
	safe := Where(kept, sqrtQ, OnesLike(m.Q))
	return whitening{
		sqrtQ:  sqrtQ,
		rTilde: Where(kept, Div(m.PDagger, safe), zeros),
		deltaR: Where(kept, zeros, Div(m.PDagger, bLambda)),
	}
}

// FGNDirection returns the damped FGN direction d = −(H_FGN + λI)^{-1} g for a batch, solved in
// the b-dimensional whitened row space (Algorithm 1): CG on
//
//	(K + bλ I) u = r̃,   K = J̃ J̃ᵀ = Q^{1/2} G Q^{1/2},  G = J Jᵀ,  J̃ = Q^{1/2} J,  r̃ = Q^{-1/2} r   (eq. 4.6)
//
// then back-projection d = −J̃ᵀ u (eq. 4.7). CG starts from u0 (b), or from zero when u0 is nil
// (the paper's FGN: no warm start).
//
// Saturated rows. For an example with p_★ → 0, q_i underflows while r̃_i = √(p_†/p_★) overflows.
// Rows with q_i below cfg's saturation floor q_min (Settings.SaturationFloor) are solved
// unwhitened with q_i = 0: δ_R = r_R/(bλ), and the other rows solve
//
//	(K_WW + bλ I) u_W = Q_W^{-1/2} r_W − Q_W^{1/2} J_W J_Rᵀ δ_R,      d = −Jᵀ(δ_R + Q^{1/2} u),
//
// the damped system whose curvature omits those rows, a perturbation of H_FGN of norm at most
// q_min·max‖J_i‖²/b. With no saturated row this is exactly eqs. (4.5)-(4.6).
//
// Row operator. With cfg.RowOperator = ClosedFormGram and a linearisation that forms its margin
// Gram in closed form (a GramLinearization, e.g. AffineHead: appendix F.2), G is formed once per
// direction (b×b) and CG iterates on b×b products in an in-graph While loop. Otherwise (MatrixFree,
// or a linearisation without a closed-form Gram, e.g. Linearize's autodiff) each CG iteration
// applies G matrix-free by one VJP and one JVP of the margin map (eq. 4.8). Either way one VJP
// back-projects.
//
// Stopping rule. For any row iterate u with residual e = r̃ − (K + bλI)u, the back-projected
// d = −J̃ᵀu satisfies, since H_FGN = J̃ᵀJ̃/b and g = J̃ᵀr̃/b (eq. 3.8),
//
//	(H_FGN + λI) d + g = (1/b) J̃ᵀ e,   so   ‖(H_FGN + λI) d + g‖/‖g‖ = √(eᵀK e / ‖Jᵀr‖²).
//
// With cfg.CG.StoppingRule = StopParameterResidual (DefaultSettings' rule) CG stops on this exact
// parameter-space residual: it evaluates eᵀK e from the operator product each iteration already
// makes, at the cost of one more operator product when it stops, and ‖Jᵀr‖² = rᵀG r with one
// VJP (matrix-free) or one b×b product (closed-form Gram).
// A cheaper proxy, the unwhitened row residual ‖Q^{1/2}e‖ ≤ Tolerance·‖r‖, bounds the parameter
// residual only up to the condition number of J, which is unbounded on exactly the batches
// where the whitened test fails; the exact test is kept. With StopWhitenedRowResidual CG stops
// on ‖e‖ ≤ Tolerance·‖r̃‖ as in Algorithm 1: when a row has a large margin s, r̃_i ≈ e^{s/2} dominates
// ‖r̃‖ while q_i is tiny, and that test passes after one iteration far from the solution.
// With saturated rows the same identities hold for the curvature that omits them, with r̃
// replaced by the right-hand side below.
func FGNDirection(lin Linearization, labels, u0 *Node, cfg Settings) *Direction {
	return fgnDirection(lin, labels, u0, cfg, nil)
}

// fgnDirection is FGNDirection with the damping λ given by the scalar node lambda, an adaptive
// policy's state, when not nil (cfg.Damping otherwise).
func fgnDirection(lin Linearization, labels, u0 *Node, cfg Settings, lambda *Node) *Direction {
	cfg.mustValidateSolve()
	m := NewMargin(lin.Logits(), labels)
	j := marginJacobian{lin: lin, gradS: m.GradS}
	var gram marginGram = matrixFreeGram{j}
	inLoop := inWhileLoop(lin)
	if closed, ok := lin.(GramLinearization); ok && cfg.RowOperator == ClosedFormGram {
		// G is formed outside CG, whose loop body then holds b×b products only, whatever the
		// linearisation's own products are built from.
		gram, inLoop = closedFormGram{closed.MarginGram(m.GradS)}, true
	}
	g := m.S.Graph()
	dtype := m.S.DType()
	b := m.S.Shape().Dim(0)
	bLambda := cfg.scaledLambda(lambda, g, dtype, float64(b))
	w := newWhitening(m, bLambda, cfg.floor(dtype))

	// Coupling of the saturated rows into the whitened ones: −Q_W^{1/2} J J_Rᵀ δ_R.
	rhs := Sub(w.rTilde, Mul(w.sqrtQ, saturatedCoupling(gram, w.deltaR, inLoop)))
	sys := cgSystem{
		curvature: func(v Vec) Vec { return Vec{Mul(w.sqrtQ, gram.times(Mul(w.sqrtQ, v[0])))} },
		shift:     bLambda,
		rhs:       Vec{rhs},
		x0:        rowStart(u0),
	}
	if cfg.CG.StoppingRule == StopParameterResidual {
		sys.curvatureNorm = true
		sys.refNorm2 = gram.normJT(m.PDagger)
	}
	sol := solveCG(sys, cfg.CG, inLoop)
	// d = −Jᵀ(δ_R + Q^{1/2}u): the sign goes into the b-vector, not over the d×C result.
	d := j.vjp(Neg(Add(w.deltaR, Mul(w.sqrtQ, sol.X[0]))))
	dir := newDirection(d, m, sol)
	dir.rowRHS = rhs
	return dir
}

// GramLinearization is a Linearization that can also form the margin Gram of its batch in closed
// form, for FGN's ClosedFormGram row operator (FGNDirection). AffineHead implements it
// (appendix F.2); a model whose Gram has another closed form implements it and hands it to the
// optimizers with RecordLinearization or UpdateGraphWithLinearization.
type GramLinearization interface {
	Linearization
	// MarginGram returns the unwhitened margin Gram G = J Jᵀ (b×b) of the batch,
	//
	//	G_ij = J_i·J_j,      J_i = ∇_z s_iᵀ J_z,i      (eq. 2.9),
	//
	// from the logit-space margin gradients gradS = ∇_z s (b×C, Margin.GradS). FGNDirection calls
	// it once per direction, outside CG's loop.
	MarginGram(gradS *Node) *Node
}

// marginGram is the margin Gram G = J Jᵀ (b×b) of a batch, applied in closed form or
// matrix-free.
type marginGram interface {
	// times returns G v for v ∈ R^b.
	times(v *Node) *Node
	// normJT returns ‖Jᵀ a‖² = aᵀG a for a ∈ R^b.
	normJT(a *Node) *Node
}

// closedFormGram holds G explicitly.
type closedFormGram struct{ g *Node }

func (c closedFormGram) times(v *Node) *Node  { return MatMul(c.g, v) }
func (c closedFormGram) normJT(a *Node) *Node { return ReduceAllSum(Mul(a, c.times(a))) }

// matrixFreeGram applies G = J Jᵀ by one VJP and one JVP of the margin map (eq. 4.8).
type matrixFreeGram struct{ j marginJacobian }

func (f matrixFreeGram) times(v *Node) *Node { return f.j.jvp(f.j.vjp(v)) }
func (f matrixFreeGram) normJT(a *Node) *Node {
	v := f.j.vjp(a)
	return vecDot(v, v)
}

// saturatedCoupling returns G δ_R. δ_R is 0 on every row of a batch without saturated rows, and
// then so is G δ_R; when the Gram can be applied inside a closure (inLoop, see whileLoop) an If
// skips its products (one VJP and one JVP matrix-free, a b×b product in closed form) unless some
// entry of δ_R is non-zero. Autodiff products cannot run in a closure (see compat.go:
// compatWhileGradient), so they are always formed. The If returns a new value and captures only values
// that are read after it (see compat.go: compatIfCapturedBuffer).
//
// As for whileLoop, the branch is first built in the main function (dead code, removed by the
// backends) so that every scalar constant it uses is a main-function node the closure may capture
// (see compat.go: compatScalarCache).
func saturatedCoupling(gram marginGram, deltaR *Node, inLoop bool) *Node {
	coupling := gram.times(deltaR)
	if !inLoop {
		return coupling
	}
	g := deltaR.Graph()
	saturated := LogicalAny(NotEqual(deltaR, ZerosLike(deltaR)))
	formed := NewClosure(g, func(g *Graph) []*Node { return []*Node{gram.times(deltaR)} })
	skipped := NewClosure(g, func(g *Graph) []*Node { return []*Node{ZerosLike(deltaR)} })
	return If(saturated, formed, skipped)[0]
}
