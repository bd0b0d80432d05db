package headopt

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/fgn-paper/fgn/experiments/method"
	"github.com/fgn-paper/fgn/experiments/report"
)

// The results of a sweep come in two kinds. What a run computes at a given step (its
// parameters, hence its accuracy and cross-entropy) depends only on its configuration and seed:
// rerun on the same backend it is bit-identical. When it gets there depends on the clock, the
// machine and whatever else runs on it. The step curves and the steps to a threshold are of the
// first kind; the wall-time curves, times to a threshold and step times of the second, reported
// with their spread over seeds and over the repeated step-time measurements of each run.

// StepCurve is one method's mean over seeds at each of its evaluation steps.
type StepCurve struct {
	Method                         method.Method
	Seeds                          int
	Steps                          []int
	Epochs                         []float64
	AccMean, AccStd, CEMean, CEStd []float64
	// CGIterations is the mean over seeds of the mean number of CG iterations per step since the
	// previous evaluation (train.Point.CGIterations; 0 at step 0 and for Adam).
	CGIterations []float64
}

// StepCurves averages each method's runs at their evaluation steps, which every run of a method
// must share, in the order of methods.
func StepCurves(runs []Run, methods []method.Method) ([]StepCurve, error) {
	var curves []StepCurve
	for _, m := range methods {
		var sc *StepCurve
		var accs, ces, cgs [][]float64
		for _, r := range runs {
			if r.Method != m {
				continue
			}
			steps, epochs := make([]int, len(r.Points)), make([]float64, len(r.Points))
			acc, ce, cg := make([]float64, len(r.Points)), make([]float64, len(r.Points)), make([]float64, len(r.Points))
			for k, p := range r.Points {
				steps[k], epochs[k], acc[k], ce[k], cg[k] = p.Step, p.Epoch, p.EvalAccuracy, p.EvalLoss, p.CGIterations
			}
			if sc == nil {
				sc = &StepCurve{Method: m, Steps: steps, Epochs: epochs}
			} else if !slices.Equal(sc.Steps, steps) {
				return nil, fmt.Errorf("headopt: %s seed %d is evaluated at other steps than the method's other runs", m, r.Seed)
			}
			accs, ces, cgs = append(accs, acc), append(ces, ce), append(cgs, cg)
		}
		if sc == nil {
			return nil, fmt.Errorf("headopt: no runs of method %s", m)
		}
		sc.Seeds = len(accs)
		var err error
		if sc.AccMean, sc.AccStd, err = MeanStd(accs); err != nil {
			return nil, err
		}
		if sc.CEMean, sc.CEStd, err = MeanStd(ces); err != nil {
			return nil, err
		}
		if sc.CGIterations, _, err = MeanStd(cgs); err != nil {
			return nil, err
		}
		curves = append(curves, *sc)
	}
	return curves, nil
}

// StepsToThreshold returns the first evaluation step at which acc reaches threshold, or -1.
// Unlike a time, it is not interpolated: it is a step the run was evaluated at.
func StepsToThreshold(steps []int, acc []float64, threshold float64) int {
	for k, a := range acc {
		if a >= threshold {
			return steps[k]
		}
	}
	return -1
}

// stepsColumn is the steps-table column of the steps to threshold thr (percent).
func stepsColumn(thr float64) string {
	return "steps_to_" + strconv.FormatFloat(thr, 'g', -1, 64) + "pct"
}

// stepsOrNaN is StepsToThreshold as a table value: NaN when not reached.
func stepsOrNaN(steps []int, acc []float64, threshold float64) float64 {
	if s := StepsToThreshold(steps, acc, threshold); s >= 0 {
		return float64(s)
	}
	return math.NaN()
}

// StepCurvesTable returns the step curves as a long table (method, step, epoch, accuracy in
// percent and cross-entropy, mean and std over seeds).
func StepCurvesTable(curves []StepCurve, title string) *report.Table {
	t := report.NewTable("method", "seeds", "step", "epoch", "acc_mean_pct", "acc_std_pct", "ce_mean", "ce_std")
	t.Comment("data", title)
	t.Comment("aggregation", "mean and population std over seeds at each evaluation step; no clock is involved: a rerun of a seed on the same backend, build and CPU vector width gives the same values")
	for _, c := range curves {
		for k, s := range c.Steps {
			t.Add(string(c.Method), c.Seeds, s, c.Epochs[k], 100*c.AccMean[k], 100*c.AccStd[k], c.CEMean[k], c.CEStd[k])
		}
	}
	return t
}

// SeedsTable returns one row per run: its final step, optimisation time, test accuracy
// (percent) and cross-entropy, the quartiles of its step-time measurements (Run.StepMs), and
// for every threshold (percent) the time (linear crossing of its own trace, NaN: not reached in
// the run) and the first evaluation step at which it reaches it.
func SeedsTable(runs []Run, thresholds []float64, title string) *report.Table {
	cols := []string{"method", "seed", "steps", "opt_seconds", "acc_final_pct", "ce_final", "step_ms_q1", "step_ms_median", "step_ms_q3"}
	for _, thr := range thresholds {
		cols = append(cols, thresholdColumn(thr), stepsColumn(thr))
	}
	t := report.NewTable(cols...)
	t.Comment("data", title)
	t.Comment("rows", "one per (method, seed) run; the times (seconds) depend on the machine, the steps do not")
	for _, r := range runs {
		last := r.Points[len(r.Points)-1]
		q := []float64{math.NaN(), math.NaN(), math.NaN()}
		if ms := r.StepMs(); len(ms) > 0 {
			q = report.Quantiles(ms, 0.25, 0.5, 0.75)
		}
		row := []any{string(r.Method), r.Seed, last.Step, last.OptSeconds, 100 * last.EvalAccuracy, last.EvalLoss, q[0], q[1], q[2]}
		xs, acc, steps := make([]float64, len(r.Points)), make([]float64, len(r.Points)), make([]int, len(r.Points))
		for k, p := range r.Points {
			xs[k], acc[k], steps[k] = p.OptSeconds, p.EvalAccuracy, p.Step
		}
		for _, thr := range thresholds {
			row = append(row, TimeToThreshold(xs, acc, thr/100), stepsOrNaN(steps, acc, thr/100))
		}
		t.Add(row...)
	}
	return t
}
