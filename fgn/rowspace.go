package fgn

import (
	"slices"

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
// direction (b×b), CG iterates on b×b products in an in-graph While loop, and one VJP
// back-projects. Otherwise (MatrixFree, or a linearisation without a closed-form Gram, e.g.
// Linearize's autodiff) each CG iteration applies G matrix-free by one VJP and one JVP of the
// margin map (eq. 4.8), and the back-projection is accumulated from CG's VJPs: the step costs
// the logits, N_CG·(JVP + VJP) and one VJP (appendix "Cost accounting"), plus two VJPs and one
// JVP on a batch with saturated rows.
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
	g := m.S.Graph()
	dtype := m.S.DType()
	b := m.S.Shape().Dim(0)
	bLambda := cfg.scaledLambda(lambda, g, dtype, float64(b))
	w := newWhitening(m, bLambda, cfg.floor(dtype))
	rows := rowSystem{j: j, w: w, bLambda: bLambda, u0: u0, paramRule: cfg.CG.StoppingRule == StopParameterResidual}
	var sys cgSystem
	var backProject func(cgResult) Vec
	inLoop := inWhileLoop(lin)
	if closed, ok := lin.(GramLinearization); ok && cfg.RowOperator == ClosedFormGram {
		// G is formed outside CG, whose loop body then holds b×b products only, whatever the
		// linearisation's own products are built from.
		sys, backProject = rows.closedForm(closed.MarginGram(m.GradS), m.PDagger)
		inLoop = true
	} else {
		sys, backProject = rows.matrixFree(inLoop)
	}
	sol := solveCG(sys, cfg.CG, inLoop)
	dir := newDirection(backProject(sol), m, sol)
	dir.rowRHS = sys.rhs[0]
	return dir
}

// rowSystem builds the whitened row system of FGNDirection,
//
//	(K + bλ I) u = r̃ − Q^{1/2} G δ_R,      K = Q^{1/2} G Q^{1/2},
//
// with its stopping rule's reference ‖Jᵀr‖² = ‖Jᵀ p_†‖², and the back-projection
// d = −Jᵀ(δ_R + Q^{1/2} u) of its solution, for either row operator.
type rowSystem struct {
	j         marginJacobian
	w         whitening
	bLambda   *Node
	u0        *Node
	paramRule bool // StopParameterResidual: the C-seminorm test, relative to ‖Jᵀ p_†‖
}

// closedForm is the system on the margin Gram G formed in closed form: K is applied by b×b
// products, ‖Jᵀ p_†‖² = p_†ᵀ G p_†, and the back-projection is one VJP.
func (rs rowSystem) closedForm(gram, pDagger *Node) (cgSystem, func(cgResult) Vec) {
	sqrtQ := rs.w.sqrtQ
	coupling := ifSaturated(rs.w.deltaR, true, func() []*Node { return []*Node{MatMul(gram, rs.w.deltaR)} })[0]
	sys := cgSystem{
		curvature: func(v Vec) Vec { return Vec{Mul(sqrtQ, MatMul(gram, Mul(sqrtQ, v[0])))} },
		shift:     rs.bLambda,
		rhs:       Vec{Sub(rs.w.rTilde, Mul(sqrtQ, coupling))},
		x0:        rowStart(rs.u0),
	}
	if rs.paramRule {
		sys.curvatureNorm = true
		sys.refNorm2 = ReduceAllSum(Mul(pDagger, MatMul(gram, pDagger)))
	}
	backProject := func(sol cgResult) Vec {
		// The sign goes into the b-vector, not over the parameter-space result.
		return rs.j.vjp(Neg(Add(rs.w.deltaR, Mul(sqrtQ, sol.X[0]))))
	}
	return sys, backProject
}

