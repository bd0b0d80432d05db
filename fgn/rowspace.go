package fgn

import (
	"math"
	"slices"

	. "github.com/gomlx/gomlx/core/graph"

	"github.com/fgn-paper/fgn/fgn/internal/gn"
)

// whitening holds the row weights and right-hand side of the whitened row system J̃ = Q'^{1/2} J,
// r̃ = Q'^{-1/2} r (eq. 4.6; see gn.Margin.Whiten for the weights √q'_i = max(√q_i, ν)).
//
// A batch is saturated when some q_i is below the floor q_min (Settings.SaturationFloor): r̃ then
// spans more than the dtype's relative precision (r̃_i > 1/√q_min against r̃_j = 1 at the decision
// boundary), and the solve takes CG's gradient start (see GNConfig.Direction).
type whitening struct {
	sqrtQ     *Node // √q'_i = max(√q_i, ν)
	rTilde    *Node // r_i/√q'_i
	saturated *Node // boolean scalar: some q_i < q_min
	// refRTilde is r_i/max(√q_i, √q_min), r̃ with q floored at q_min: the reference of the whitened
	// row stopping rule, whose ‖r̃‖² would overflow on a saturated batch (it is r̃ on any other).
	refRTilde *Node
}

func newWhitening(m *gn.Margin, floor float64) whitening {
	g, dtype := m.Q.Graph(), m.Q.DType()
	weights, rTilde := m.Whiten()
	return whitening{
		sqrtQ:     weights,
		rTilde:    rTilde,
		saturated: LogicalAny(LessThan(m.Q, Scalar(g, dtype, floor))),
		refRTilde: Div(m.PDagger, Max(Sqrt(m.Q), Scalar(g, dtype, math.Sqrt(floor)))),
	}
}

// Direction returns the damped Gauss-Newton direction d = −(H + λI)^{-1} g of the configured method
// for a batch, with the curvature H of FGN or SGN, the settings' damping λ (Settings.Damping: the
// optimizer's state, an adaptive policy's λ, is not used) and the linearisation lin of the logits:
// the direction an optimizer step takes before it updates the parameters, built on its own. CG
// starts from start, the Solution of a previous direction of the same method on a batch of the same
// size (FGN's row-space vector u, SGN's direction), or from zero when start is nil (the paper's
// FGN: no warm start; the paper's SGN passes its previous direction). It panics on invalid
// settings, as a graph-building function.
//
// SGN solves by parameter-space CG on the damped GGN product of eq. (3.1); its CG residual is the
// parameter-space residual ‖(H_GGN + λI) d + g‖/‖g‖ whatever CGSettings.StoppingRule says.
//
// FGN solves in the b-dimensional whitened row space (Algorithm 1): CG on
//
//	(K + bλ I) u = r̃,   K = J̃ J̃ᵀ = Q^{1/2} G Q^{1/2},  G = J Jᵀ,  J̃ = Q^{1/2} J,  r̃ = Q^{-1/2} r   (eq. 4.6)
//
// then back-projection d = −J̃ᵀ u (eq. 4.7).
//
// Saturated rows. A row with a large margin s (a confidently misclassified example) has a tiny
// curvature weight q_i ≈ e^{−s} and a whitened residual r̃_i ≈ e^{s/2}: its row equation is
// nearly decoupled, bλ u_i ≈ r̃_i, yet its back-projected contribution √q_i u_i ≈ r_i/(bλ) is of
// the size of any other row's, and its curvature q_i‖J_i‖²/b need not be small beside λ when
// ‖J_i‖ is large. Rows are whitened with √q'_i = max(√q_i, ν), ν the dtype's smallest normal
// number, which keeps r̃ finite and is exact to the dtype's resolution (see whitening). On a
// batch with a row below the saturation floor q_min (Settings.SaturationFloor), where r̃ spans
// more than the dtype's precision, CG takes its gradient start: it
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
// then taken one iteration fewer on w. A warm start is not used on a saturated batch, and
// Solution, the warm-start state, is then w.
//
// Row operator. With Settings.RowOperator = ClosedFormGram (or CheaperRowOperator where the
// closed form costs less) and a linearisation that forms its margin Gram in closed form (a
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
// With CGSettings.StoppingRule = StopParameterResidual (DefaultSettings' rule) CG stops on this exact
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
func (c *GNConfig) Direction(lin Linearization, labels *Node, start Vec) *Direction {
	if c.fgn {
		return fgnDirection(lin, labels, first(start), c.s, nil, nil, nil, nil)
	}
	return sgnDirection(lin, labels, start, c.s, nil, nil, nil, nil)
}

