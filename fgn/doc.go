// Package fgn implements Fast Gauss-Newton (FGN) for multiclass cross-entropy on GoMLX graphs,
// following "Fast Gauss-Newton for Multiclass Cross-Entropy". FGN keeps the softmax
// cross-entropy loss and gradient exact, replaces the multiclass generalised Gauss-Newton matrix
// by its true-vs-rest part H_FGN = JᵀQJ/b, and solves the damped step in the b-dimensional
// whitened row space by conjugate gradients. The graphs are backend-neutral: the same code runs
// on GoMLX's pure-Go backend and on XLA/PJRT.
//
// A method is an assembly of three independent choices, named the same way everywhere in this
// repository (Method): the curvature (FGN, or SGN, the full softmax GGN baseline), FGN's row
// operator (ClosedFormGram or MatrixFree; by default, CheaperRowOperator takes the one that costs
// less for the step's shapes) and the linearisation (ExactProducts, a closed form such as
// AffineHead's, or Autodiff with Linearize); for example "FGN (closed-form Gram)",
// "FGN (matrix-free)" and "FGN (matrix-free, autodiff)".
//
// # Choosing FGN
//
// FGN() and SGN() are meant to replace optimizer.Adam().Done() in a classifier's training as they
// are: α = 1, λ adapted from 1 by Levenberg-Marquardt with a floor set by the batch gradient's
// noise (LMDamping: its whole variance, averaged over steps), each parameter tensor damped by its
// gradient's scale (Settings.ScaledDamping), at most 5 CG iterations stopped once the residual is
// below that noise (CGSettings.StopAtNoise), and FGN's step taken at the multiclass GGN's step
// length along its direction (Settings.GGNStepLength). These defaults were chosen on a zoo of
// models written as GoMLX's examples write them (BENCHMARKS.md, "Default settings"). What to
// expect:
//
//   - Per epoch, FGN reaches a tuned Adam's held-out accuracy or exceeds it on MLPs, convolutional
//     networks (by far on a residual CNN with LayerNorm) and softmax regression, with no learning
//     rate to tune, and stays close to SGN.
//   - Where the probability of the wrong classes is spread over many of them for long (a hard
//     task of many classes learnt from scratch in small batches, such as the zoo's word models)
//     the batch gradient is mostly noise and the floor holds λ at the curvature's scale; there
//     FGN and SGN end close to each other and below a tuned Adam. In larger batches, where the
//     gradient is more signal than noise while the probabilities are still spread (the zoo's
//     word models at b = 128, the digits CNN's few steps at b = 512), SGN does better: FGN's
//     true-vs-rest curvature sees only the wrong classes' mean, misses most of the GGN's there,
//     and its steps lower the loss of the other batches little. Take SGN there. FGN's step
//     length τ tells such a model apart (Optimizer.Telemetry's StepLength, see
//     GNConfig.GGNStepLength): the share of the GGN's curvature along the step that FGN's model
//     holds, near 1 where FGN does well and far below it there. On a deep plain network whose
//     logits start saturated (cifar's FNN example) a Gauss-Newton model fits the loss poorly and
//     Adam is ahead too. So it is on GoMLX's GR-KAN (kan.New with rational functions), where the
//     noise floor over-damps the composed rational layers; and where such layers raise inputs
//     far from unit scale to their powers (standardised pixels that few examples reach), FGN and
//     SGN stall: scale those inputs to [−1, 1] first, as GoMLX's KAN example does.
//   - Two settings that the defaults leave off narrow that gap: Settings.Momentum, steps along
//     the exponential average of the steps, and Settings.ScaledDampingPerEntry, the damping metric
//     per entry; with both, SGN comes closer to Adam on the word models and both methods on the
//     FNN, but FGN loses on the residual CNN, and the metric per entry can leave rarely used
//     weights large (a higher held-out cross-entropy at the same accuracy).
//   - A step costs a few Jacobian products more than Adam's (CG's, the step length's, the noise
//     estimate's and the damping's trial loss), so per second of a CPU Adam often gets there
//     first on small models. FGN pays most where the row-space solve is cheap against the
//     model's products: many classes over frozen features (an affine head, the paper's setting).
//
// # The paper, file by file
//
//   - rowspace.go, section 4: GNConfig.Direction, the direction of FGN or SGN on its own, and
//     FGN's, one whitened row-space solve for both row operators, with CG's stopping rule
//     (CGSettings.StoppingRule), and GramLinearization, through which a model supplies its margin
//     Gram in closed form.
//   - affine.go, appendix F.2: AffineHead and its closed-form Gram; linearize.go: Linearization,
//     the interfaces a linearisation may add (LogitsEvaluator, LinearInParams, WhileSafe) and
//     Linearize, the linearisation of any model by package jvp (forward-mode differentiation of
//     GoMLX graphs); affinedetect.go: the affine head the optimizers recognise with
//     jvp.MatchAffine.
//   - sgn.go: the SGN baseline's direction.
//   - direction.go: Direction, the step and its diagnostics. method.go: Method, the names of the
//     methods and their choices.
//   - settings.go: Settings, the one settings type, with the library's defaults (DefaultSettings)
//     and Algorithm 1's (PaperSettings).
//   - damping.go: damping policies, ConstantDamping (the paper's) and LevenbergMarquardt.
//     steplength.go: the GGN's step length along FGN's direction (Settings.GGNStepLength).
//     metric.go: the damping metric (Settings.ScaledDamping, ScaledDampingPerEntry). momentum.go:
//     the exponential average of the steps (Settings.Momentum).
//   - optimizer.go, loss.go: FGN and SGN as GoMLX optimizers (optimizer.Interface), with Loss as
//     the trainer's loss; state lives in variables, so checkpoints restore it. telemetry.go:
//     Telemetry, what the optimizer keeps of its steps (λ, ρ, τ, rejected and skipped steps).
//     regularisation.go: the terms of GoMLX's L2 and L1 regularisers that the loss may add, which
//     the step takes with their exact gradient and the L2 terms' Hessian (see Optimizer).
//   - params.go: the hyper-parameters read from the model scope (Param*, GNConfig.FromScope), which
//     DeclareParams declares for GoMLX's -set flag; the step size is fgn_learning_rate, never
//     GoMLX's learning_rate (Adam's scale). Importing the package registers "fgn" and "sgn" in
//     GoMLX's optimizer.KnownOptimizers, so optimizer.FromScope selects them.
//   - compat.go: the upstream GoMLX bugs worked around, one entry each with its reproduction test.
//
// The paper's quantities that the solver computes (the margin quantities of section 2, the margin
// Jacobian, the curvature products of section 3, the whitening of section 4, in-graph conjugate
// gradients, the dense matrices of a small problem) live in one internal package, fgn/internal/gn,
// which package fgn/paper exposes, with the batch gradient, the operators of sections 3 and 4 and
// a validated host-level entry point, for notebooks and checks.
//
// Graph-building functions panic on misuse, as GoMLX's do; host-level functions and Validate
// methods return errors. Measurements live in BENCHMARKS.md, not here.
package fgn
