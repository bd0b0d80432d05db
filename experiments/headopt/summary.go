package headopt

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/fgn-paper/fgn/experiments/report"
)

// CurvesTable returns the wall-time curves (FullCurves: each method up to the end of its
// shortest run) as a long table (method, time_s, accuracy in percent and cross-entropy, mean
// and std over seeds); horizon is the shared comparison horizon of Table 1.
func CurvesTable(curves []Curve, horizon float64, title string) *report.Table {
	t := report.NewTable("method", "seeds", "time_s", "acc_mean_pct", "acc_std_pct", "ce_mean", "ce_std")
	t.Comment("data", title)
	t.Comment("horizon_s", report.Format(horizon))
	t.Comment("aggregation", "each method's traces interpolated linearly onto a grid over [0, the end of its shortest run]; mean and population std over seeds; horizon_s is the shared comparison horizon of Table 1 (the end of the shortest run of any method)")
	for _, c := range curves {
		for i, x := range c.Time {
			t.Add(string(c.Method), c.Seeds, x, 100*c.AccMean[i], 100*c.AccStd[i], c.CEMean[i], c.CEStd[i])
		}
	}
	return t
}

// thresholdColumn is the table column of the time to threshold thr (percent).
func thresholdColumn(thr float64) string {
	return "time_to_" + strconv.FormatFloat(thr, 'g', -1, 64) + "pct_s"
}

// SummaryTable returns Table 1 from the shared-horizon curves (Aggregate) and the step curves,
// one row per method. Wall time: the mean ± std test accuracy (percent) and cross-entropy at
// the shared horizon (the curves' last grid time), the mean time per step and the quartiles of
// the step-time measurements (Curve.StepMs), and the time each threshold (percent) is first
// reached by the mean accuracy curve (NaN: not reached within the horizon). Steps (no clock):
// the last evaluation step, the mean ± std accuracy and cross-entropy there, and the first
// evaluation step at which the mean accuracy reaches each threshold (NaN: never).
func SummaryTable(curves []Curve, steps []StepCurve, horizon float64, thresholds []float64) (*report.Table, error) {
	cols := []string{"method", "label", "seeds", "acc_mean_pct", "acc_std_pct", "ce_mean", "ce_std", "ms_per_step",
		"step_ms_q1", "step_ms_median", "step_ms_q3"}
	for _, thr := range thresholds {
		cols = append(cols, thresholdColumn(thr))
	}
	cols = append(cols, "final_step", "final_acc_mean_pct", "final_acc_std_pct", "final_ce_mean", "final_ce_std")
	for _, thr := range thresholds {
		cols = append(cols, stepsColumn(thr))
	}
	t := report.NewTable(cols...)
	t.Comment("horizon_s", report.Format(horizon))
	t.Comment("thresholds_pct", strings.Trim(fmt.Sprint(thresholds), "[]"))
	t.Comment("not_reached", "NaN: the mean accuracy curve stays below the threshold up to the horizon (times) or the last step (steps)")
	for _, c := range curves {
		k := slices.IndexFunc(steps, func(s StepCurve) bool { return s.Method == c.Method })
		if k < 0 {
			return nil, fmt.Errorf("headopt: no step curve of method %s", c.Method)
		}
		sc := steps[k]
		last := len(c.Time) - 1
		row := []any{string(c.Method), c.Method.Label(), c.Seeds, 100 * c.AccMean[last], 100 * c.AccStd[last],
			c.CEMean[last], c.CEStd[last], c.MsPerStep, c.StepMs[0], c.StepMs[1], c.StepMs[2]}
		for _, thr := range thresholds {
			row = append(row, TimeToThreshold(c.Time, c.AccMean, thr/100))
		}
		end := len(sc.Steps) - 1
		row = append(row, sc.Steps[end], 100*sc.AccMean[end], 100*sc.AccStd[end], sc.CEMean[end], sc.CEStd[end])
		for _, thr := range thresholds {
			row = append(row, stepsOrNaN(sc.Steps, sc.AccMean, thr/100))
		}
		t.Add(row...)
	}
	return t, nil
}

// summaryRow is one parsed row of the summary table.
type summaryRow struct {
	method, label                            string
	acc, accStd, ce, ceStd, msStep           float64
	stepMs                                   [3]float64
	times                                    []float64
	finalStep                                float64
	finalAcc, finalAccStd, finalCE, finalStd float64
	steps                                    []float64
}

func parseSummary(t *report.Table) (rows []summaryRow, horizon float64, thresholds []float64, err error) {
	h, ok := t.Lookup("horizon_s")
	if !ok {
		return nil, 0, nil, fmt.Errorf("headopt: summary table has no horizon_s comment")
	}
	if horizon, err = strconv.ParseFloat(h, 64); err != nil {
		return nil, 0, nil, fmt.Errorf("headopt: summary horizon %q: %w", h, err)
	}
	ths, _ := t.Lookup("thresholds_pct")
	for _, f := range strings.Fields(ths) {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return nil, 0, nil, fmt.Errorf("headopt: summary threshold %q: %w", f, err)
		}
		thresholds = append(thresholds, v)
	}
	mc, err := t.Column("method")
	if err != nil {
		return nil, 0, nil, err
	}
	lc, err := t.Column("label")
	if err != nil {
		return nil, 0, nil, err
	}
	names := []string{"acc_mean_pct", "acc_std_pct", "ce_mean", "ce_std", "ms_per_step", "step_ms_q1", "step_ms_median",
		"step_ms_q3", "final_step", "final_acc_mean_pct", "final_acc_std_pct", "final_ce_mean", "final_ce_std"}
	for _, thr := range thresholds {
		names = append(names, thresholdColumn(thr), stepsColumn(thr))
	}
	cols := map[string][]float64{}
	for _, name := range names {
		if cols[name], err = t.Floats(name); err != nil {
			return nil, 0, nil, err
		}
	}
	for i, r := range t.Rows {
		row := summaryRow{method: r[mc], label: r[lc], acc: cols["acc_mean_pct"][i], accStd: cols["acc_std_pct"][i],
			ce: cols["ce_mean"][i], ceStd: cols["ce_std"][i], msStep: cols["ms_per_step"][i],
			stepMs:    [3]float64{cols["step_ms_q1"][i], cols["step_ms_median"][i], cols["step_ms_q3"][i]},
			finalStep: cols["final_step"][i], finalAcc: cols["final_acc_mean_pct"][i], finalAccStd: cols["final_acc_std_pct"][i],
			finalCE: cols["final_ce_mean"][i], finalStd: cols["final_ce_std"][i]}
		for _, thr := range thresholds {
			row.times = append(row.times, cols[thresholdColumn(thr)][i])
			row.steps = append(row.steps, cols[stepsColumn(thr)][i])
		}
		rows = append(rows, row)
	}
	return rows, horizon, thresholds, nil
}
