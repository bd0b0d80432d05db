package headopt

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/fgn-paper/fgn/experiments/method"
	"github.com/fgn-paper/fgn/experiments/plot"
	"github.com/fgn-paper/fgn/experiments/report"
	"github.com/fgn-paper/fgn/internal/atomicfile"
	"github.com/fgn-paper/fgn/internal/mdtext"
	"gonum.org/v1/plot/plotter"
)

// Files are the output file names for data tagged tag (Data.Tag).
type Files struct{ Figure, Caption, Curves, Steps, Seeds, Table, TracesDir string }

// FilesFor returns the output paths in dir: dir/figure2_<tag>.{svg,png,pdf} (Figure base) with
// its caption dir/figure2_<tag>.caption.md, the wall-time curves dir/figure2_<tag>_curves.csv,
// the step curves dir/figure2_<tag>_steps.csv, the per-run results dir/table1_<tag>_seeds.csv,
// dir/table1_<tag>.{csv,md,tex} (Table base) and the traces directory dir/traces_<tag>.
func FilesFor(dir, tag string) Files {
	return Files{
		Figure:    filepath.Join(dir, "figure2_"+tag),
		Caption:   filepath.Join(dir, "figure2_"+tag+".caption.md"),
		Curves:    filepath.Join(dir, "figure2_"+tag+"_curves.csv"),
		Steps:     filepath.Join(dir, "figure2_"+tag+"_steps.csv"),
		Seeds:     filepath.Join(dir, "table1_"+tag+"_seeds.csv"),
		Table:     filepath.Join(dir, "table1_"+tag),
		TracesDir: filepath.Join(dir, "traces_"+tag),
	}
}

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

// caption returns the table caption (plain text with Markdown/LaTeX-neutral wording).
func caption(title string, horizon float64, seeds int) string {
	over := fmt.Sprintf("%d seeds", seeds)
	if seeds == 1 {
		over = "1 seed"
	}
	return fmt.Sprintf("Frozen-feature linear-head summary on %s. Accuracy is reported in percent and CE denotes test "+
		"cross-entropy. Metrics are computed from the mean curves over %s (± 1 std) at the shared comparison "+
		"horizon of %.3g s. Time-to-threshold values are in seconds of synchronised optimisation time.", title, over, horizon)
}

func fmtTime(v float64, dash string) string {
	if math.IsNaN(v) {
		return dash
	}
	return fmt.Sprintf("%.3f", v)
}

// Markdown renders the summary table (SummaryTable, or read back from its CSV) as Markdown: the
// paper's Table 1 at the shared wall-time horizon, then the same runs by step. "–" marks
// thresholds not reached.
func Markdown(t *report.Table, title string) (string, error) {
	rows, horizon, thresholds, err := parseSummary(t)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	seeds, _ := t.Floats("seeds")
	fmt.Fprintf(&b, "**Table 1 (%s).** %s Time per step: median (interquartile range) of the step times measured "+
		"between evaluations, over every seed. \"–\" means the threshold was not reached within the shared horizon.\n\n",
		title, caption(title, horizon, int(maxOf(seeds))))
	fmt.Fprintf(&b, "| Method | Acc. at %.3g s | CE at %.3g s | ms/step |", horizon, horizon)
	for _, thr := range thresholds {
		fmt.Fprintf(&b, " Time to %g%% |", thr)
	}
	b.WriteString("\n|---|---|---|---|" + strings.Repeat("---|", len(thresholds)) + "\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %.2f ± %.2f | %.4f ± %.4f | %.3g (%.3g–%.3g) |", r.label, r.acc, r.accStd, r.ce, r.ceStd,
			r.stepMs[1], r.stepMs[0], r.stepMs[2])
		for _, v := range r.times {
			fmt.Fprintf(&b, " %s |", fmtTime(v, "–"))
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "\n**By step.** The same runs at their last evaluation step, and the first evaluation step at which "+
		"the mean accuracy reaches each threshold (\"–\": never). No clock is involved: rerunning a seed on the same "+
		"backend gives the same numbers.\n\n| Method | Steps | Acc. at the end | CE at the end |")
	for _, thr := range thresholds {
		fmt.Fprintf(&b, " Steps to %g%% |", thr)
	}
	b.WriteString("\n|---|---|---|---|" + strings.Repeat("---|", len(thresholds)) + "\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %.0f | %.2f ± %.2f | %.4f ± %.4f |", r.label, r.finalStep, r.finalAcc, r.finalAccStd, r.finalCE, r.finalStd)
		for _, v := range r.steps {
			if math.IsNaN(v) {
				b.WriteString(" – |")
			} else {
				fmt.Fprintf(&b, " %.0f |", v)
			}
		}
		b.WriteString("\n")
	}
	return b.String(), nil
}

