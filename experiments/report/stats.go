package report

import (
	"math"
	"slices"
)

// Quantiles returns the requested quantiles of xs by linear interpolation between order
// statistics (numpy's default).
func Quantiles(xs []float64, ps ...float64) []float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	out := make([]float64, len(ps))
	for i, p := range ps {
		pos := p * float64(len(s)-1)
		lo := int(math.Floor(pos))
		hi := min(lo+1, len(s)-1)
		out[i] = s[lo] + (pos-float64(lo))*(s[hi]-s[lo])
	}
	return out
}
