package paper

import (
	. "github.com/gomlx/gomlx/core/graph"

	"github.com/fgn-paper/fgn/fgn"
	"github.com/fgn-paper/fgn/fgn/internal/gn"
)

// Dense holds the dense forms of the curvature matrices for a small problem, over the flattened
// parameter vector of dimension d (the parameters concatenated in Params order, row-major). They
// are meant for diagnostics, tests and notebooks: building JZ takes b·C reverse passes. Its
// fields, all graph nodes:
//
//   - JZ, the logit Jacobians J_z,i (b×C×d); JS, the margin Jacobian J (b×d), row
//     i = ∇_z s_iᵀ J_z,i (eq. 2.9); Grad, the mean-loss gradient (d), computed as (1/b) J_zᵀ(p − y).
//   - Cov, Kept and DroppedOut, the per-example output-space matrices of Theorem 3.1 (b×C×C), in
//     the original class order: the softmax covariance diag(p) − p pᵀ, the kept term
//     q ∇_z s ∇_z sᵀ and the dropped term p_†(diag(ρ) − ρρᵀ) (ρ is 0 at the true class).
//   - GGN, FGN and Dropped, the batch-mean parameter-space matrices (d×d): H_GGN (eq. 3.1),
//     H_FGN = (1/b) Jᵀ Q J (eq. 3.8), and (1/b) Σ_i p_† J_z,iᵀ (diag ρ − ρρᵀ) J_z,i (eq. 3.4's
//     last term). Each is assembled from its own definition, so GGN = FGN + Dropped is a check
//     of Theorem 3.1, not a construction.
//   - Margin, the margin quantities of the batch.
type Dense = gn.Dense

// NewDense assembles the dense forms for the linearisation lin and the labels.
func NewDense(lin fgn.Linearization, labels *Node) *Dense {
	return gn.NewDense(lin, labels)
}
