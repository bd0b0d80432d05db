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
)
