package nb

import (
	"math"
	"os"
	"testing"
)

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name     string
		err, tol float64
		fails    bool
	}{
		{"below", 1e-16, 1e-15, false},
		{"equal", 0, 0, false},
		{"above", 2e-15, 1e-15, true},
		{"NaN", math.NaN(), 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code := -1
			exit = func(c int) { code = c }
			defer func() { exit = os.Exit }()
			Check(tc.name, tc.err, tc.tol)
			if got := code == 1; got != tc.fails {
				t.Errorf("Check(%g, tol %g): exit code %d, want failure %v", tc.err, tc.tol, code, tc.fails)
			}
		})
	}
}

func TestRelErr(t *testing.T) {
	for _, tc := range []struct {
		a, b []float64
		want float64
	}{
		{[]float64{1, 2}, []float64{1, 2}, 0},
		{[]float64{3, 4}, []float64{0, 0}, 5},
		{[]float64{1, 1}, []float64{1, 0}, 1},
		{[]float64{1}, []float64{1, 2}, math.Inf(1)},
	} {
		if got := RelErr(tc.a, tc.b); got != tc.want {
			t.Errorf("RelErr(%v, %v) = %g, want %g", tc.a, tc.b, got, tc.want)
		}
	}
}
