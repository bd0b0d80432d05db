package headopt

import (
	"fmt"
	"math"
	"slices"

	"github.com/fgn-paper/fgn/experiments/method"
	"github.com/fgn-paper/fgn/experiments/report"
	"github.com/fgn-paper/fgn/experiments/train"
)

// Run is one finished (method, seed) run as the aggregation needs it: its evaluation times
// (synchronised optimisation seconds) with the held-out accuracy (a fraction) and cross-entropy.
type Run struct {
	Method method.Method
	Seed   uint64
	Points []train.Point
}

// FinalSeconds returns the optimisation time of the run's last evaluation.
func (r Run) FinalSeconds() float64 {
	if len(r.Points) == 0 {
		return math.NaN()
	}
	return r.Points[len(r.Points)-1].OptSeconds
}

// Horizon returns the shared comparison horizon of app. F.2: the common time that every run of
// every method reaches, min over (method, seed) of the run's final optimisation time. Every
// trace is then defined on [0, Horizon] without extrapolation past its end.
func Horizon(runs []Run) (float64, error) {
	if len(runs) == 0 {
		return 0, fmt.Errorf("headopt: no runs to aggregate")
	}
	h := math.Inf(1)
	for _, r := range runs {
		t := r.FinalSeconds()
		if !(t > 0) || math.IsInf(t, 0) {
			return 0, fmt.Errorf("headopt: %s seed %d ends at optimisation time %g (want a finite time > 0)", r.Method, r.Seed, t)
		}
		h = min(h, t)
	}
	return h, nil
}

// Grid returns n ≥ 2 evenly spaced times from 0 to horizon (both included).
func Grid(horizon float64, n int) ([]float64, error) {
	if n < 2 || !(horizon > 0) || math.IsInf(horizon, 0) {
		return nil, fmt.Errorf("headopt: a time grid needs ≥ 2 points and a finite horizon > 0, got %d points, horizon %g", n, horizon)
	}
	g := make([]float64, n)
	for i := range g {
		g[i] = horizon * float64(i) / float64(n-1)
	}
	g[n-1] = horizon
	return g, nil
}

// Interpolate evaluates the piecewise-linear curve through (xs[k], ys[k]) at every grid time.
// xs must be non-decreasing; where two points share a time the later one wins. Before xs[0]
// the curve is ys[0]: a run's first evaluation is of the initial parameters, which nothing
// before it changes (for FGN, xs[0] is the one-time feature-Gram time, not a step). Grid times
// past xs[len-1] are an error: the shared horizon never needs extrapolation.
func Interpolate(xs, ys, grid []float64) ([]float64, error) {
	if len(xs) == 0 || len(xs) != len(ys) {
		return nil, fmt.Errorf("headopt: interpolating %d times and %d values", len(xs), len(ys))
	}
	for k := 1; k < len(xs); k++ {
		if xs[k] < xs[k-1] {
			return nil, fmt.Errorf("headopt: times decrease at point %d (%g after %g)", k, xs[k], xs[k-1])
		}
	}
	out := make([]float64, len(grid))
	k := 0 // xs[k] is the first time ≥ the current grid time
	for i, t := range grid {
		if i > 0 && t < grid[i-1] {
			return nil, fmt.Errorf("headopt: grid times decrease at %d", i)
		}
		if t > xs[len(xs)-1] {
			return nil, fmt.Errorf("headopt: grid time %g is past the trace's last time %g", t, xs[len(xs)-1])
		}
		for xs[k] < t {
			k++
		}
		j := k
		for j+1 < len(xs) && xs[j+1] == xs[j] { // the later of equal times
			j++
		}
		switch {
		case xs[j] == t || k == 0:
			out[i] = ys[j]
		default:
			x0, x1 := xs[k-1], xs[k]
			w := (t - x0) / (x1 - x0)
			out[i] = (1-w)*ys[k-1] + w*ys[k]
		}
	}
	return out, nil
}

// MeanStd returns the pointwise mean and standard deviation over the rows (the seeds) of a
// set of curves of equal length. The standard deviation is the population one (divisor n,
// NumPy's default), so one seed gives 0.
func MeanStd(curves [][]float64) (mean, std []float64, err error) {
	if len(curves) == 0 {
		return nil, nil, fmt.Errorf("headopt: no curves to average")
	}
	n := len(curves[0])
	mean, std = make([]float64, n), make([]float64, n)
	for _, c := range curves {
		if len(c) != n {
			return nil, nil, fmt.Errorf("headopt: averaging curves of lengths %d and %d", n, len(c))
		}
		for i, v := range c {
			mean[i] += v
		}
	}
	for i := range mean {
		mean[i] /= float64(len(curves))
		var ss float64
		for _, c := range curves {
			d := c[i] - mean[i]
			ss += d * d
		}
		std[i] = math.Sqrt(ss / float64(len(curves)))
	}
	return mean, std, nil
}

