package artifact

import (
	"math"
	"math/rand/v2"
	"testing"
)

// noisySteps returns n step times around median ms: 5 % jitter and, as on a shared machine,
// every fifth step three times slower.
func noisySteps(seed uint64, n int, ms float64) []float64 {
	return noisy(seed, n, ms, 0.05, 5)
}

// noisy returns n values ms·(1 + jitter·N(0, 1)), every spike-th one three times larger
// (spike 0: none).
func noisy(seed uint64, n int, ms, jitter float64, spike int) []float64 {
	rng := rand.New(rand.NewPCG(seed, 7))
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = ms * (1 + jitter*rng.NormFloat64())
		if spike > 0 && i%spike == spike-1 {
			xs[i] *= 3
		}
	}
	return xs
}

func TestRepeatedOrderingVerdicts(t *testing.T) {
	for _, tc := range []struct {
		name   string
		groups map[string][]float64
		want   string
	}{
		{"clearly faster", map[string][]float64{"a": noisySteps(1, 12, 10), "b": noisySteps(2, 12, 20)}, Pass},
		{"clearly slower", map[string][]float64{"a": noisySteps(1, 12, 30), "b": noisySteps(2, 12, 20)}, Fail},
		{"overlapping", map[string][]float64{"a": noisySteps(1, 12, 20), "b": noisySteps(2, 12, 20.4)}, Inconclusive},
		{"same cost, 6 noisy steps", map[string][]float64{"a": noisy(1, 6, 20, 0.2, 3), "b": noisy(2, 6, 20, 0.2, 3)}, Inconclusive},
		{"small difference, many steps", map[string][]float64{"a": noisySteps(1, 640, 19), "b": noisySteps(2, 640, 20)}, Pass},
		{"one pair reversed fails", map[string][]float64{"a": noisySteps(1, 12, 10), "b": noisySteps(2, 12, 20), "c": noisySteps(3, 12, 15)}, Fail},
		{"one pair within the noise", map[string][]float64{"a": noisySteps(1, 12, 10), "b": noisySteps(2, 12, 20), "c": noisySteps(3, 12, 20.2)}, Inconclusive},
		{"never reached is slowest", map[string][]float64{"a": {1, 1.1, 0.9, 1.2}, "b": {math.NaN(), math.NaN(), math.NaN(), 5}}, Pass},
		{"neither reached", map[string][]float64{"a": {math.NaN(), math.NaN()}, "b": {math.NaN(), math.NaN()}}, Inconclusive},
	} {
		t.Run(tc.name, func(t *testing.T) {
			order := []string{"a", "b", "c"}[:len(tc.groups)]
			measured, status := checkRepeatedOrdering(tc.groups, order)
			if status != tc.want {
				t.Errorf("verdict %q, want %q (%s)", status, tc.want, measured)
			}
		})
	}
}

func TestRepeatedValueVerdicts(t *testing.T) {
	for _, tc := range []struct {
		name        string
		xs          []float64
		want, slack float64
		verdict     string
	}{
		{"inside the band", noisy(1, 10, 0.7, 0.05, 0), 0.693, 0.35, Pass},
		{"outside the band", noisy(1, 10, 2, 0.05, 0), 0.693, 0.35, Fail},
		{"straddling the band's edge", noisy(1, 10, 1.04, 0.05, 0), 0.693, 0.35, Inconclusive},
		{"never reached", []float64{math.NaN(), math.NaN(), math.NaN()}, 0.693, 0.35, Fail},
	} {
		t.Run(tc.name, func(t *testing.T) {
			measured, status := checkRepeatedValue(tc.xs, tc.want, tc.slack)
			if status != tc.verdict {
				t.Errorf("verdict %q, want %q (%s)", status, tc.verdict, measured)
			}
		})
	}
}

// TestBootstrapIsDeterministic checks that the verdict is a function of the measurements: the
// interval is the same on every call.
func TestBootstrapIsDeterministic(t *testing.T) {
	a, b := noisySteps(1, 12, 20), noisySteps(2, 12, 21)
	first := RatioInterval(a, b)
	for range 3 {
		if got := RatioInterval(a, b); got != first {
			t.Fatalf("RatioInterval %v, then %v", first, got)
		}
	}
	if !(first.Lo <= first.Value && first.Value <= first.Hi) {
		t.Errorf("interval %v does not contain its statistic", first)
	}
}