// fgnDirection is FGN's GNConfig.Direction (see there for the solve), from u0 (nil for zero), with
// the damping λ chosen by damping from the batch's curvature scale μ and gradient noise ν
// (batchScale) when damping is not nil (cfg.Damping otherwise), for the loss L = (1/b)Σφ(s_i) + R
// with the regulariser reg (nil for none). ceGrad is the cross-entropy's batch gradient
// ĝ = Jᵀp_†/b (gn.Margin.Gradient) where the caller formed it (LMDamping.WholeVariance's noise
// estimate does), nil otherwise: the direction then forms it where it needs it.
//
// μ and ν cost no product without a regulariser: K r̃ = b J̃ g is the product of CG's first
// iteration, which starts from p_0 = r̃ and takes it (gn.CGSystem.RHSProduct); with a warm start it
// costs one JVP (matrix-free). With a regulariser the operator depends on λ, so they cost a VJP
// and a JVP of their own (batchGradient, regularisedScale).
//
// With a regulariser the damped system is (J̃ᵀJ̃/b + Λ) d = −(J̃ᵀr̃/b + g_R), Λ = λS + D = λM
// (g_R = ∇R, D the Hessian of R's L2 terms, see regularisation; S the damping metric of
// Settings.ScaledDamping, whose scales metric holds, S = I for metric nil). By the push-through
// identity (Λ + J̃ᵀJ̃/b)⁻¹ = Λ⁻¹ − Λ⁻¹J̃ᵀ(bI + J̃Λ⁻¹J̃ᵀ)⁻¹J̃Λ⁻¹ it is still a b-dimensional solve,
//
//	(bλI + J̃M⁻¹J̃ᵀ) u = r̃ − t,   t = J̃M⁻¹g_R/λ,      d = −M⁻¹(g_R/λ + J̃ᵀu),
//
// one JVP more than without (t), and the same system for D = 0 and g_R = 0; without a regulariser
// but with the metric, M = S, which does not depend on λ (t = 0, μ and ν from K r̃ as without).
// CG takes the factored operator J̃M⁻¹J̃ᵀ = LᵀL with L u = M^{-1/2}J̃ᵀu, or, in closed form, the Gram
// G_M = J M⁻¹ Jᵀ with per-tensor weights (AffineHead: W and the bias damped apart). For a row
// iterate u with residual e = r̃ − t − (bλI + J̃M⁻¹J̃ᵀ)u, (H + Λ)d + g = J̃ᵀe/b as without a
// regulariser; the parameter stopping rule measures it in the M⁻¹-norm, ‖L e‖ = ‖M^{-1/2}J̃ᵀe‖,
// relative to its value at u = 0 (d₀ = −Λ⁻¹g_R; the gradient's norm ‖J̃ᵀr̃‖ without regulariser).
func fgnDirection(lin Linearization, labels, u0 *Node, cfg Settings, damping dampingFn, reg *regularisation,
	metric, ceGrad Vec) *Direction {
	cfg.mustValidateSolve()
	m := marginOf(lin.Logits(), labels)
	j := gn.MarginJacobian{Lin: lin, GradS: m.GradS}
	g := m.S.Graph()
	dtype := m.S.DType()
	b := m.S.Shape().Dim(0)
	w := newWhitening(m, cfg.floor(dtype))
	sys := gn.CGSystem{
		RHS:           Vec{w.rTilde},
		X0:            rowStart(u0),
		GradientStart: w.saturated,
	}
	paramRule := cfg.CG.StoppingRule != StopWhitenedRowResidual
	if !paramRule {
		sys.RefNorm2 = gn.VecDot(Vec{w.refRTilde}, Vec{w.refRTilde})
	}
	ce := func() Vec { // ĝ, one VJP made once unless the caller formed it
		if ceGrad == nil {
			ceGrad = m.Gradient(lin)
		}
		return ceGrad
	}
	var scale batchScale
	var grad Vec // the batch gradient g + g_R, where formed
	if reg != nil && (damping != nil || metric != nil) {
		grad = reg.addGradient(ce())
	}
	if reg != nil && damping != nil {
		scale = regularisedScale(j, m, w, reg, grad, reciprocals(metric))
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
	var invM, gradStep Vec
	switch {
	case reg != nil:
		invM = reg.inverseMetric(lam, metric)
	case metric != nil:
		invM = reciprocals(metric)
	}
	sqrtInvM := sqrtEach(invM)
	if reg != nil {
		gradStep = scaleEach(reg.grad, invM)
		for k, x := range gradStep {
			if x != nil {
				gradStep[k] = Div(x, ConvertDType(lam, x.DType()))
			}
		}
		t := Mul(w.sqrtQ, j.JVP(orZerosLike(gradStep, reg.params)))
		sys.RHS = Vec{Sub(w.rTilde, t)}
		unwhitenedRHS = Sub(m.PDagger, Mul(w.sqrtQ, t))
	}
	var backProject func(gn.CGResult) Vec
	method := Method{Curvature: FGNCurvature, RowOperator: MatrixFree}
	inLoop := inWhileLoop(lin)
	if closed, ok := cfg.closedFormGram(lin, slices.ContainsFunc(invM, func(x *Node) bool { return x != nil }),
		metric != nil && cfg.ScaledDampingPerEntry); ok {
		// G (G_M) is formed outside CG, whose loop body then holds b×b products only, whatever the
		// linearisation's own products are built from.
		var gram *Node
		if head, isHead := lin.(*AffineHead); isHead {
			gram = head.marginGram(m.GradS, invM)
		} else {
			gram = closed.MarginGram(m.GradS)
		}
		sys.Curvature = func(v Vec) Vec { return Vec{Mul(w.sqrtQ, MatMul(gram, Mul(w.sqrtQ, v[0])))} }
		if paramRule {
			// ‖L rhs‖² = (Q'^{1/2}rhs)ᵀ G (Q'^{1/2}rhs): ‖Jᵀr‖² = rᵀG r without a regulariser.
			sys.CurvatureNorm = true
			sys.RefNorm2 = ReduceAllSum(Mul(unwhitenedRHS, MatMul(gram, unwhitenedRHS)))
		}
		if rowProduct {
			sys.RHSProduct = sys.Curvature(sys.RHS)
		}
		// d = −M⁻¹(g_R/λ + J̃ᵀu) = −M⁻¹(g_R/λ + Jᵀ(Q'^{1/2}u)), with Q'^{1/2}u₀ = Q'^{1/2}rhs/(bλ)
		// after a gradient start: the sign goes into the b-vector, not over the parameter-space
		// result.
		backProject = func(sol gn.CGResult) Vec {
			v := Mul(w.sqrtQ, sol.X[0])
			start := Where(sol.FromGradientStart, Div(unwhitenedRHS, sys.Shift), ZerosLike(v))
			return subtract(scaleEach(j.VJP(Neg(Add(v, start))), invM), gradStep)
		}
		inLoop = true
		method.RowOperator = ClosedFormGram
	} else {
		// K = J̃M⁻¹J̃ᵀ given factored by L u = M^{-1/2}Jᵀ(Q'^{1/2} u) and Lᵀβ = Q'^{1/2} J M^{-1/2}β,
		// so that CG reuses its VJPs: L rhs (J̃ᵀr̃ = Jᵀr without a regulariser) is both its first
		// product and the stopping rule's reference, and it accumulates L u, whence the
		// back-projection d = −M^{-1/2}(L u) − M⁻¹g_R/λ.
		sys.Factor = func(u Vec) Vec { return scaleEach(j.VJP(Mul(w.sqrtQ, u[0])), sqrtInvM) }
		sys.Cofactor = func(beta Vec) Vec { return Vec{Mul(w.sqrtQ, j.JVP(scaleEach(beta, sqrtInvM)))} }
		if ceGrad != nil && reg == nil { // L r̃ = M^{-1/2}J̃ᵀr̃ = b M^{-1/2} ĝ
			sys.FactorRHS = scaleEach(gn.VecScale(Scalar(g, dtype, float64(b)), ceGrad), sqrtInvM)
		} else {
			sys.FactorRHS = sys.Factor(sys.RHS)
		}
		if paramRule {
			sys.CurvatureNorm = true
			sys.RefNorm2 = gn.VecDot(sys.FactorRHS, sys.FactorRHS)
		}
		if rowProduct {
			sys.RHSProduct = sys.Cofactor(sys.FactorRHS)
		}
		backProject = func(sol gn.CGResult) Vec {
			return subtract(gn.VecScale(Scalar(g, dtype, -1), scaleEach(sol.LX, sqrtInvM)), gradStep)
		}
	}
	if rowProduct {
		scale = rowScale(sys.RHS[0], sys.RHSProduct[0])
		lam = cfg.damping(damping, scale, g, dtype)
	}
	sys.Shift = MulScalar(lam, float64(b))
	if stopAtNoise && scale.noise != nil {
		sys.Tolerance = noiseTolerance(scale.noise)
	}
	sol := gn.SolveCG(sys, cfg.CG.MaxIterations, cfg.CG.Tolerance, inLoop)
	dir := newDirection(backProject(sol), m, sol)
	dir.Method = method
	dir.lambda, dir.scale, dir.metric = lam, scale, metric
	if metric != nil {
		switch {
		case grad != nil: // g + g_R, formed with a regulariser
		case ceGrad == nil && sys.FactorRHS != nil: // L r̃ = S^{-1/2} J̃ᵀr̃ = b S^{-1/2} g
			grad = gn.VecScale(Scalar(g, dtype, 1/float64(b)), scaleEach(sys.FactorRHS, sqrtEach(metric)))
		default:
			grad = ce()
		}
		dir.grad = grad
	}
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

// regularisedScale returns FGN's batchScale for the regularised loss from its gradient
// g = J̃ᵀr̃/b + g_R (grad), along u = S⁻¹g in the norm of S, S the damping metric
// (Settings.ScaledDamping; invS holds 1/s_k, nil for S = I): uᵀ(H_FGN + D)u / uᵀS u with
// uᵀ(H_FGN + D)u = (1/b)Σ_i q'_i (J_i u)² + Σ_k D_k‖u_k‖² and uᵀS u = gᵀu, and example i's
// gradient along u is (p_†,i J_i u + g_Rᵀu)/‖u‖_S (the regulariser is every example's). It makes
// one JVP (J u).
func regularisedScale(j gn.MarginJacobian, m *gn.Margin, w whitening, reg *regularisation, grad, invS Vec) batchScale {
	b := float64(m.S.Shape().Dim(0))
	u := scaleEach(grad, invS)
	ju := j.JVP(u)
	curvature := DivScalar(ReduceAllSum(Mul(Square(w.sqrtQ), Square(ju))), b)
	for k, dk := range reg.hessian {
		if dk > 0 {
			curvature = Add(curvature, MulScalar(ReduceAllSum(Square(u[k])), dk))
		}
	}
	return batchScale{
		curvature: curvatureScale(curvature, gn.VecDot(grad, u)),
		noise:     gradientNoise(Add(Mul(m.PDagger, ju), gn.VecDot(orZerosLike(reg.grad, u), u))),
	}
}

// closedFormGram returns lin as a GramLinearization when the row operator of s forms its Gram in
// closed form: ClosedFormGram on any GramLinearization, CheaperRowOperator on one whose closed form
// costs less than the matrix-free products (AffineHead's cost model; any other GramLinearization's
// closed form is taken).
//
// With metric (a regulariser's L2 terms or the damping metric damp the parameters apart, see
// fgnDirection) only an AffineHead forms its Gram in closed form (G_M, with per-tensor weights),
// and with perEntry (a damping metric per entry, Settings.ScaledDampingPerEntry) none does.
func (s Settings) closedFormGram(lin Linearization, metric, perEntry bool) (GramLinearization, bool) {
	closed, ok := lin.(GramLinearization)
	_, isHead := lin.(*AffineHead)
	switch {
	case !ok || s.RowOperator == MatrixFree || metric && !isHead || perEntry:
		return nil, false
	case s.RowOperator == CheaperRowOperator:
		if head, isHead := lin.(*AffineHead); isHead && !head.gramCheaper(s.CG.MaxIterations) {
			return nil, false
		}
	}
	return closed, true
}

// GramLinearization is a Linearization that can also form the margin Gram of its batch in closed
// form, for FGN's ClosedFormGram row operator (GNConfig.Direction). AffineHead implements it
// (appendix F.2); a model whose Gram has another closed form implements it and hands it to the
// optimizers with RecordLinearization or UpdateGraphWithLinearization.
type GramLinearization interface {
	Linearization
	// MarginGram returns the unwhitened margin Gram G = J Jᵀ (b×b) of the batch,
	//
	//	G_ij = J_i·J_j,      J_i = ∇_z s_iᵀ J_z,i      (eq. 2.9),
	//
	// from the logit-space margin gradients gradS = ∇_z s (b×C, fgn/paper's Margin.GradS).
	// GNConfig.Direction calls it once per direction, outside CG's loop.
	MarginGram(gradS *Node) *Node
}
