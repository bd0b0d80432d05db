package fgn

// Upstream bugs this package works around, one entry each: what fails, the versions checked, and
// the test in compat_test.go that reproduces it. Each test passes while the bug is present and,
// once an upgrade fixes it, fails with a message naming the workaround to delete.
const (
	// compatConvVJPNotDifferentiable: GoMLX's VJP of ConvGeneral (convGeneralVJP) cannot be
	// differentiated again: the gradient of its kernel VJP with respect to the cotangent builds a
	// ConvGeneral whose channel axes do not match ("we must have inputChannels (=…) =
	// kernelInputChannels (=…)"). The double-VJP identity J v = ∇_a⟨Jᵀa, v⟩ therefore fails on any
	// convolutional model, with or without fusion. Linearize propagates tangents forward instead,
	// with a ConvGeneral rule of its own (forward.go). Checked: gomlx v0.28.16, compute v0.1.14.
	// Test: TestCompatConvVJPNotDifferentiable.
	compatConvVJPNotDifferentiable = "ConvGeneral VJP cannot be differentiated again"

	// compatFusedDenseVJPNoGradient: GoMLX's VJP of FusedDense (what layers.Dense and nn.Dense build
	// on a backend that fuses Dense, the pure-Go backend included) is the op FusedDenseVJP, which
	// has no VJP of its own, so the double VJP of any model with a layers.Dense fails ("no gradient
	// is defined"). Linearize gives FusedDense a forward rule (forward.go) and never differentiates
	// its VJP. Checked: gomlx v0.28.16, compute v0.1.14 (pure-Go backend). Test:
	// TestCompatFusedDenseVJPNoGradient.
	compatFusedDenseVJPNoGradient = "FusedDenseVJP has no gradient"

	// compatRowDotsLargeKernel: the pure-Go backend's DotGeneral runs a batched product of two
	// vectors per row, such as the row-wise dot products Einsum("ic,ic->i", a, a), on its large
	// (packed, AVX-512) matrix kernel once b·C exceeds its small-product threshold (2²² flops),
	// although both cross sizes are 1: for each of the b rows it packs the C×1 operand into
	// 32-column strips, zeroing the 31 padding columns a byte at a time, and runs 8×32 tiles of
	// which one entry is used. At b = 512, C = 32768 this made ξ = 1 − ‖ρ‖² cost more than the
	// step's two b×d×C products. NewMargin forms ‖ρ‖² as ReduceSum(Square(ρ)) instead, one
	// b×C temporary and two passes. Checked: compute v0.1.14, GOEXPERIMENT=simd, AVX-512. A speed
	// bug, so a benchmark reproduces it, not a test (tests never assert speed):
	// BenchmarkCompatRowDotsLargeKernel; when its Einsum variant is no slower than ReduceSum after
	// an upgrade, form ξ with the Einsum again and delete this entry.
	compatRowDotsLargeKernel = "batched row dot products run on the packed matrix kernel"
)
