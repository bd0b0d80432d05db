package fgn

import (
	. "github.com/gomlx/gomlx/core/graph"
)

// whitening holds the row weights of the whitened row system. The paper whitens every row:
// J̃ = Q^{1/2} J, r̃ = Q^{-1/2} r. For a saturated example with p_★ → 0, q_i underflows (to 0 in
// float32 once |s| ≳ 100) while r̃_i = √(p_†/p_★) = e^{s/2} overflows, although their product is
// the finite p_†. Every row is therefore whitened with the weight q'_i = max(q_i, q_min) for a
// floor q_min: r̃_i = p_†/√q'_i ≤ 1/√q_min, the bound any row with q_i ≥ q_min reaches anyway.
type whitening struct {
	sqrtQ  *Node // √q'_i
	rTilde *Node // r_i/√q'_i
}

func newWhitening(m *Margin, floor float64) whitening {
	sqrtQ := Sqrt(Max(m.Q, Scalar(m.Q.Graph(), m.Q.DType(), floor)))
	return whitening{sqrtQ: sqrtQ, rTilde: Div(m.PDagger, sqrtQ)}
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
// Rows are whitened with q'_i = max(q_i, q_min), q_min cfg's saturation floor
// (Settings.SaturationFloor), so that r̃ stays below 1/√q_min: the step solves the damped system
// whose curvature H' = Jᵀ Q' J/b weights the rows with q_i < q_min by q_min, a perturbation of H_FGN
// of norm at most q_min·max‖J_i‖²/b, below the dtype's resolution for the default q_min = ε². With
// no row below the floor this is exactly eqs. (4.5)-(4.6), and every identity below holds for H'.
//
// Row operator. With cfg.RowOperator = ClosedFormGram and a linearisation that forms its margin
// Gram in closed form (a GramLinearization, e.g. AffineHead: appendix F.2), G is formed once per
// direction (b×b), CG iterates on b×b products in an in-graph While loop, and one VJP
// back-projects. Otherwise (MatrixFree, or a linearisation without a closed-form Gram, e.g.
// Linearize's autodiff) each CG iteration applies G matrix-free by one VJP and one JVP of the
// margin map (eq. 4.8), and the back-projection is accumulated from CG's VJPs: the step costs
// the logits, N_CG·(JVP + VJP) and one VJP (appendix "Cost accounting").
//
// Stopping rule. For any row iterate u with residual e = r̃ − (K + bλI)u, the back-projected
// d = −J̃ᵀu satisfies, since H_FGN = J̃ᵀJ̃/b and g = J̃ᵀr̃/b (eq. 3.8),
//
//	(H_FGN + λI) d + g = (1/b) J̃ᵀ e,   so   ‖(H_FGN + λI) d + g‖/‖g‖ = √(eᵀK e / ‖Jᵀr‖²).
//
// With cfg.CG.StoppingRule = StopParameterResidual (DefaultSettings' rule) CG stops on this exact
// parameter-space residual: it evaluates eᵀK e = ‖J̃ᵀe‖² from the VJP of the next iteration's
// product (matrix-free; one b×b product more in closed form), and ‖Jᵀr‖² from J̃ᵀr̃, the VJP
// CG starts from (matrix-free), or as rᵀG r (closed-form Gram).
// A cheaper proxy, the unwhitened row residual ‖Q^{1/2}e‖ ≤ Tolerance·‖r‖, bounds the parameter
// residual only up to the condition number of J, which is unbounded on exactly the batches
// where the whitened test fails; the exact test is kept. With StopWhitenedRowResidual CG stops
// on ‖e‖ ≤ Tolerance·‖r̃‖ as in Algorithm 1: when a row has a large margin s, r̃_i ≈ e^{s/2} dominates
// ‖r̃‖ while q_i is tiny, and that test passes after one iteration far from the solution.
func FGNDirection(lin Linearization, labels, u0 *Node, cfg Settings) *Direction {
	return fgnDirection(lin, labels, u0, cfg, nil)
}

// fgnDirection is FGNDirection with the damping λ chosen by damping from the batch's curvature
// scale μ and gradient noise ν (batchScale) when damping is not nil (cfg.Damping otherwise).
//
// They cost no product: K r̃ is the product of CG's first iteration, which starts from p_0 = r̃ and
// takes it (cgSystem.rhsProduct); with a warm start it costs one JVP (matrix-free).
func fgnDirection(lin Linearization, labels, u0 *Node, cfg Settings, damping dampingFn) *Direction {
	cfg.mustValidateSolve()
	m := NewMargin(lin.Logits(), labels)
	j := marginJacobian{lin: lin, gradS: m.GradS}
	g := m.S.Graph()
	dtype := m.S.DType()
	b := m.S.Shape().Dim(0)
	w := newWhitening(m, cfg.floor(dtype))
	sys := cgSystem{
		rhs: Vec{w.rTilde},
		x0:  rowStart(u0),
	}
	paramRule := cfg.CG.StoppingRule == StopParameterResidual
	var backProject func(cgResult) Vec
	var rKr *Node // r̃ᵀK r̃
	// μ and ν need K r̃: CG's first product when it starts from zero, one JVP more otherwise.
	needMu := u0 == nil || damping != nil
	inLoop := inWhileLoop(lin)
	if closed, ok := lin.(GramLinearization); ok && cfg.RowOperator == ClosedFormGram {
		// G is formed outside CG, whose loop body then holds b×b products only, whatever the
		// linearisation's own products are built from.
		gram := closed.MarginGram(m.GradS)
		sys.curvature = func(v Vec) Vec { return Vec{Mul(w.sqrtQ, MatMul(gram, Mul(w.sqrtQ, v[0])))} }
		if paramRule {
			sys.curvatureNorm = true
			sys.refNorm2 = ReduceAllSum(Mul(m.PDagger, MatMul(gram, m.PDagger))) // ‖Jᵀr‖² = rᵀG r
		}
		sys.rhsProduct = sys.curvature(sys.rhs)
		rKr = vecDot(sys.rhs, sys.rhsProduct)
		needMu = true // b×b products
		// d = −J̃ᵀu: the sign goes into the b-vector, not over the parameter-space result.
		backProject = func(sol cgResult) Vec { return j.vjp(Neg(Mul(w.sqrtQ, sol.X[0]))) }
		inLoop = true
	} else {
		// K = J̃ J̃ᵀ given factored by J̃ᵀu = Jᵀ(Q'^{1/2} u) and J̃ β = Q'^{1/2} J β, so that CG
		// reuses its VJPs: J̃ᵀr̃ = Jᵀr is both its first product and the stopping rule's reference,
		// and it accumulates J̃ᵀu, the back-projection.
		sys.factor = func(u Vec) Vec { return j.vjp(Mul(w.sqrtQ, u[0])) }
		sys.cofactor = func(beta Vec) Vec { return Vec{Mul(w.sqrtQ, j.jvp(beta))} }
		sys.factorRHS = sys.factor(sys.rhs)
		if paramRule {
			sys.curvatureNorm = true
			sys.refNorm2 = vecDot(sys.factorRHS, sys.factorRHS)
		}
		if needMu {
			sys.rhsProduct = sys.cofactor(sys.factorRHS)
			rKr = vecDot(sys.factorRHS, sys.factorRHS)
		}
		backProject = func(sol cgResult) Vec { return vecScale(Scalar(g, dtype, -1), sol.LX) }
	}
	var scale batchScale
	if needMu {
		// With g = J̃ᵀr̃/b and H_FGN = J̃ᵀJ̃/b (eq. 3.8): gᵀH g = ‖K r̃‖²/b³ and ‖g‖² = r̃ᵀK r̃/b².
		scale.curvature = curvatureScale(vecDot(sys.rhsProduct, sys.rhsProduct), MulScalar(rKr, float64(b)))
		// Example i's gradient along g is p_†,i J_i g/‖g‖ (eq. 2.11), and p_†,i J_i g = r̃_i (J̃g)_i =
		// r̃_i (K r̃)_i/b: the b-vectors CG starts from.
		scale.noise = gradientNoise(Mul(sys.rhs[0], sys.rhsProduct[0]))
	}
	lambda := cfg.damping(damping, scale, g, dtype)
	sys.shift = MulScalar(lambda, float64(b))
	sol := solveCG(sys, cfg.CG, inLoop)
	dir := newDirection(backProject(sol), m, sol)
	dir.rowRHS = w.rTilde
	dir.lambda, dir.scale = lambda, scale
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
