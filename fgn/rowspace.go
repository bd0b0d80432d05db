package fgn

import (
	"math"
	"slices"

	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
)

// whitening holds the row weights of the whitened row system J̃ = Q^{1/2} J, r̃ = Q^{-1/2} r
// (eq. 4.6). For a saturated example with p_★ → 0, q_i = p_★p_† falls below the smallest normal
// number ν of the dtype (once s ≳ 87 in float32, 708 in float64) and underflows, while
// r̃_i = √(p_†/p_★) grows as e^{s/2}, although their product is the finite p_†. The weights are
// √q'_i = max(√q_i, ν), with q_i as the dtype holds it, so that r̃_i = p_†/√q'_i ≤ 1/ν is finite
// and √q'_i r̃_i = p_† to rounding. Only a row with q_i < ν is weighted otherwise than exactly,
// by |q'_i − q_i| < ν: a perturbation of H_FGN below ν‖J_i‖²/b, under the dtype's resolution
// relative to λ unless ‖J_i‖² exceeds ε·bλ/ν (about 1e31·bλ in float32).
//
// A batch is saturated when some q_i is below the floor q_min (Settings.SaturationFloor): r̃ then
// spans more than the dtype's relative precision (r̃_i > 1/√q_min against r̃_j = 1 at the decision
// boundary), and the solve takes CG's gradient start (see FGNDirection).
type whitening struct {
	sqrtQ     *Node // √q'_i = max(√q_i, ν)
	rTilde    *Node // r_i/√q'_i
	saturated *Node // boolean scalar: some q_i < q_min
	// refRTilde is r_i/max(√q_i, √q_min), r̃ with q floored at q_min: the reference of the whitened
	// row stopping rule, whose ‖r̃‖² would overflow on a saturated batch (it is r̃ on any other).
	refRTilde *Node
}

