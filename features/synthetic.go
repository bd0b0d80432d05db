package features

import (
	"fmt"
	"math/rand/v2"
)

// GaussianMixture draws n labelled examples in dimension dim from a mixture of classes
// unit-variance Gaussians with equal weights, whose means have independent N(0, separation²)
// coordinates. The means depend only on (seed, dim, classes, separation), so two calls with
// the same seed and different n draw a training and a held-out split of the same problem when
// their draw seeds differ: draw selects the sample.
func GaussianMixture(seed, draw uint64, n, dim, classes int, separation float64) (*Set, error) {
	switch {
	case n < 1 || dim < 1:
		return nil, fmt.Errorf("synthetic data needs n ≥ 1 and dim ≥ 1, got n=%d dim=%d", n, dim)
	case classes < 2:
		return nil, fmt.Errorf("synthetic data needs at least 2 classes, got %d", classes)
	case !(separation > 0):
		return nil, fmt.Errorf("synthetic class separation must be > 0, got %g", separation)
	}
	rng := rand.New(rand.NewPCG(seed, 0x6a55))
	means := make([]float64, classes*dim)
	for i := range means {
		means[i] = separation * rng.NormFloat64()
	}
	rng = rand.New(rand.NewPCG(seed, 0x5a3b1e+draw))
	s := &Set{X: make([]float32, n*dim), Y: make([]int32, n), N: n, D: dim}
	for i := range n {
		c := rng.IntN(classes)
		s.Y[i] = int32(c)
		for k := range dim {
			s.X[i*dim+k] = float32(means[c*dim+k] + rng.NormFloat64())
		}
	}
	return s, nil
}
