// Package paper exposes the quantities of "Fast Gauss-Newton for Multiclass Cross-Entropy" that
// package fgn computes inside its solver, for the notebooks, the experiments' checks and tests:
// the margin quantities and the batch gradient, the margin Jacobian J, the curvature operators in
// parameter and row space, the dense matrices of a small problem, conjugate gradients on any
// operator, the right-hand side of FGN's row system, and a validated host-level entry point for
// the affine head. A model trainer needs package fgn only.
//
//   - margin.go, section 2: Margin and NewMargin (eqs. 2.1-2.7, 3.6) and LossGradient
//     (eqs. 2.11, 3.8).
//   - curvature.go, section 3: MarginJacobian (eq. 2.9), FGNOperator (eq. 3.8), GGNOperator
//     (eq. 3.1).
//   - rowspace.go, section 4: FGNRowOperator (eq. 4.8) and RowRHS (eq. 4.6).
//   - affine.go, appendix F.2: FeatureGram, AffineMarginGram and AffineRowGram.
//   - dense.go: Dense, the dense H_GGN, H_FGN and dropped term (Theorem 3.1) of a small problem.
//   - cg.go: CG, the conjugate gradients of fgn's directions on any operator.
//   - host.go: AffineDirection, one direction of the affine head from host tensors.
//
// Each is the solver's own code (fgn and this package share one implementation, in
// fgn/internal/gn), so a check built on them checks the solver. Graph-building functions panic on
// misuse; AffineDirection returns errors.
package paper
