//go:build !(goexperiment.simd && amd64)

package jvp

// simdBuild reports whether this binary has the pure-Go backend's SIMD matrix kernels (built
// with GOEXPERIMENT=simd on amd64), whose small kernels rewrite 4 of relayout is tuned to.
const simdBuild = false