// LaTeX renders the wall-time part of the summary table as a booktabs table laid out like the
// paper's Table 1, labelled tab:headopt_<tag>.
func LaTeX(t *report.Table, title, tag string) (string, error) {
	rows, horizon, thresholds, err := parseSummary(t)
	if err != nil {
		return "", err
	}
	seeds, _ := t.Floats("seeds")
	esc := strings.NewReplacer("%", `\%`, "&", `\&`, "_", `\_`, "#", `\#`, "±", `$\pm$`)
	var b strings.Builder
	b.WriteString("\\begin{table}[t]\n\\centering\n\\small\n\\setlength{\\tabcolsep}{4.5pt}\n\\caption{\n")
	fmt.Fprintf(&b, "\\textbf{Frozen-feature linear-head summary on %s.}\n%s ``--'' means the threshold was not reached within the shared horizon.\n}\n",
		esc.Replace(title), esc.Replace(strings.TrimPrefix(caption(title, horizon, int(maxOf(seeds))),
			"Frozen-feature linear-head summary on "+title+". ")))
	fmt.Fprintf(&b, "\\label{tab:headopt_%s}\n\\begin{tabular}{l%s}\n\\toprule\nMethod\n", tag, strings.Repeat("c", 2+len(thresholds)))
	fmt.Fprintf(&b, "& Acc. at %.3g s\n& CE at %.3g s", horizon, horizon)
	for _, thr := range thresholds {
		fmt.Fprintf(&b, "\n& Time to %g\\%%", thr)
	}
	b.WriteString(" \\\\\n\\midrule\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "%s\n& $%.2f \\pm %.2f$\n& $%.4f \\pm %.4f$", esc.Replace(r.label), r.acc, r.accStd, r.ce, r.ceStd)
		for _, v := range r.times {
			s := fmtTime(v, "--")
			if s != "--" {
				s = "$" + s + "$"
			}
			fmt.Fprintf(&b, "\n& %s", s)
		}
		b.WriteString(" \\\\\n")
	}
	b.WriteString("\\bottomrule\n\\end{tabular}\n\\end{table}\n")
	return b.String(), nil
}

func maxOf(xs []float64) float64 {
	m := 0.0
	for _, x := range xs {
		m = math.Max(m, x)
	}
	return m
}

// WriteTable writes the summary table as base.csv, base.md and base.tex (each atomically),
// rendering the Markdown and LaTeX from the CSV as read back, and returns the paths.
func WriteTable(t *report.Table, base, title, tag string) ([]string, error) {
	if err := t.Write(base + ".csv"); err != nil {
		return nil, err
	}
	paths := []string{base + ".csv"}
	back, err := report.Read(base + ".csv")
	if err != nil {
		return paths, err
	}
	md, err := Markdown(back, title)
	if err != nil {
		return paths, err
	}
	tex, err := LaTeX(back, title, tag)
	if err != nil {
		return paths, err
	}
	for _, f := range []struct{ ext, text string }{{".md", md}, {".tex", tex}} {
		if err := writeText(base+f.ext, f.text); err != nil {
			return paths, err
		}
		paths = append(paths, base+f.ext)
	}
	return paths, nil
}

func writeText(path, text string) error {
	return atomicfile.Write(path, func(w io.Writer) error {
		_, err := io.WriteString(w, text)
		return err
	})
}

// meanCurves are the curves of a long table (CurvesTable or StepCurvesTable) per method, in
// the table's order: x (the column named), mean accuracy and mean ± std.
type meanCurves struct {
	order []method.Method
	by    map[method.Method]*meanCurve
}

type meanCurve struct{ x, mean, lo, hi []float64 }

func readMeanCurves(t *report.Table, xCol string) (*meanCurves, error) {
	mc, err := t.Column("method")
	if err != nil {
		return nil, err
	}
	cols := map[string][]float64{}
	for _, name := range []string{xCol, "acc_mean_pct", "acc_std_pct"} {
		if cols[name], err = t.Floats(name); err != nil {
			return nil, err
		}
	}
	out := &meanCurves{by: map[method.Method]*meanCurve{}}
	for i, r := range t.Rows {
		m := method.Method(r[mc])
		c := out.by[m]
		if c == nil {
			c = &meanCurve{}
			out.by[m] = c
			out.order = append(out.order, m)
		}
		mean, std := cols["acc_mean_pct"][i], cols["acc_std_pct"][i]
		c.x = append(c.x, cols[xCol][i])
		c.mean, c.lo, c.hi = append(c.mean, mean), append(c.lo, mean-std), append(c.hi, mean+std)
	}
	if len(out.order) == 0 {
		return nil, fmt.Errorf("headopt: the curves table has no rows")
	}
	return out, nil
}