// TimeToThreshold returns the first time at which the curve ys(grid), read as piecewise linear
// on the grid, reaches threshold: grid[0] if ys[0] ≥ threshold, else the linear crossing
// inside the first grid interval whose right end reaches it. It returns NaN when the curve
// stays below threshold up to the end of the grid.
func TimeToThreshold(grid, ys []float64, threshold float64) float64 {
	for i, y := range ys {
		if y < threshold {
			continue
		}
		if i == 0 {
			return grid[0]
		}
		w := (threshold - ys[i-1]) / (y - ys[i-1])
		return grid[i-1] + w*(grid[i]-grid[i-1])
	}
	return math.NaN()
}

// Curve is one method's aggregate over seeds on a grid of times: held-out accuracy (fraction)
// and cross-entropy, mean and standard deviation.
type Curve struct {
	Method                         method.Method
	Seeds                          int
	Time                           []float64
	AccMean, AccStd, CEMean, CEStd []float64
	// MsPerStep is the mean over seeds of (final optimisation time / steps), in milliseconds.
	MsPerStep float64
	// StepMs are the quartiles (q1, median, q3), in milliseconds, of the repeated step-time
	// measurements: each evaluation interval of each seed gives one, its optimisation time
	// divided by its steps.
	StepMs [3]float64
}

// Aggregate interpolates every run's accuracy and cross-entropy onto gridPoints evenly spaced
// times over [0, Horizon(runs)] and averages them per method, in the order of methods.
func Aggregate(runs []Run, methods []method.Method, gridPoints int) ([]Curve, float64, error) {
	horizon, err := Horizon(runs)
	if err != nil {
		return nil, 0, err
	}
	curves, err := aggregate(runs, methods, gridPoints, func([]Run) (float64, error) { return horizon, nil })
	return curves, horizon, err
}

// FullCurves is Aggregate with each method's own horizon, the end of its shortest run: the
// curves show each method's whole run.
func FullCurves(runs []Run, methods []method.Method, gridPoints int) ([]Curve, error) {
	return aggregate(runs, methods, gridPoints, Horizon)
}

// aggregate averages each method's runs on gridPoints times over [0, horizon(the method's runs)].
func aggregate(runs []Run, methods []method.Method, gridPoints int, horizon func([]Run) (float64, error)) ([]Curve, error) {
	var curves []Curve
	for _, m := range methods {
		var mine []Run
		for _, r := range runs {
			if r.Method == m {
				mine = append(mine, r)
			}
		}
		if len(mine) == 0 {
			return nil, fmt.Errorf("headopt: no runs of method %s", m)
		}
		h, err := horizon(mine)
		if err != nil {
			return nil, err
		}
		grid, err := Grid(h, gridPoints)
		if err != nil {
			return nil, err
		}
		var accs, ces [][]float64
		var msPerStep float64
		var stepMs []float64
		for _, r := range mine {
			xs, acc, ce := make([]float64, len(r.Points)), make([]float64, len(r.Points)), make([]float64, len(r.Points))
			for k, p := range r.Points {
				xs[k], acc[k], ce[k] = p.OptSeconds, p.EvalAccuracy, p.EvalLoss
			}
			a, err := Interpolate(xs, acc, grid)
			if err != nil {
				return nil, fmt.Errorf("%s seed %d: %w", m, r.Seed, err)
			}
			c, err := Interpolate(xs, ce, grid)
			if err != nil {
				return nil, fmt.Errorf("%s seed %d: %w", m, r.Seed, err)
			}
			accs, ces = append(accs, a), append(ces, c)
			last := r.Points[len(r.Points)-1]
			msPerStep += 1e3 * last.OptSeconds / float64(max(last.Step, 1))
			stepMs = append(stepMs, r.StepMs()...)
		}
		cv := Curve{Method: m, Seeds: len(accs), Time: slices.Clone(grid), MsPerStep: msPerStep / float64(len(accs)),
			StepMs: [3]float64{math.NaN(), math.NaN(), math.NaN()}}
		if len(stepMs) > 0 {
			copy(cv.StepMs[:], report.Quantiles(stepMs, 0.25, 0.5, 0.75))
		}
		if cv.AccMean, cv.AccStd, err = MeanStd(accs); err != nil {
			return nil, err
		}
		if cv.CEMean, cv.CEStd, err = MeanStd(ces); err != nil {
			return nil, err
		}
		curves = append(curves, cv)
	}
	return curves, nil
}

// StepMs returns the run's step-time measurements in milliseconds: for each interval between
// consecutive evaluations, its optimisation time over its steps. (The time before the first
// evaluation, FGN's one-time feature Gram, belongs to no step.)
func (r Run) StepMs() []float64 {
	var out []float64
	for k := 1; k < len(r.Points); k++ {
		if n := r.Points[k].Step - r.Points[k-1].Step; n > 0 {
			out = append(out, 1e3*(r.Points[k].OptSeconds-r.Points[k-1].OptSeconds)/float64(n))
		}
	}
	return out
}
