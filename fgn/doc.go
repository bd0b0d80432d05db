// Package fgn implements Fast Gauss-Newton (FGN) for multiclass cross-entropy on GoMLX graphs,
// following "Fast Gauss-Newton for Multiclass Cross-Entropy". FGN keeps the softmax
// cross-entropy loss and gradient exact, replaces the multiclass generalised Gauss-Newton matrix
// by its true-vs-rest part H_FGN = JᵀQJ/b, and solves the damped step in the b-dimensional
// whitened row space by conjugate gradients. The graphs are backend-neutral: the same code runs
// on GoMLX's pure-Go backend and on XLA/PJRT.
//
// A method is an assembly of three independent choices, named the same way everywhere in this
// repository: the curvature (FGN, or SGN, the full softmax GGN baseline), FGN's row operator
// (ClosedFormGram or MatrixFree; by default, CheaperRowOperator takes the one that costs less for
// the step's shapes) and the linearisation (a closed form such as AffineHead, or
// autodiff with Linearize); for example "FGN (closed-form Gram)", "FGN (matrix-free)" and
// "FGN (matrix-free, autodiff)".
//
// # The paper, file by file
//
//   - margin.go, section 2: Margin, the per-example margin quantities s, p_★, p_†, q, ρ, ξ, ∇_z s,
//     the loss φ(s) and the batch gradient (Margin.Gradient).
//   - curvature.go, section 3: the margin Jacobian J = ∇_z sᵀ J_z (eq. 2.9) that FGN's curvature
//     H_FGN = JᵀQJ/b (eq. 3.8) is built from.
//   - rowspace.go, section 4: FGNDirection, one whitened row-space solve for both row operators,
//     with CG's stopping rule (cg.go, StoppingRule), and GramLinearization, through which a
//     model supplies its margin Gram in closed form.
//   - affine.go, appendix F.2: AffineHead and its closed-form Gram (FeatureGram);
//     linearize.go: Linearization, the interfaces a linearisation may add (LogitsEvaluator,
//     LinearInParams, WhileSafe) and Linearize, the linearisation of any model by package jvp
//     (forward-mode differentiation of GoMLX graphs); affinedetect.go: the affine head the
//     optimizers recognise with jvp.MatchAffine.
//   - sgn.go: the SGN baseline, SGNDirection.
//   - direction.go: Direction, the step and its diagnostics, and LossGradient.
//   - settings.go: Settings, the one settings type, with the library's defaults (DefaultSettings)
//     and Algorithm 1's (PaperSettings).
//   - damping.go: damping policies, ConstantDamping (the paper's) and LevenbergMarquardt.
//     steplength.go: the GGN's step length along FGN's direction (Settings.GGNStepLength).
//   - optimizer.go, loss.go: FGN and SGN as GoMLX optimizers (optimizer.Interface), with Loss as
//     the trainer's loss; state lives in variables, so checkpoints restore it.
//     regularisation.go: the terms of GoMLX's L2 and L1 regularisers that the loss may add, which
//     the step takes with their exact gradient and the L2 terms' Hessian (see Optimizer).
//   - params.go: the hyper-parameters read from the model scope (Param*, GNConfig.FromScope), which
//     DeclareParams declares for GoMLX's -set flag; the step size is fgn_learning_rate, never
//     GoMLX's learning_rate (Adam's scale). Importing the package registers "fgn" and "sgn" in
//     GoMLX's optimizer.KnownOptimizers, so optimizer.FromScope selects them.
//   - compat.go: the upstream GoMLX bugs worked around, one entry each with its reproduction test.
//
// Package fgn/paper exposes the quantities the solver computes internally (the operators of
// sections 3 and 4, the dense matrices of a small problem, CG on any operator, a validated
// host-level entry point) for notebooks and checks.
//
// Graph-building functions panic on misuse, as GoMLX's do; host-level functions and Validate
// methods return errors. Measurements live in BENCHMARKS.md, not here.
package fgn
