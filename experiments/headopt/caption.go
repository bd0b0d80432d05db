package headopt

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/fgn-paper/fgn/experiments/report"
)

// Caption returns Figure 2's caption from the summary table (SummaryTable with its provenance,
// read back from its CSV): what the panels show, where and how it was measured, and what this
// run's numbers say, by step and by wall time. Every statement about the outcome is computed
// from the table, so the caption stays true when the figure is regenerated.
func Caption(t *report.Table, title string) (string, error) {
	rows, horizon, thresholds, err := parseSummary(t)
	if err != nil {
		return "", err
	}
	if len(rows) == 0 {
		return "", fmt.Errorf("headopt: the summary table has no rows")
	}
	seeds, _ := t.Floats("seeds")
	b := report.NewCaption("Figure 2: frozen-feature head optimisation on "+title, "fgn headopt")
	fmt.Fprintf(b, "(a) Mean test accuracy over %g seeds (± 1 std shaded) against synchronised optimisation time, each "+
		"method up to the end of the shortest of its seeds' runs (the mean needs every seed); the vertical line is the shared "+
		"horizon of Table 1 (%.3g s, the end of the "+
		"shortest run of any method)", maxOf(seeds), horizon)
	if len(thresholds) > 0 {
		fmt.Fprintf(b, ", the horizontal lines the thresholds (%s %%)", strings.Trim(fmt.Sprint(thresholds), "[]"))
	}
	b.WriteString(". (b) The same runs against optimisation steps.\n")
	fmt.Fprintf(b, "Measured on %s, profile %s; the host's load before and after each run is in its trace.\n\n",
		report.MeasuredOn(t), report.Recorded(t, "profile"))

	byStep := slices.Clone(rows)
	slices.SortStableFunc(byStep, func(x, y summaryRow) int { return cmp.Compare(y.finalAcc, x.finalAcc) })
	byTime := slices.Clone(rows)
	slices.SortStableFunc(byTime, func(x, y summaryRow) int { return cmp.Compare(y.acc, x.acc) })
	var parts []string
	sameSteps := !slices.ContainsFunc(rows, func(r summaryRow) bool { return r.finalStep != rows[0].finalStep })
	for _, r := range byStep {
		if sameSteps {
			parts = append(parts, fmt.Sprintf("%s %.2f %%", r.label, r.finalAcc))
		} else {
			parts = append(parts, fmt.Sprintf("%s %.2f %% (step %.0f)", r.label, r.finalAcc, r.finalStep))
		}
	}
	end := "at the end of their runs"
	if sameSteps {
		end = fmt.Sprintf("after %.0f steps", rows[0].finalStep)
	}
	fmt.Fprintf(b, "By step (the same on every rerun with this backend, build and CPU vector width): %s the mean test accuracy is %s.", end, strings.Join(parts, ", "))
	for k, thr := range thresholds {
		b.WriteString(" " + firstTo(rows, thr, func(r summaryRow) float64 { return r.steps[k] }, "at step %.0f", "by the last step"))
	}
	parts = parts[:0]
	for _, r := range byTime {
		parts = append(parts, fmt.Sprintf("%s %.2f %%", r.label, r.acc))
	}
	fmt.Fprintf(b, "\n\nBy wall time (this machine): at the %.3g s horizon the mean test accuracy is %s.", horizon, strings.Join(parts, ", "))
	parts = parts[:0]
	for _, r := range rows {
		parts = append(parts, fmt.Sprintf("%s %.3g ms", r.label, r.stepMs[1]))
	}
	fmt.Fprintf(b, " Median step times: %s.", strings.Join(parts, ", "))
	for k, thr := range thresholds {
		b.WriteString(" " + firstTo(rows, thr, func(r summaryRow) float64 { return r.times[k] }, "after %.3g s", "within the horizon"))
	}
	if s, w := byStep[0], byTime[0]; s.method != w.method {
		fmt.Fprintf(b, " %s leads %s but %s leads at the horizon: on this machine a step of %s takes %.2g× as long as one of %s (medians).",
			s.label, end, w.label, s.label, s.stepMs[1]/w.stepMs[1], w.label)
	}
	b.WriteString("\n")
	return b.String(), nil
}

// firstTo says which methods reach threshold thr (percent) and when, by the value at (NaN: not
// reached, which "never" qualifies).
func firstTo(rows []summaryRow, thr float64, at func(summaryRow) float64, when, never string) string {
	var reached []summaryRow
	var missed []string
	for _, r := range rows {
		if math.IsNaN(at(r)) {
			missed = append(missed, r.label)
		} else {
			reached = append(reached, r)
		}
	}
	if len(reached) == 0 {
		return fmt.Sprintf("No method reaches %g %% %s.", thr, never)
	}
	slices.SortStableFunc(reached, func(x, y summaryRow) int { return cmp.Compare(at(x), at(y)) })
	var parts []string
	for k := 0; k < len(reached); {
		labels := []string{reached[k].label}
		j := k + 1
		for ; j < len(reached) && at(reached[j]) == at(reached[k]); j++ { // ties, as steps often are
			labels = append(labels, reached[j].label)
		}
		parts = append(parts, fmt.Sprintf("%s "+when, strings.Join(labels, " and "), at(reached[k])))
		k = j
	}
	s := fmt.Sprintf("%g %% is reached by %s", thr, strings.Join(parts, ", then "))
	if len(missed) > 0 {
		s += fmt.Sprintf("; not by %s %s", strings.Join(missed, " or "), never)
	}
	return s + "."
}