// panel draws the mean curves with their ± 1 std bands, and the thresholds (percent) as
// reference lines.
func (mc *meanCurves) panel(title, xLabel string, thresholds []float64) (*plot.Plot, error) {
	p := plot.New(title, xLabel, "test accuracy (%)")
	p.Legend.Top, p.Legend.Left = false, false
	for _, m := range mc.order {
		st, ok := plot.MethodStyle(m)
		if !ok {
			return nil, fmt.Errorf("headopt: no plot style for method %q", m)
		}
		c := mc.by[m]
		if err := plot.AddBand(p, "", st.Color, c.x, c.lo, c.hi); err != nil {
			return nil, err
		}
		st.Glyph = nil // the curves are dense: a line per method, no markers
		if err := plot.AddSeries(p, m.Label(), st, c.x, c.mean); err != nil {
			return nil, err
		}
	}
	for _, thr := range thresholds {
		plot.AddHLine(p, thr)
	}
	return p, nil
}

// yFloor is the lower accuracy limit of Figure 2: the lowest mean accuracy any method has a
// tenth of the way through its run, so the figure zooms on the race as the paper's does, less 5 %
// of the range above it, so that no curve runs along the axis.
func (mc *meanCurves) yFloor() float64 {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, c := range mc.by {
		lo = math.Min(lo, c.mean[len(c.mean)/10])
		hi = math.Max(hi, slices.Max(c.mean))
	}
	return math.Max(0, lo-0.05*(hi-lo))
}

// Figure draws Figure 2 from the wall-time curves (CurvesTable) and the step curves
// (StepCurvesTable), both read back from their CSV files, and writes it as base.{svg,png,pdf}:
// (a) mean test accuracy against optimisation time, each method's whole run, with ± 1 std
// bands and the shared horizon of Table 1 as a vertical line; (b) the same runs against steps.
// Both panels draw the thresholds (percent) and share the accuracy axis; each panel's legend
// takes the corner its mean curves and band edges cross least (plot.ClearLegend).
func Figure(curves, steps *report.Table, thresholds []float64, base, title string) ([]string, error) {
	h, ok := curves.Lookup("horizon_s")
	if !ok {
		return nil, fmt.Errorf("headopt: the curves table has no horizon_s comment")
	}
	horizon, err := strconv.ParseFloat(h, 64)
	if err != nil {
		return nil, fmt.Errorf("headopt: curves horizon %q: %w", h, err)
	}
	byTime, err := readMeanCurves(curves, "time_s")
	if err != nil {
		return nil, err
	}
	byStep, err := readMeanCurves(steps, "step")
	if err != nil {
		return nil, err
	}
	seeds, err := curves.Floats("seeds")
	if err != nil {
		return nil, err
	}
	a, err := byTime.panel(fmt.Sprintf("(a) %s, %g seeds", title, maxOf(seeds)), "optimisation wall time (s)", thresholds)
	if err != nil {
		return nil, err
	}
	plot.AddVLine(a, horizon)
	b, err := byStep.panel("(b) the same runs by step", "optimisation step", thresholds)
	if err != nil {
		return nil, err
	}
	lo := math.Min(byTime.yFloor(), byStep.yFloor())
	a.Y.Min, b.Y.Min = lo, lo
	a.Y.Max = math.Max(a.Y.Max, b.Y.Max)
	b.Y.Max = a.Y.Max
	width, height := 1.5*plot.PanelWidth, 1.2*plot.PanelHeight
	plot.ClearLegend(a, width, height, byTime.lines()...)
	plot.ClearLegend(b, width, height, byStep.lines()...)
	return plot.SaveRow([]*plot.Plot{a, b}, width, height, base)
}