// matrixFree is the system on G = J Jᵀ applied by one VJP and one JVP of the margin map
// (eq. 4.8), given to CG factored as K = J̃ J̃ᵀ, J̃ᵀ u = Jᵀ(Q^{1/2} u). Every VJP that CG makes
// is reused, so that on a batch without saturated rows the step costs one VJP more than CG's
// products (J̃ᵀ rhs, the first of them when CG starts from zero), and no product for the
// stopping rule's reference or the back-projection:
//
//   - the reference: Jᵀ p_† = J̃ᵀ r̃ + bλ t = J̃ᵀ rhs + Jᵀ(Q J t + bλ δ_R), t = Jᵀ δ_R, where
//     J̃ᵀ rhs is CG's cgSystem.factorRHS and the second term is zero without saturated rows;
//   - the back-projection: d = −(t + J̃ᵀ u), and CG accumulates J̃ᵀ u from its products
//     (cgResult.LX).
//
// On a batch with saturated rows t, J t and Jᵀ(Q J t + bλ δ_R) cost two VJPs and one JVP more
// (ifSaturated skips them on a batch without).
func (rs rowSystem) matrixFree(inLoop bool) (cgSystem, func(cgResult) Vec) {
	sqrtQ := rs.w.sqrtQ
	factor := func(u Vec) Vec { return rs.j.vjp(Mul(sqrtQ, u[0])) }
	sat := ifSaturated(rs.w.deltaR, inLoop, func() []*Node {
		t := rs.j.vjp(rs.w.deltaR)
		jt := rs.j.jvp(t)
		c := rs.j.vjp(Add(Mul(Mul(sqrtQ, sqrtQ), jt), Mul(rs.bLambda, rs.w.deltaR)))
		return append(append([]*Node{jt}, t...), c...)
	})
	n := (len(sat) - 1) / 2
	coupling, t, c := sat[0], Vec(sat[1:1+n]), Vec(sat[1+n:])
	rhs := Sub(rs.w.rTilde, Mul(sqrtQ, coupling))
	sys := cgSystem{
		factor:    factor,
		cofactor:  func(y Vec) Vec { return Vec{Mul(sqrtQ, rs.j.jvp(y))} },
		factorRHS: factor(Vec{rhs}),
		shift:     rs.bLambda,
		rhs:       Vec{rhs},
		x0:        rowStart(rs.u0),
	}
	one := ScalarOne(rhs.Graph(), rhs.DType())
	if rs.paramRule {
		jtp := vecAxpy(sys.factorRHS, one, c) // Jᵀ p_†
		sys.curvatureNorm = true
		sys.refNorm2 = vecDot(jtp, jtp)
	}
	backProject := func(sol cgResult) Vec { return vecScale(Neg(one), vecAxpy(t, one, sol.LX)) }
	return sys, backProject
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

// saturated reports whether some row of the batch is saturated: δ_R ≠ 0.
func saturated(deltaR *Node) *Node {
	return LogicalAny(NotEqual(deltaR, ZerosLike(deltaR)))
}

// ifSaturated returns the products that build forms from δ_R, whose first output is a b-vector:
// all are zero on a batch without saturated rows (δ_R = 0 on every row). When the products can be
// formed inside a closure (inLoop, see whileLoop) an If forms them only if some row is saturated,
// and returns zeros otherwise; else they are always formed.
//
// The pure-Go backend corrupts its buffer pool when an If branch is handed a captured value at its
// last use (see compat.go: compatIfCapturedBuffer). build may capture only δ_R and values that the
// solve reads after the If (the margin gradients, Q^{1/2}, bλ, the linearisation's forward
// nodes), and both branches capture δ_R, so that the If is never its last use: on the branch
// taken without saturated rows δ_R = 0, so −δ_R is the first output's zero.
//
// As for whileLoop, the branch is first built in the main function (dead code, removed by the
// backends) so that every scalar constant it uses is a main-function node the closure may capture
// (see compat.go: compatScalarCache).
func ifSaturated(deltaR *Node, inLoop bool, build func() []*Node) []*Node {
	formed := build()
	if !inLoop {
		return formed
	}
	g := deltaR.Graph()
	someSaturated := saturated(deltaR)
	formedFn := NewClosure(g, func(g *Graph) []*Node { return distinctOutputs(build()) })
	skippedFn := NewClosure(g, func(g *Graph) []*Node {
		zeros := []*Node{Neg(deltaR)}
		for _, x := range formed[1:] {
			zeros = append(zeros, Zeros(g, x.Shape()))
		}
		return distinctOutputs(zeros)
	})
	return If(someSaturated, formedFn, skippedFn)
}

// distinctOutputs returns the outputs of an If branch with the n-th output of a shape already
// returned made a node of its own, reshaped through a shape with n more unit axes: the backend
// merges outputs built alike, such as the zeros of one shape, and an If branch may not return one
// node twice (see compat.go: compatIfRepeatedOutput).
func distinctOutputs(nodes []*Node) []*Node {
	seen := make(map[string]int, len(nodes))
	out := make([]*Node, len(nodes))
	for k, n := range nodes {
		key := n.Shape().String()
		out[k] = n
		if seen[key] > 0 {
			unit := make([]int, seen[key])
			for i := range unit {
				unit[i] = 1
			}
			out[k] = Reshape(Reshape(n, append(slices.Clone(n.Shape().Dimensions), unit...)...), n.Shape().Dimensions...)
		}
		seen[key]++
	}
	return out
}
