package artifact

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
)

// Timing claims are decided from repeated measurements (Measure.Repeated): every selected row
// of a group is one measurement, for example one timed optimiser step or one seed's time to a
// threshold. The statistic is the median of each group and its uncertainty a percentile
// bootstrap interval: the groups are resampled independently with replacement
// bootstrapResamples times from a generator seeded with bootstrapSeed, and the interval holds
// the central bootstrapConfidence of the resampled statistics.
//
// Why this rule: medians ignore the isolated slow steps that other jobs on a shared machine
// cause; the ratio of two medians is free of the time scale, so one rule serves every C and
// every backend; unlike a comparison of interquartile ranges, the interval narrows as the
// number of measurements grows, so a profile that times more steps resolves smaller
// differences, and a profile that times few steps says "inconclusive" instead of guessing. A
// fixed seed makes the verdict a deterministic function of the measurements.
//
// An ordering "a < b < c" compares each adjacent pair by the ratio median(a)/median(b): the pair
// holds when the whole interval is below 1 and is reversed when the whole interval is above 1.
// The claim passes when every pair holds, fails when a pair is reversed and is inconclusive
// otherwise. An expected number e with slack s (the claim's tolerance) compares the interval of
// the median with [e − s, e + s]: inside it passes, disjoint from it fails, otherwise it is
// inconclusive. A NaN measurement (a threshold not reached) counts as +∞.
const (
	bootstrapResamples  = 10000
	bootstrapSeed       = 1
	bootstrapConfidence = 0.95
)

// Interval is a statistic with its bootstrap interval [Lo, Hi].
type Interval struct{ Value, Lo, Hi float64 }

func (iv Interval) String() string {
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', 3, 64) }
	return fmt.Sprintf("%s [%s, %s]", f(iv.Value), f(iv.Lo), f(iv.Hi))
}

// MedianInterval returns the median of xs with its bootstrap interval.
func MedianInterval(xs []float64) Interval {
	rng := rand.New(rand.NewPCG(bootstrapSeed, bootstrapSeed))
	xs = notReachedIsInf(xs)
	stats := make([]float64, bootstrapResamples)
	buf := make([]float64, len(xs))
	for k := range stats {
		stats[k] = resampledMedian(rng, xs, buf)
	}
	return percentiles(median(xs), stats)
}

// RatioInterval returns median(a)/median(b) with its bootstrap interval, a and b resampled
// independently. ∞/∞ counts as 1 (neither reached the threshold).
func RatioInterval(a, b []float64) Interval {
	rng := rand.New(rand.NewPCG(bootstrapSeed, bootstrapSeed))
	a, b = notReachedIsInf(a), notReachedIsInf(b)
	stats := make([]float64, bootstrapResamples)
	bufA, bufB := make([]float64, len(a)), make([]float64, len(b))
	for k := range stats {
		stats[k] = ratio(resampledMedian(rng, a, bufA), resampledMedian(rng, b, bufB))
	}
	return percentiles(ratio(median(a), median(b)), stats)
}

func ratio(x, y float64) float64 {
	if math.IsInf(x, 1) && math.IsInf(y, 1) {
		return 1
	}
	return x / y
}

func notReachedIsInf(xs []float64) []float64 {
	out := slices.Clone(xs)
	for i, x := range out {
		if math.IsNaN(x) {
			out[i] = math.Inf(1)
		}
	}
	return out
}

func resampledMedian(rng *rand.Rand, xs, buf []float64) float64 {
	for i := range buf {
		buf[i] = xs[rng.IntN(len(xs))]
	}
	return median(buf)
}

// median returns the median of xs (the mean of the middle two for an even count); xs is
// reordered.
func median(xs []float64) float64 {
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	lo, hi := xs[n/2-1], xs[n/2]
	if lo == hi { // also ∞ = ∞, whose mean would be fine but whose difference is NaN
		return lo
	}
	return lo + (hi-lo)/2
}

// percentiles returns value with the central bootstrapConfidence interval of stats (sorted in
// place), read at the nearest ranks.
func percentiles(value float64, stats []float64) Interval {
	slices.Sort(stats)
	tail := (1 - bootstrapConfidence) / 2
	at := func(p float64) float64 {
		return stats[min(len(stats)-1, max(0, int(math.Round(p*float64(len(stats)-1)))))]
	}
	return Interval{Value: value, Lo: at(tail), Hi: at(1 - tail)}
}

// checkRepeatedOrdering decides an ordering of groups of repeated measurements.
func checkRepeatedOrdering(groups map[string][]float64, order []string) (measured, status string) {
	var parts []string
	status = Pass
	for i := 0; i+1 < len(order); i++ {
		a, b := groups[order[i]], groups[order[i+1]]
		iv := RatioInterval(a, b)
		verdict := "holds"
		switch {
		case iv.Lo > 1:
			verdict, status = "reversed", Fail
		case !(iv.Hi < 1):
			verdict = "within the noise"
			if status == Pass {
				status = Inconclusive
			}
		}
		parts = append(parts, fmt.Sprintf("%s/%s median ratio %s (n %d/%d, %s)", order[i], order[i+1], iv, len(a), len(b), verdict))
	}
	return strings.Join(parts, "; "), status
}

// checkRepeatedValue decides whether the median of repeated measurements xs is want within slack.
func checkRepeatedValue(xs []float64, want, slack float64) (measured, status string) {
	iv := MedianInterval(xs)
	lo, hi := want-slack, want+slack
	status = Inconclusive
	switch {
	case iv.Lo >= lo && iv.Hi <= hi:
		status = Pass
	case iv.Hi < lo || iv.Lo > hi:
		status = Fail
	}
	return fmt.Sprintf("median %s (n %d)", iv, len(xs)), status
}
