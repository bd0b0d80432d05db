package paper

import (
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/support/exceptions"

	"github.com/fgn-paper/fgn/fgn"
	"github.com/fgn-paper/fgn/fgn/internal/gn"
)

// CGResult is the outcome of an in-graph CG solve.
type CGResult struct {
	// X is the approximate solution.
	X fgn.Vec
	// Iterations is the number of CG steps applied to reach X (int32 scalar).
	Iterations *Node
	// Residual is the final relative residual ‖A x − rhs‖/‖rhs‖ (scalar), 0 when rhs is 0, and NaN
	// when rhs or the final residual is not finite or CG stopped because a step overflowed the
	// dtype.
	Residual *Node
}

// CG solves A x = rhs for a symmetric positive definite operator A by conjugate gradients,
// starting from x0 (zeros when nil), inside the graph being built: the conjugate gradients of
// fgn's directions. It stops once ‖A x − rhs‖ ≤ Tolerance·‖rhs‖ or after MaxIterations iterations
// (s.StoppingRule does not apply: the residual is that of the system given), and at exact
// convergence, breakdown or overflow: it takes the step from x_k with residual r_k and direction
// p_k only if p_kᵀA p_k is finite and > 0 and β_k = ‖r_{k+1}‖²/‖r_k‖² is finite, and otherwise
// returns x_k. On finite input it therefore returns a finite iterate whatever the tolerance (0
// included), unless the iterates themselves leave the dtype's range; when it stops because
// p_kᵀA p_k, α_k, r_{k+1} or β_k overflowed, its Residual is NaN. The iterations are unrolled into
// the graph and an iteration past convergence is masked to a no-op, so op may be any graph
// function, autodiff products included. It panics on invalid settings.
func CG(op func(fgn.Vec) fgn.Vec, rhs, x0 fgn.Vec, s fgn.CGSettings) CGResult {
	if err := s.Validate(); err != nil {
		exceptions.Panicf("paper.CG: %v", err)
	}
	r := gn.SolveCG(gn.CGSystem{Curvature: op, RHS: rhs, X0: x0}, s.MaxIterations, s.Tolerance, false)
	return CGResult{X: r.X, Iterations: r.Iterations, Residual: r.Residual}
}
