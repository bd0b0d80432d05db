package fgn

import (
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/support/exceptions"

	"github.com/fgn-paper/fgn/fgn/internal/gn"
)

// Direction is a damped Gauss-Newton direction d for a batch, with its diagnostics. The step is
// w ← w + α d.
type Direction struct {
	// D is the direction, shaped like the parameters.
	D Vec
	// Loss is the mean cross-entropy of the batch (scalar).
	Loss *Node
	// Iterations is the number of CG iterations used (int32 scalar), FGN's gradient start on a
	// batch with saturated rows included (see GNConfig.Direction).
	Iterations *Node
	// Residual is the relative residual that CG's stopping rule compared with the tolerance, for
	// the returned direction: ‖(H + λI) d + g‖/‖g‖ for SGN and for FGN with
	// StopParameterResidual, ‖e‖/‖r̃‖ in FGN's whitened row space with StopWhitenedRowResidual.
	// On a regularised loss (see Optimizer) g and H include the regulariser's gradient and L2
	// Hessian D, and FGN measures the parameter residual in the norm ‖x‖² = Σ_k ‖x_k‖²/m_k,
	// m_k = 1 + D_k/λ, relative to its value at d₀ = −(λI + D)⁻¹∇R, where its row solve starts.
	Residual *Node
	// MeanPDagger and MeanXi are the batch means of p_† and ξ (scalars).
	MeanPDagger, MeanXi *Node
	// Solution is the CG solution, the state a warm start carries to the next step: the row-space
	// vector u (b) for FGN (w = u − r̃/(bλ) on a batch with saturated rows, see
	// GNConfig.Direction), the direction itself for SGN.
	Solution Vec
	// Finite is true (boolean scalar) when the loss, the CG residual and every entry of D are
	// finite (and D's entries do not sum beyond the dtype's range). A NaN or ±Inf in the batch
	// or the parameters reaches one of them through sums and products alone (the loss tests
	// the logits' row sums, the residual the right-hand side's norm), whatever a backend's Exp
	// or Max make of a NaN (see compat.go: compatSIMDNaN). The optimizers take a step only when it holds.
	Finite *Node
	// Damping is the damping telemetry of an optimizer step (UpdateGraphWithLinearization); nil
	// for a direction computed on its own.
	Damping *StepDamping
	// Method is the method the direction took: its curvature, for FGN the row operator it applied
	// (CheaperRowOperator resolved), and for a Trainer step (Optimizer's UpdateGraph) the
	// linearisation the optimizer used (empty for a linearisation given by the caller).
	Method Method

	// lambda is the damping λ the direction was solved with; scale what the step measured of its
	// batch to choose it.
	lambda *Node
	scale  batchScale
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
// curvature weight q_i ≈ e^{−s} and a whitened residual r̃_i ≈ e^{s/2}: its row equation is nearly
// decoupled, bλ u_i ≈ r̃_i, yet its back-projected contribution √q_i u_i ≈ r_i/(bλ) is of the size
// of any other row's, and its curvature q_i‖J_i‖²/b need not be small beside λ when ‖J_i‖ is large.
// Rows are whitened with √q'_i = max(√q_i, ν), ν the dtype's smallest normal number, which keeps r̃
// finite and is exact to the dtype's resolution (see fgn/paper's RowRHS). On a batch with a row
// below the saturation floor q_min (Settings.SaturationFloor), where r̃ spans more than the dtype's
// precision, CG takes its gradient start: it starts from u₀ = r̃/(bλ),
// which solves the decoupled rows exactly, and its first iteration restarts it on
//
//	(K + bλI) w = −K r̃/(bλ) = −Q'^{1/2} J g/λ,      u = u₀ + w,
//	d = −J̃ᵀu = −g/λ − J̃ᵀw,
//
// from the products J̃ᵀr̃ = Jᵀr = b g and K r̃ = Q'^{1/2} J Jᵀr that its first iteration makes on
// any batch. The result depends on no sum of r̃'s entries, and the step solves the damped system
// with the curvature H_FGN itself. That iteration counts among the MaxIterations (it makes the
// products of one), so a step on a saturated batch costs what any step costs; at the cap, CG has
// then taken one iteration fewer on w. A start is not used on a saturated batch, and
// Solution, the warm-start state, is then w.
//
// Row operator. With Settings.RowOperator = ClosedFormGram (or CheaperRowOperator where the closed
// form costs less) and a linearisation that forms its margin Gram in closed form (a
// GramLinearization, e.g. AffineHead: appendix F.2), G is formed once per direction (b×b), CG
// iterates on b×b products in an in-graph While loop, and one VJP back-projects. Otherwise
// (MatrixFree, or a linearisation without a closed-form Gram, e.g. Linearize's autodiff) each CG
// iteration applies G matrix-free by one VJP and one JVP of the margin map (eq. 4.8), and the
// back-projection is accumulated from CG's VJPs: the step costs the logits, N_CG·(JVP + VJP) and
// one VJP (appendix "Cost accounting").
//
// Stopping rule. For any row iterate u with residual e = r̃ − (K + bλI)u, the back-projected
// d = −J̃ᵀu satisfies, since H_FGN = J̃ᵀJ̃/b and g = J̃ᵀr̃/b (eq. 3.8),
//
//	(H_FGN + λI) d + g = (1/b) J̃ᵀ e,   so   ‖(H_FGN + λI) d + g‖/‖g‖ = √(eᵀK e / ‖Jᵀr‖²).
//
// With CGSettings.StoppingRule = StopParameterResidual (DefaultSettings' rule) CG stops on this
// exact parameter-space residual: it evaluates eᵀK e = ‖J̃ᵀe‖² from the VJP of the next iteration's
// product (matrix-free; one b×b product more in closed form), and ‖Jᵀr‖² from J̃ᵀr̃, the VJP CG
// starts from (matrix-free), or as rᵀG r (closed-form Gram). A cheaper proxy, the unwhitened row
// residual ‖Q^{1/2}e‖ ≤ Tolerance·‖r‖, bounds the parameter residual only up to the condition
// number of J, which is unbounded on exactly the batches where the whitened test fails; the exact
// test is kept. With StopWhitenedRowResidual CG stops on ‖e‖ ≤ Tolerance·‖r̃‖ as in Algorithm 1
// (with q floored at q_min in ‖r̃‖, whose square would otherwise overflow on a saturated batch):
// when a row has a large margin s, r̃_i ≈ e^{s/2} dominates ‖r̃‖ while q_i is tiny, and that test
// passes after one iteration far from the solution. After a gradient start, e is the residual of
// w's system, which is that of u.
func (c *GNConfig) Direction(lin Linearization, labels *Node, start Vec) *Direction {
	if c.fgn {
		return fgnDirection(lin, labels, first(start), c.s, nil, nil)
	}
	return sgnDirection(lin, labels, start, c.s, nil, nil)
}

// rowStart is the CG start of the row-space solve: nil (zero) or {u0}.
func rowStart(u0 *Node) Vec {
	if u0 == nil {
		return nil
	}
	return Vec{u0}
}

// allFinite returns a boolean scalar that holds when every entry of every tensor of v (not empty)
// is finite. It makes one sum per tensor: a NaN or ±Inf entry makes the sum NaN or ±Inf. (A sum of
// finite entries that overflows also counts as not finite: such a step is no step either.)
func allFinite(v Vec) *Node {
	if len(v) == 0 {
		exceptions.Panicf("fgn: allFinite of no tensor")
	}
	finite := IsFinite(ReduceAllSum(v[0]))
	for _, x := range v[1:] {
		finite = LogicalAnd(finite, IsFinite(ReduceAllSum(x)))
	}
	return finite
}

func newDirection(d Vec, m *gn.Margin, sol gn.CGResult) *Direction {
	loss := ReduceAllMean(m.Loss)
	finite := LogicalAnd(LogicalAnd(IsFinite(loss), IsFinite(sol.Residual)), allFinite(d))
	return &Direction{
		Finite:      finite,
		D:           d,
		Loss:        loss,
		Iterations:  sol.Iterations,
		Residual:    sol.Residual,
		MeanPDagger: ReduceAllMean(m.PDagger),
		MeanXi:      ReduceAllMean(m.Xi),
		Solution:    sol.X,
	}
}
