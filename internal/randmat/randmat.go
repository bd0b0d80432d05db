// Package randmat draws the small random problems of fgn's tests and of the notebooks (through
// notebooks/nb), so that both read one definition of them.
package randmat

import "math/rand/v2"

// Matrix returns an r×c matrix of independent N(0, scale²) entries drawn from rng row by row.
func Matrix(rng *rand.Rand, r, c int, scale float64) [][]float64 {
	m := make([][]float64, r)
	for i := range m {
		m[i] = make([]float64, c)
		for j := range m[i] {
			m[i][j] = scale * rng.NormFloat64()
		}
	}
	return m
}

// Labels returns n labels drawn uniformly from [0, numClasses).
func Labels(rng *rand.Rand, n, numClasses int) []int32 {
	y := make([]int32, n)
	for i := range y {
		y[i] = int32(rng.IntN(numClasses))
	}
	return y
}
