// Package paper exposes the quantities of "Fast Gauss-Newton for Multiclass Cross-Entropy" that
// package fgn computes inside its solver, for the notebooks, the experiments' checks and tests:
// the margin Jacobian J, the curvature operators in parameter and row space, the dense matrices
// of a small problem, conjugate gradients on any operator, the right-hand side of FGN's row
// system, and a validated host-level entry point for the affine head. A model trainer needs
// package fgn only.
//
//   - curvature.go, section 3: MarginJacobian (eq. 2.9), FGNOperator (eq. 3.8), GGNOperator
//     (eq. 3.1).
//   - rowspace.go, section 4: FGNRowOperator (eq. 4.8) and RowRHS (eq. 4.6).
//   - affine.go, appendix F.2: AffineMarginGram and AffineRowGram.
//   - dense.go: Dense, the dense H_GGN, H_FGN and dropped term (Theorem 3.1) of a small problem.
//   - cg.go: CG, the conjugate gradients of fgn's directions on any operator.
//   - host.go: AffineDirection, one direction of the affine head from host tensors.
//
// Each function is package fgn's own code (the solver's products, its CG, its Gram), so a check
// built on them checks the solver. Graph-building functions panic on misuse; AffineDirection
// returns errors.
package paper
