package fgn

// Upstream bugs this package works around, one entry each: what fails, the versions checked, and
// how it is reproduced.
const (
	// compatRowDotsLargeKernel: the pure-Go backend's DotGeneral runs a batched product of two
	// vectors per row, such as the row-wise dot products Einsum("ic,ic->i", a, a), on its large
	// (packed, AVX-512) matrix kernel once b·C exceeds its small-product threshold (2²² flops),
	// although both cross sizes are 1: for each of the b rows it packs the C×1 operand into
	// 32-column strips, zeroing the 31 padding columns a byte at a time, and runs 8×32 tiles of
	// which one entry is used. At b = 512, C = 32768 this made ξ = 1 − ‖ρ‖² cost more than the
	// step's two b×d×C products. NewMargin forms ‖ρ‖² as Σ_j ρ_j shifted_j / Σ_j shifted_j (the
	// sum of a product formed in place) instead. Checked: compute v0.1.14, GOEXPERIMENT=simd,
	// AVX-512. A speed bug, so a benchmark reproduces it, not a test (tests never assert speed):
	// BenchmarkCompatRowDotsLargeKernel; when its Einsum variant is no slower than its ReduceSum
	// variant after an upgrade, form ‖ρ‖² with the Einsum again and delete this entry.
	compatRowDotsLargeKernel = "batched row dot products run on the packed matrix kernel"
)