func newWhitening(m *Margin, floor float64) whitening {
	g, dtype := m.Q.Graph(), m.Q.DType()
	sqrtQ := Sqrt(m.Q)
	weights := Max(sqrtQ, Scalar(g, dtype, smallestNormal(dtype)))
	return whitening{
		sqrtQ:     weights,
		rTilde:    Div(m.PDagger, weights),
		saturated: LogicalAny(LessThan(m.Q, Scalar(g, dtype, floor))),
		refRTilde: Div(m.PDagger, Max(sqrtQ, Scalar(g, dtype, math.Sqrt(floor)))),
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
// Saturated rows. A row with a large margin s (a confidently misclassified example) has a tiny
// curvature weight q_i ≈ e^{−s} and a whitened residual r̃_i ≈ e^{s/2}: its row equation is
// nearly decoupled, bλ u_i ≈ r̃_i, yet its back-projected contribution √q_i u_i ≈ r_i/(bλ) is of
// the size of any other row's, and its curvature q_i‖J_i‖²/b need not be small beside λ when
// ‖J_i‖ is large. Rows are whitened with √q'_i = max(√q_i, ν), ν the dtype's smallest normal
// number, which keeps r̃ finite and is exact to the dtype's resolution (see whitening). On a
// batch with a row below the saturation floor q_min (Settings.SaturationFloor), where r̃ spans
// more than the dtype's precision, CG takes its gradient start (cgSystem.gradientStart): it
// starts from u₀ = r̃/(bλ), which solves the decoupled rows exactly, and its first iteration
// restarts it on
//
//	(K + bλI) w = −K r̃/(bλ) = −Q'^{1/2} J g/λ,      u = u₀ + w,
//	d = −J̃ᵀu = −g/λ − J̃ᵀw,
//
// from the products J̃ᵀr̃ = Jᵀr = b g and K r̃ = Q'^{1/2} J Jᵀr that its first iteration makes on
// any batch. The result depends on no sum of r̃'s entries, and the step solves the damped system
// with the curvature H_FGN itself. That iteration counts among the MaxIterations (it makes the
// products of one), so a step on a saturated batch costs what any step costs; at the cap, CG has
// then taken one iteration fewer on w. A warm start u0 is not used on a saturated batch, and
// Solution, the warm-start state, is then w.
//
// Row operator. With cfg.RowOperator = ClosedFormGram (or CheaperRowOperator where the closed form
// costs less, see RowOperator) and a linearisation that forms its margin Gram in closed form (a
// GramLinearization, e.g. AffineHead: appendix F.2), G is formed once per
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
// on ‖e‖ ≤ Tolerance·‖r̃‖ as in Algorithm 1 (with q floored at q_min in ‖r̃‖, whose square would
// otherwise overflow on a saturated batch): when a row has a large margin s, r̃_i ≈ e^{s/2}
// dominates ‖r̃‖ while q_i is tiny, and that test passes after one iteration far from the
// solution. After a gradient start, e is the residual of w's system, which is that of u.
func FGNDirection(lin Linearization, labels, u0 *Node, cfg Settings) *Direction {
	return fgnDirection(lin, labels, u0, cfg, nil, nil)
}

// fgnDirection is FGNDirection with the damping λ chosen by damping from the batch's curvature
// scale μ and gradient noise ν (batchScale) when damping is not nil (cfg.Damping otherwise), for
// the loss L = (1/b)Σφ(s_i) + R with the regulariser reg (nil for none).
//
// μ and ν cost no product without a regulariser: K r̃ = b J̃ g is the product of CG's first
// iteration, which starts from p_0 = r̃ and takes it (cgSystem.rhsProduct); with a warm start it
// costs one JVP (matrix-free). With a regulariser the operator depends on λ, so they cost a VJP
// and a JVP of their own (regularisedScale).
//
// With a regulariser the damped system is (J̃ᵀJ̃/b + Λ) d = −(J̃ᵀr̃/b + g_R), Λ = λI + D = λM
// (g_R = ∇R, D the Hessian of R's L2 terms, see regularisation). By the push-through identity
// (Λ + J̃ᵀJ̃/b)⁻¹ = Λ⁻¹ − Λ⁻¹J̃ᵀ(bI + J̃Λ⁻¹J̃ᵀ)⁻¹J̃Λ⁻¹ it is still a b-dimensional solve,
//
//	(bλI + J̃M⁻¹J̃ᵀ) u = r̃ − t,   t = J̃M⁻¹g_R/λ,      d = −M⁻¹(g_R/λ + J̃ᵀu),
//
// one JVP more than without (t), and the same system for D = 0 and g_R = 0. CG takes the
// factored operator J̃M⁻¹J̃ᵀ = LᵀL with L u = M^{-1/2}J̃ᵀu, or, in closed form, the Gram
// G_M = J M⁻¹ Jᵀ with per-tensor weights (AffineHead: W and the bias damped apart). For a row
// iterate u with residual e = r̃ − t − (bλI + J̃M⁻¹J̃ᵀ)u, (H + Λ)d + g = J̃ᵀe/b as without a
// regulariser; the parameter stopping rule measures it in the M⁻¹-norm, ‖L e‖ = ‖M^{-1/2}J̃ᵀe‖,
// relative to its value at u = 0 (d₀ = −Λ⁻¹g_R; the gradient's norm ‖J̃ᵀr̃‖ without regulariser).
func fgnDirection(lin Linearization, labels, u0 *Node, cfg Settings, damping dampingFn, reg *regularisation) *Direction {
	cfg.mustValidateSolve()
	m := NewMargin(lin.Logits(), labels)
	j := marginJacobian{lin: lin, gradS: m.GradS}
	g := m.S.Graph()
	dtype := m.S.DType()
	b := m.S.Shape().Dim(0)
	w := newWhitening(m, cfg.floor(dtype))
	sys := cgSystem{
		rhs:           Vec{w.rTilde},
		x0:            rowStart(u0),
		gradientStart: w.saturated,
	}
	paramRule := cfg.CG.StoppingRule == StopParameterResidual
	if !paramRule {
		sys.refNorm2 = vecDot(Vec{w.refRTilde}, Vec{w.refRTilde})
	}
	var scale batchScale
	if reg != nil && damping != nil {
		scale = regularisedScale(j, m, w, reg)
	}
	// With no regulariser the operator does not depend on λ: its product K r̃ gives μ and ν
	// (rowScale) before λ is chosen, and CG's first iteration takes it. It is formed when CG starts
	// from zero (which makes it anyway) or when damping or the stopping rule needs μ and ν.
	stopAtNoise := cfg.CG.StopAtNoise && paramRule
	rowProduct := reg == nil && (u0 == nil || damping != nil || stopAtNoise)
	var lam *Node // λ, known here unless it waits for K r̃ (rowProduct)
	if !rowProduct {
		lam = cfg.damping(damping, scale, g, dtype)
	}
	// unwhitenedRHS is Q'^{1/2} times the right-hand side: r, or r − Q'^{1/2}t with a regulariser.
	unwhitenedRHS := m.PDagger
	// invM and sqrtInvM hold 1/m_k and 1/√m_k per parameter, nil where m_k = 1; gradStep is
	// M⁻¹g_R/λ, the regulariser's part of −d (nil without one).
	var invM, sqrtInvM, gradStep Vec
	if reg != nil {
		invM = reg.inverseMetric(lam)
		sqrtInvM = make(Vec, len(invM))
		for k, x := range invM {
			if x != nil {
				sqrtInvM[k] = Sqrt(x)
			}
		}
		gradStep = scaleEach(reg.grad, invM)
		for k, x := range gradStep {
			if x != nil {
				gradStep[k] = Div(x, ConvertDType(lam, x.DType()))
			}
		}
		t := Mul(w.sqrtQ, j.jvp(orZerosLike(gradStep, reg.params)))
		sys.rhs = Vec{Sub(w.rTilde, t)}
		unwhitenedRHS = Sub(m.PDagger, Mul(w.sqrtQ, t))
	}
	var backProject func(cgResult) Vec
	inLoop := inWhileLoop(lin)
	if closed, ok := cfg.closedFormGram(lin, slices.ContainsFunc(invM, func(x *Node) bool { return x != nil })); ok {
		// G (G_M) is formed outside CG, whose loop body then holds b×b products only, whatever the
		// linearisation's own products are built from.
		var gram *Node
		if head, isHead := lin.(*AffineHead); isHead {
			gram = head.marginGram(m.GradS, invM)
		} else {
			gram = closed.MarginGram(m.GradS)
		}
		sys.curvature = func(v Vec) Vec { return Vec{Mul(w.sqrtQ, MatMul(gram, Mul(w.sqrtQ, v[0])))} }
		if paramRule {
			// ‖L rhs‖² = (Q'^{1/2}rhs)ᵀ G (Q'^{1/2}rhs): ‖Jᵀr‖² = rᵀG r without a regulariser.
			sys.curvatureNorm = true
			sys.refNorm2 = ReduceAllSum(Mul(unwhitenedRHS, MatMul(gram, unwhitenedRHS)))
		}
		if rowProduct {
			sys.rhsProduct = sys.curvature(sys.rhs)
		}
		// d = −M⁻¹(g_R/λ + J̃ᵀu) = −M⁻¹(g_R/λ + Jᵀ(Q'^{1/2}u)), with Q'^{1/2}u₀ = Q'^{1/2}rhs/(bλ)
		// after a gradient start: the sign goes into the b-vector, not over the parameter-space
		// result.
		backProject = func(sol cgResult) Vec {
			v := Mul(w.sqrtQ, sol.X[0])
			start := Where(sol.FromGradientStart, Div(unwhitenedRHS, sys.shift), ZerosLike(v))
			return subtract(scaleEach(j.vjp(Neg(Add(v, start))), invM), gradStep)
		}
		inLoop = true
	} else {
		// K = J̃M⁻¹J̃ᵀ given factored by L u = M^{-1/2}Jᵀ(Q'^{1/2} u) and Lᵀβ = Q'^{1/2} J M^{-1/2}β,
		// so that CG reuses its VJPs: L rhs (J̃ᵀr̃ = Jᵀr without a regulariser) is both its first
		// product and the stopping rule's reference, and it accumulates L u, whence the
		// back-projection d = −M^{-1/2}(L u) − M⁻¹g_R/λ.
		sys.factor = func(u Vec) Vec { return scaleEach(j.vjp(Mul(w.sqrtQ, u[0])), sqrtInvM) }
		sys.cofactor = func(beta Vec) Vec { return Vec{Mul(w.sqrtQ, j.jvp(scaleEach(beta, sqrtInvM)))} }
		sys.factorRHS = sys.factor(sys.rhs)
		if paramRule {
			sys.curvatureNorm = true
			sys.refNorm2 = vecDot(sys.factorRHS, sys.factorRHS)
		}
		if rowProduct {
			sys.rhsProduct = sys.cofactor(sys.factorRHS)
		}
		backProject = func(sol cgResult) Vec {
			return subtract(vecScale(Scalar(g, dtype, -1), scaleEach(sol.LX, sqrtInvM)), gradStep)
		}
	}
	if rowProduct {
		scale = rowScale(sys.rhs[0], sys.rhsProduct[0])
		lam = cfg.damping(damping, scale, g, dtype)
	}
	sys.shift = MulScalar(lam, float64(b))
	if stopAtNoise && scale.noise != nil {
		sys.tolerance = noiseTolerance(scale.noise)
	}
	sol := solveCG(sys, cfg.CG, inLoop)
	dir := newDirection(backProject(sol), m, sol)
	dir.rowRHS = w.rTilde
	dir.lambda, dir.scale = lam, scale
	return dir
}

// rowScale returns FGN's batchScale from the right-hand side r̃ of the row system and its product
// K r̃ = b J̃ g. With g = J̃ᵀr̃/b and H_FGN = J̃ᵀJ̃/b (eq. 3.8), gᵀH g = ‖K r̃‖²/b³ and ‖g‖² = r̃ᵀK r̃/b²;
// example i's gradient along g is p_†,i J_i g/‖g‖ (eq. 2.11), with p_†,i J_i g = r̃_i (J̃g)_i =
// r̃_i (K r̃)_i/b.
func rowScale(rTilde, kr *Node) batchScale {
	b := float64(rTilde.Shape().Dim(0))
	return batchScale{
		curvature: curvatureScale(ReduceAllSum(Square(kr)), MulScalar(ReduceAllSum(Mul(rTilde, kr)), b)),
		noise:     gradientNoise(Mul(rTilde, kr)),
	}
}

// regularisedScale returns FGN's batchScale for the regularised loss, along its gradient
// g = J̃ᵀr̃/b + g_R: gᵀ(H_FGN + D)g = (1/b)Σ_i q'_i (J_i g)² + Σ_k D_k‖g_k‖², and example i's
// gradient along g is (p_†,i J_i g + g_Rᵀg)/‖g‖ (the regulariser is every example's). It makes
// one VJP (J̃ᵀr̃) and one JVP (J g).
func regularisedScale(j marginJacobian, m *Margin, w whitening, reg *regularisation) batchScale {
	b := float64(m.S.Shape().Dim(0))
	grad := vecScale(Scalar(m.S.Graph(), m.S.DType(), 1/b), j.vjp(Mul(w.sqrtQ, w.rTilde)))
	gradR := orZerosLike(reg.grad, grad)
	for k := range grad {
		grad[k] = Add(grad[k], gradR[k])
	}
	jg := j.jvp(grad)
	curvature := DivScalar(ReduceAllSum(Mul(Square(w.sqrtQ), Square(jg))), b)
	for k, dk := range reg.hessian {
		if dk > 0 {
			curvature = Add(curvature, MulScalar(ReduceAllSum(Square(grad[k])), dk))
		}
	}
	return batchScale{
		curvature: curvatureScale(curvature, vecDot(grad, grad)),
		noise:     gradientNoise(Add(Mul(m.PDagger, jg), vecDot(gradR, grad))),
	}
}

// closedFormGram returns lin as a GramLinearization when the row operator of s forms its Gram in
// closed form: ClosedFormGram on any GramLinearization, CheaperRowOperator on one whose closed form
// costs less than the matrix-free products (AffineHead's cost model; any other GramLinearization's
// closed form is taken).
//
// With metric (a regulariser's L2 terms damp the parameters apart, see fgnDirection) only an
// AffineHead forms its Gram in closed form (G_M, with per-tensor weights).
func (s Settings) closedFormGram(lin Linearization, metric bool) (GramLinearization, bool) {
	closed, ok := lin.(GramLinearization)
	_, isHead := lin.(*AffineHead)
	switch {
	case !ok || s.RowOperator == MatrixFree || metric && !isHead:
		return nil, false
	case s.RowOperator == CheaperRowOperator:
		if head, isHead := lin.(*AffineHead); isHead && !head.gramCheaper(s.CG.MaxIterations) {
			return nil, false
		}
	}
	return closed, true
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

// smallestNormal returns the smallest positive normal number of a float dtype.
func smallestNormal(dtype dtypes.DType) float64 {
	switch dtype {
	case dtypes.Float64:
		return math.Float64frombits(1 << 52) // 2^-1022
	case dtypes.Float16:
		return math.Ldexp(1, -14)
	}
	return float64(math.Float32frombits(1 << 23)) // 2^-126, float32's and bfloat16's
}
