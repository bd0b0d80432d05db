package ref

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestRandMatrix(t *testing.T) {
	for _, tc := range []struct {
		r, c  int
		scale float64
	}{{1, 1, 1}, {3, 5, 0.5}, {200, 300, 2}} {
		m := RandMatrix(rand.New(rand.NewPCG(1, 2)), tc.r, tc.c, tc.scale)
		again := RandMatrix(rand.New(rand.NewPCG(1, 2)), tc.r, tc.c, tc.scale)
		if len(m) != tc.r {
			t.Fatalf("%d×%d: %d rows", tc.r, tc.c, len(m))
		}
		var sum, sumSq float64
		for i, row := range m {
			if len(row) != tc.c || !slices.Equal(row, again[i]) {
				t.Fatalf("%d×%d: row %d has %d entries or differs for the same seed", tc.r, tc.c, i, len(row))
			}
			for _, x := range row {
				sum += x
				sumSq += x * x
			}
		}
		if n := float64(tc.r * tc.c); n >= 1e4 {
			// The sample variance of n N(0, s²) draws is within 5 standard errors s²·√(2/n) of s².
			variance := sumSq/n - (sum/n)*(sum/n)
			s2 := tc.scale * tc.scale
			if e, tol := math.Abs(variance-s2), 5*s2*math.Sqrt(2/n); e > tol {
				t.Errorf("%d×%d scale %g: sample variance %g: error %.3g (tolerance %.3g)", tc.r, tc.c, tc.scale, variance, e, tol)
			}
		}
	}
}

func TestRandLabels(t *testing.T) {
	for _, tc := range []struct{ n, classes int }{{1, 1}, {10, 3}, {5000, 7}} {
		y := RandLabels(rand.New(rand.NewPCG(3, 4)), tc.n, tc.classes)
		seen := make([]bool, tc.classes)
		for i, label := range y {
			if label < 0 || int(label) >= tc.classes {
				t.Fatalf("n=%d, %d classes: label %d = %d out of range", tc.n, tc.classes, i, label)
			}
			seen[label] = true
		}
		if len(y) != tc.n || (tc.n >= 1000 && slices.Contains(seen, false)) {
			t.Errorf("n=%d, %d classes: %d labels, classes seen %v", tc.n, tc.classes, len(y), seen)
		}
	}
}

func TestRelErrMaxAbs(t *testing.T) {
	inf := math.Inf(1)
	for _, tc := range []struct {
		a, b         []float64
		relErr, maxA float64
	}{
		{[]float64{1, 2}, []float64{1, 2}, 0, 2},
		{[]float64{3, 4}, []float64{0, 0}, 5, 4},
		{[]float64{1, 0}, []float64{0, 1}, math.Sqrt2, 1},
		{[]float64{-7}, []float64{1, 2}, inf, 7},
		{nil, nil, 0, 0},
	} {
		if got := RelErr(tc.a, tc.b); got != tc.relErr {
			t.Errorf("RelErr(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.relErr)
		}
		if got := MaxAbs(tc.a); got != tc.maxA {
			t.Errorf("MaxAbs(%v) = %v, want %v", tc.a, got, tc.maxA)
		}
	}
}
