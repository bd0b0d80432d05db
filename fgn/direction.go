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
	// StepLength is τ ∈ [0, 1], the fraction of α d that an FGN optimizer step took at the GGN's
	// step length (Settings.GGNStepLength); nil otherwise.
	StepLength *Node
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
	// metric holds the damping metric's scales s_k (Settings.ScaledDamping; nil for S = I), and
	// grad the batch gradient of the loss when the step formed it for the metric.
	metric, grad Vec
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
