// Package fgn implements Fast Gauss-Newton (FGN) for multiclass cross-entropy on GoMLX graphs,
// following "Fast Gauss-Newton for Multiclass Cross-Entropy". The same graphs run on the pure-Go
// backend and on XLA/PJRT (see package backend for the selection).
//
// # The map of the paper
//
//   - Section 2, margin quantities: Margin (s, p_★, p_†, q, ρ, ξ, ∇_z s, loss φ(s)).
//   - Section 3, curvature: GGNOperator (full softmax GGN, the SGN baseline), the FGN row
//     operator FGNRowOperator, the closed-form affine Gram AffineRowGram (appendix F.2), and the
//     dense forms Dense (H_GGN, H_FGN, the dropped term, Jacobians) for small problems.
//   - Sections 3.4-4, batched form and row-space solver: MarginJacobian (J, from logit JVP/VJP),
//     CG, and the directions FGNDirection, FGNAffineDirection, SGNDirection, LossGradient.
//   - Optimizers (sec. 5): FGN and SGN implement GoMLX's optimizer.Interface and are configured
//     like its Adam: FGN().LearningRate(α).Damping(λ).Done() trains wherever
//     optimizer.Adam().Done() does, train.Trainer included, with Loss as the trainer's loss (it
//     records the logits and labels the curvature needs). State lives in variables, so
//     checkpoints restore it. Damping is a DampingPolicy: ConstantDamping (the paper's) or
//     LevenbergMarquardt, which adapts λ by the gain ratio ρ of each step.
//   - Host-level entry point with input validation: AffineDirection.
//
// # Linearisation and JVPs
//
// A Linearization is the logit map linearised at the current parameters. Linearize works for
// any logits node of any parameter nodes: VJPs are reverse passes and, since GoMLX has no
// forward mode, JVPs are double VJPs (the JVP of a linear map is the VJP of its VJP). Both reuse
// the forward nodes, so the forward pass is computed once per step. AffineHead gives the closed
// forms for z = hW + 1bᵀ; a model with other closed forms implements Linearization and records
// it with RecordLinearization.
//
// # In-graph CG
//
// CG runs inside the compiled graph. For operators that contain no autodiff nodes (the closed-
// form affine Gram) it is a GoMLX While loop with early exit on the tolerance. For the generic
// closures the iterations are unrolled (MaxIter is small: 5 in the paper) and masked after
// convergence, which gives the same iterates: GoMLX v0.28.3's pure-Go backend (compute v0.1.3)
// compiles a closure's execution plan before its graph optimiser rewires same-rank broadcasts
// (ImplicitBroadcastFusion), so the closure runs a stale plan ("input 0 for node Mul not computed
// yet") whenever a VJP inside a While body broadcasts a size-1 axis. GoMLX also caches scalar
// constants per graph rather than per function; the While helper builds its body once in the
// main function first so every scalar it needs is a capturable main-function node.
//
// # Choosing the CG loop: measured
//
// BenchmarkCGLoop times the same 5-iteration row-space CG (float32, K = h hᵀ from b×64
// features, operator K + bI) built three ways, on the pure-Go backend in the SIMD build
// (2-core Intel Xeon, AVX-512; ms per solve including the Gram):
//
//	b     While (in-graph)   unrolled (in-graph)   host-driven (5 calls)
//	128   0.52               0.44                  0.51
//	512   2.95               2.26                  3.99
//
// The host-driven loop pays a call and a device-to-host read of ‖r‖² per iteration (1.7× at
// b=512 here; on a GPU each read is also a synchronisation), so CG stays in the graph. The
// unrolled form is the cheapest on this backend for a fixed 5 iterations; the While loop costs
// ~0.1-0.7 ms more but stops at the tolerance, and on XLA keeps the solve on the device with a
// data-dependent trip count. The closed-form path uses While; the generic closures must unroll
// (see above).
//
// # Saturated examples
//
// For |s| large, q = p_★p_† underflows while Q^{-1/2}r overflows. Rows with q below a floor
// (default ε² of the dtype) are solved unwhitened with their curvature dropped (see the
// whitening type); the step stays finite and solves the damped system wherever representable.
//
// # Measured speed
//
// See README.md for the benchmark figures (BenchmarkStep) and the machine they were taken on.
package fgn