// lines returns the mean curves and the edges of their ± 1 std bands as points, in the methods'
// order.
func (mc *meanCurves) lines() []plotter.XYs {
	var out []plotter.XYs
	for _, m := range mc.order {
		c := mc.by[m]
		for _, ys := range [][]float64{c.mean, c.lo, c.hi} {
			xys := make(plotter.XYs, len(c.x))
			for i := range c.x {
				xys[i] = plotter.XY{X: c.x[i], Y: ys[i]}
			}
			out = append(out, xys)
		}
	}
	return out
}

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
	get := func(key string) string {
		if v, ok := t.Lookup(key); ok {
			return mdtext.Escape(v)
		}
		return "(not recorded)"
	}
	seeds, _ := t.Floats("seeds")
	var b strings.Builder
	fmt.Fprintf(&b, "**Figure 2: frozen-feature head optimisation on %s** (regenerated by `fgn headopt`).\n\n", title)
	fmt.Fprintf(&b, "(a) Mean test accuracy over %g seeds (± 1 std shaded) against synchronised optimisation time, each "+
		"method to the end of its shortest run; the vertical line is the shared horizon of Table 1 (%.3g s, the end of the "+
		"shortest run of any method)", maxOf(seeds), horizon)
	if len(thresholds) > 0 {
		fmt.Fprintf(&b, ", the horizontal lines the thresholds (%s %%)", strings.Trim(fmt.Sprint(thresholds), "[]"))
	}
	b.WriteString(". (b) The same runs against optimisation steps.\n")
	fmt.Fprintf(&b, "Measured on %s, backend %s (%s), %s, profile %s; the host's load before and after each run is in its trace.\n\n",
		get("device"), get("backend"), get("build"), get("date"), get("profile"))

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
	fmt.Fprintf(&b, "By step (the same on any machine): %s the mean test accuracy is %s.", end, strings.Join(parts, ", "))
	for k, thr := range thresholds {
		b.WriteString(" " + firstTo(rows, thr, func(r summaryRow) float64 { return r.steps[k] }, "at step %.0f", "by the last step"))
	}
	parts = parts[:0]
	for _, r := range byTime {
		parts = append(parts, fmt.Sprintf("%s %.2f %%", r.label, r.acc))
	}
	fmt.Fprintf(&b, "\n\nBy wall time (this machine): at the %.3g s horizon the mean test accuracy is %s.", horizon, strings.Join(parts, ", "))
	parts = parts[:0]
	for _, r := range rows {
		parts = append(parts, fmt.Sprintf("%s %.3g ms", r.label, r.stepMs[1]))
	}
	fmt.Fprintf(&b, " Median step times: %s.", strings.Join(parts, ", "))
	for k, thr := range thresholds {
		b.WriteString(" " + firstTo(rows, thr, func(r summaryRow) float64 { return r.times[k] }, "after %.3g s", "within the horizon"))
	}
	if s, w := byStep[0], byTime[0]; s.method != w.method {
		fmt.Fprintf(&b, " %s leads %s but %s leads at the horizon: on this machine a step of %s takes %.2g× as long as one of %s (medians).",
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

// WriteAll aggregates the runs and writes, for data d, the given thresholds (percent) and
// provenance: the wall-time curves (FullCurves on gridPoints times per method), the step
// curves, the per-run results (SeedsTable), Table 1 (SummaryTable at the shared horizon, on
// gridPoints times), Figure 2 and its caption (Files). The figure, tables and caption are
// drawn from the CSV files as read back. It returns the paths written.
func WriteAll(runs []Run, methods []method.Method, d *Data, files Files, thresholds []float64, gridPoints int,
	provenance func(*report.Table)) ([]string, error) {
	shared, horizon, err := Aggregate(runs, methods, gridPoints)
	if err != nil {
		return nil, err
	}
	full, err := FullCurves(runs, methods, gridPoints)
	if err != nil {
		return nil, err
	}
	steps, err := StepCurves(runs, methods)
	if err != nil {
		return nil, err
	}
	summary, err := SummaryTable(shared, steps, horizon, thresholds)
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, f := range []struct {
		t    *report.Table
		path string
	}{
		{CurvesTable(full, horizon, d.Title()), files.Curves},
		{StepCurvesTable(steps, d.Title()), files.Steps},
		{SeedsTable(runs, thresholds, d.Title()), files.Seeds},
	} {
		f.t.Comment("source", d.Source)
		provenance(f.t)
		if err := f.t.Write(f.path); err != nil {
			return paths, err
		}
		paths = append(paths, f.path)
	}
	curvesBack, err := report.Read(files.Curves)
	if err != nil {
		return paths, err
	}
	stepsBack, err := report.Read(files.Steps)
	if err != nil {
		return paths, err
	}
	figs, err := Figure(curvesBack, stepsBack, thresholds, files.Figure, d.Title())
	paths = append(paths, figs...)
	if err != nil {
		return paths, err
	}
	summary.Comment("data", d.Title())
	summary.Comment("source", d.Source)
	provenance(summary)
	tabs, err := WriteTable(summary, files.Table, d.Title(), d.Tag())
	paths = append(paths, tabs...)
	if err != nil {
		return paths, err
	}
	back, err := report.Read(files.Table + ".csv")
	if err != nil {
		return paths, err
	}
	text, err := Caption(back, d.Title())
	if err != nil {
		return paths, err
	}
	if err := writeText(files.Caption, text); err != nil {
		return paths, err
	}
	return append(paths, files.Caption), nil
}
