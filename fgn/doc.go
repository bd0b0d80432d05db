// Package fgn implements Fast Gauss-Newton (FGN) for multiclass cross-entropy on GoMLX graphs,
// following "Fast Gauss-Newton for Multiclass Cross-Entropy". FGN keeps the softmax
// cross-entropy loss and gradient exact, replaces the multiclass generalised Gauss-Newton matrix
// by its true-vs-rest part H_FGN = JᵀQJ/b, and solves the damped step in the b-dimensional
// whitened row space by conjugate gradients. The graphs are backend-neutral: the same code runs
// on GoMLX's pure-Go backend and on XLA/PJRT.
//
// A method is an assembly of three independent choices, named the same way everywhere in this
// repository: the curvature (FGN, or SGN, the full softmax GGN baseline), FGN's row operator
// (ClosedFormGram or MatrixFree) and the linearisation (a closed form such as AffineHead, or
// autodiff with Linearize); for example "FGN (closed-form Gram)", "FGN (matrix-free)" and
// "FGN (matrix-free, autodiff)".
//
// # The paper, file by file
//
//   - margin.go, section 2: Margin, the per-example margin quantities s, p_★, p_†, q, ρ, ξ, ∇_z s
//     and the loss φ(s).
//   - curvature.go, section 3: the margin Jacobian J (MarginJacobian), the FGN operator in
//     parameter space (FGNOperator) and in row space (FGNRowOperator); dense.go holds the dense
//     forms (H_GGN, H_FGN, the dropped term) for checks on small problems.
//   - rowspace.go, section 4: FGNDirection, one whitened row-space solve for both row operators,
//     with CG's stopping rule (cg.go: CG, StoppingRule), and GramLinearization, through which a
//     model supplies its margin Gram in closed form.
//   - affine.go, appendix F.2: AffineHead and its closed-form Grams (FeatureGram,
//     AffineMarginGram, AffineRowGram); linearize.go: Linearization and Linearize, whose J_z v is
//     forward mode on the built graph (forward.go: the walk from the parameters to the logits,
//     one tangent rule per op type, and the clone that evaluates the logits elsewhere);
//     affinedetect.go: the affine head the optimizers recognise on that walk.
//   - sgn.go: the SGN baseline, SGNDirection and GGNOperator.
//   - direction.go: Direction, the step and its diagnostics, and the batch gradient
//     (LossGradient, Margin.Gradient).
//   - settings.go: Settings, the one settings type, and its defaults (DefaultSettings).
//   - damping.go: damping policies, ConstantDamping (the paper's) and LevenbergMarquardt.
//   - optimizer.go, loss.go: FGN and SGN as GoMLX optimizers (optimizer.Interface), with Loss as
//     the trainer's loss; state lives in variables, so checkpoints restore it.
//   - host.go: AffineDirection, a validated host-level entry point.
//
// Graph-building functions panic on misuse, as GoMLX's do; host-level functions and Validate
// methods return errors. Measurements live in BENCHMARKS.md, not here.
package fgn
