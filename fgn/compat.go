package fgn

// Upstream bugs this package works around, one entry each: what fails, the workaround and where it
// is, the versions checked, and the test in compat_test.go (or benchmark) that reproduces it. Each
// test passes while the bug is present and, once an upgrade fixes it, fails with a message naming
// the workaround to delete. Call sites name their entry ("see compat.go: compatX");
// TestCompatCitations checks that every name cited exists and every entry is cited. Those of
// forward-mode differentiation are package jvp's (jvp/compat.go), those of the in-graph CG
// package fgn/internal/gn's (fgn/internal/gn/compat.go).
const (
	// compatRowDotsLargeKernel: the pure-Go backend's DotGeneral runs a batched product of two
	// vectors per row, such as the row-wise dot products Einsum("ic,ic->i", a, a), on its large
	// (packed, AVX-512) matrix kernel once b·C exceeds its small-product threshold (2²² flops),
	// although both cross sizes are 1: for each of the b rows it packs the C×1 operand into
	// 32-column strips, zeroing the 31 padding columns a byte at a time, and runs 8×32 tiles of
	// which one entry is used. At b = 512, C = 32768 this made ξ = 1 − ‖ρ‖² cost more than the
	// step's two b×d×C products. gn.NewMargin (internal/gn/margin.go) forms ‖ρ‖² as
	// Σ_j ρ_j shifted_j / Σ_j shifted_j (the sum of a product formed in place) instead. Checked: compute v0.1.14, GOEXPERIMENT=simd,
	// AVX-512. A speed bug, so a benchmark reproduces it, not a test (tests never assert speed):
	// BenchmarkCompatRowDotsLargeKernel; when its Einsum variant is no slower than its ReduceSum
	// variant after an upgrade, form ‖ρ‖² with the Einsum again and delete this entry.
	compatRowDotsLargeKernel = "batched row dot products run on the packed matrix kernel"

	// compatIfCapturedBuffer: the pure-Go backend hands an If branch a captured value at its last use
	// as its own (donated) buffer, which the branch may update in place and return; the main
	// function then still treats that buffer as free, and a later operation overwrites the If's
	// output (and the pool hands it out again). The experiments' Adam skips a step by neutral
	// scalars, not an If (experiments/train/adam.go); the library builds no If. Checked: compute
	// v0.1.14. Test: TestCompatIfCapturedBuffer.
	compatIfCapturedBuffer = "If releases a captured buffer its branch updated in place"

	// compatParallelExecutorDeadlock: with several graph executors (compute v0.1.14's default of 8)
	// a large matrix product in a While body waits forever for a worker: the idle executors hold the
	// pool's slots. fgn/backend runs the pure-Go backend with num_executors=1. Checked: compute
	// v0.1.14. Test: TestCompatParallelExecutorDeadlock, run only with FGN_COMPAT_SLOW=1 (it passes
	// after a one-minute timeout, abandoning the deadlocked execution).
	compatParallelExecutorDeadlock = "parallel executors deadlock on a large product in a While body"

	// compatSIMDNaN: the vectorised kernels of the SIMD build (GOEXPERIMENT=simd) evaluate Exp, Tanh
	// and Logistic of NaN to numbers (Exp(NaN) = 0 in float32, Tanh(NaN) = −1, Logistic(NaN) = 1).
	// Finiteness is tested by sums and products, which propagate NaN: Margin's loss tests the
	// logits' row sums (internal/gn/margin.go), CG's residual its norms (internal/gn/cg.go),
	// Direction.Finite the sums of the direction (direction.go). Checked: compute v0.1.14. Test: TestCompatSIMDNaN (SIMD build).
	compatSIMDNaN = "SIMD Exp, Tanh, Logistic map NaN to numbers"

	// compatSIMDExpUnderflow: the SIMD build's float64 Exp does not underflow: Exp(−∞), Exp(−750)
	// and Exp(−800), exactly 0 in float64, are 2.2250738585072542e-308, the smallest normal number
	// (float32 and the build without SIMD give 0). Margin's competitor weights ρ would then not
	// vanish at the true class, nor be one-hot at saturation, which Theorem 3.1's dropped term and
	// ξ = 1 − ‖ρ‖² take as exact. gn.NewMargin (internal/gn/margin.go) sets ρ's entries whose
	// exponential rounds to 0 to 0 (zeroUnderflow); ∇s sets its true-class entry, and ‖ρ‖² does
	// not change by an entry of 2e-308. Checked: compute v0.1.14, AVX-512 and AVX2.
	// Test: TestCompatSIMDExpUnderflow (SIMD build).
	compatSIMDExpUnderflow = "SIMD float64 Exp returns the smallest normal number where it should underflow to 0"

	// compatVariablesAsConstants: a graph not marked as training embeds the variables it reads as
	// constants, so a step built on it restarts from the same parameters every time, and a compiled
	// evaluation graph (train.Trainer.EvalStep included) keeps the values of its first call. The
	// optimizers panic on a parameter that is a constant, naming the fix (variablesOf,
	// optimizer.go); the experiments' step graphs are training graphs and their evaluator takes the
	// parameters as inputs (experiments/train step.go, train.go). Checked: gomlx v0.28.16.
	// Test: TestCompatVariablesAsConstants.
	compatVariablesAsConstants = "variables of non-training graphs are constants"
)
