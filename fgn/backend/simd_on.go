//go:build goexperiment.simd

package backend

// SIMDBuild reports whether this binary was built with GOEXPERIMENT=simd, which compiles the
// pure-Go backend's AVX2/AVX-512 matrix multiplication.
const SIMDBuild = true
