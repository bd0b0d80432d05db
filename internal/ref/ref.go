// Package ref holds the float64 helpers that the tests of fgn and jvp and the notebooks (through
// notebooks/nb) share: their small random problems and the errors they report against dense
// references.
package ref

import (
	"math"
	"math/rand/v2"
	"testing"
)

// RandVec returns n independent N(0, 1) entries drawn from rng.
func RandVec(rng *rand.Rand, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = rng.NormFloat64()
	}
	return out
}

// RandMatrix returns an r×c matrix of independent N(0, scale²) entries drawn from rng row by row.
func RandMatrix(rng *rand.Rand, r, c int, scale float64) [][]float64 {
	m := make([][]float64, r)
	for i := range m {
		m[i] = make([]float64, c)
		for j := range m[i] {
			m[i][j] = scale * rng.NormFloat64()
		}
	}
	return m
}

// RandLabels returns n labels drawn uniformly from [0, numClasses).
func RandLabels(rng *rand.Rand, n, numClasses int) []int32 {
	y := make([]int32, n)
	for i := range y {
		y[i] = int32(rng.IntN(numClasses))
	}
	return y
}

// RelErr returns ‖a−b‖₂ / ‖b‖₂ (‖a−b‖₂ when b = 0); +Inf when the lengths differ.
func RelErr(a, b []float64) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	var num, den float64
	for i := range a {
		num += (a[i] - b[i]) * (a[i] - b[i])
		den += b[i] * b[i]
	}
	if den == 0 {
		return math.Sqrt(num)
	}
	return math.Sqrt(num / den)
}

// MaxAbs returns max_i |a_i| (0 for an empty slice).
func MaxAbs(a []float64) float64 {
	m := 0.0
	for _, x := range a {
		m = math.Max(m, math.Abs(x))
	}
	return m
}

// Dot returns Σ_i a_i b_i.
func Dot(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// Check fails the test when err > tol (or is NaN), printing both; it logs them otherwise.
func Check(t testing.TB, what string, err, tol float64) {
	t.Helper()
	if !(err <= tol) {
		t.Errorf("%s: error %.3g exceeds tolerance %.3g", what, err, tol)
	} else {
		t.Logf("%s: error %.3g (tolerance %.3g)", what, err, tol)
	}
}
