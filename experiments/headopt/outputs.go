package headopt

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/fgn-paper/fgn/experiments/plot"
	"github.com/fgn-paper/fgn/experiments/report"
	"github.com/fgn-paper/fgn/experiments/train"
	"github.com/fgn-paper/fgn/internal/atomicfile"
)

// Files are the output file names for data tagged tag (Data.Tag).
type Files struct{ Figure, Curves, Table, TracesDir string }

// FilesFor returns the output paths in dir: dir/figure2_<tag>.{svg,png,pdf} (Figure base),
// dir/figure2_<tag>_curves.csv, dir/table1_<tag>.{csv,md,tex} (Table base) and the traces
// directory dir/traces_<tag>.
func FilesFor(dir, tag string) Files {
	return Files{
		Figure:    filepath.Join(dir, "figure2_"+tag),
		Curves:    filepath.Join(dir, "figure2_"+tag+"_curves.csv"),
		Table:     filepath.Join(dir, "table1_"+tag),
		TracesDir: filepath.Join(dir, "traces_"+tag),
	}
}

// CurvesTable returns the aggregate curves as a long table (method, time_s, accuracy in
// percent and cross-entropy, mean and std over seeds).
func CurvesTable(curves []Curve, horizon float64, title string) *report.Table {
	t := report.NewTable("method", "seeds", "time_s", "acc_mean_pct", "acc_std_pct", "ce_mean", "ce_std")
	t.Comment("data", title)
	t.Comment("horizon_s", report.Format(horizon))
	t.Comment("aggregation", "traces interpolated linearly onto a shared wall-time grid over [0, horizon]; mean and population std over seeds")
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

// SummaryTable returns Table 1: per method, the mean ± std test accuracy (percent) and
// cross-entropy at the shared horizon (the curves' last grid time), the mean time per step,
// and the time each threshold (percent) is first reached by the mean accuracy curve (NaN: not
// reached within the horizon).
func SummaryTable(curves []Curve, horizon float64, thresholds []float64) *report.Table {
	cols := []string{"method", "label", "seeds", "acc_mean_pct", "acc_std_pct", "ce_mean", "ce_std", "ms_per_step"}
	for _, thr := range thresholds {
		cols = append(cols, thresholdColumn(thr))
	}
	t := report.NewTable(cols...)
	t.Comment("horizon_s", report.Format(horizon))
	t.Comment("thresholds_pct", strings.Trim(fmt.Sprint(thresholds), "[]"))
	t.Comment("not_reached", "NaN: the mean accuracy curve stays below the threshold up to the horizon")
	for _, c := range curves {
		label := c.Method.Label()
		last := len(c.Time) - 1
		row := []any{string(c.Method), label, c.Seeds, 100 * c.AccMean[last], 100 * c.AccStd[last],
			c.CEMean[last], c.CEStd[last], c.MsPerStep}
		for _, thr := range thresholds {
			row = append(row, TimeToThreshold(c.Time, c.AccMean, thr/100))
		}
		t.Add(row...)
	}
	return t
}

// summaryRow is one parsed row of the summary table.
type summaryRow struct {
	label                          string
	acc, accStd, ce, ceStd, msStep float64
	times                          []float64
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
	lc, err := t.Column("label")
	if err != nil {
		return nil, 0, nil, err
	}
	names := []string{"acc_mean_pct", "acc_std_pct", "ce_mean", "ce_std", "ms_per_step"}
	for _, thr := range thresholds {
		names = append(names, thresholdColumn(thr))
	}
	cols := make([][]float64, len(names))
	for k, name := range names {
		if cols[k], err = t.Floats(name); err != nil {
			return nil, 0, nil, err
		}
	}
	for i, r := range t.Rows {
		row := summaryRow{label: r[lc], acc: cols[0][i], accStd: cols[1][i], ce: cols[2][i], ceStd: cols[3][i], msStep: cols[4][i]}
		for k := range thresholds {
			row.times = append(row.times, cols[5+k][i])
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

// Markdown renders the summary table (SummaryTable, or read back from its CSV) as Markdown,
// "–" marking thresholds not reached.
func Markdown(t *report.Table, title string) (string, error) {
	rows, horizon, thresholds, err := parseSummary(t)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	seeds, _ := t.Floats("seeds")
	fmt.Fprintf(&b, "**Table 1 (%s).** %s \"–\" means the threshold was not reached within the shared horizon.\n\n",
		title, caption(title, horizon, int(maxOf(seeds))))
	fmt.Fprintf(&b, "| Method | Acc. at %.3g s | CE at %.3g s | ms/step |", horizon, horizon)
	for _, thr := range thresholds {
		fmt.Fprintf(&b, " Time to %g%% |", thr)
	}
	b.WriteString("\n|---|---|---|---|" + strings.Repeat("---|", len(thresholds)) + "\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %.2f ± %.2f | %.4f ± %.4f | %.2f |", r.label, r.acc, r.accStd, r.ce, r.ceStd, r.msStep)
		for _, v := range r.times {
			fmt.Fprintf(&b, " %s |", fmtTime(v, "–"))
		}
		b.WriteString("\n")
	}
	return b.String(), nil
}

// LaTeX renders the summary table as a booktabs table laid out like the paper's Table 1.
func LaTeX(t *report.Table, title string) (string, error) {
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
	label := "tab:headopt_cars196"
	if strings.Contains(title, "synthetic") {
		label = "tab:headopt_synthetic_standin"
	}
	fmt.Fprintf(&b, "\\label{%s}\n\\begin{tabular}{l%s}\n\\toprule\nMethod\n", label, strings.Repeat("c", 2+len(thresholds)))
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
func WriteTable(t *report.Table, base, title string) ([]string, error) {
	if err := t.Write(base + ".csv"); err != nil {
		return nil, err
	}
	paths := []string{base + ".csv"}
	back, err := report.Read(base + ".csv")
	if err != nil {
		return paths, err
	}
	for _, f := range []struct {
		ext    string
		render func(*report.Table, string) (string, error)
	}{{".md", Markdown}, {".tex", LaTeX}} {
		s, err := f.render(back, title)
		if err != nil {
			return paths, err
		}
		if err := atomicfile.Write(base+f.ext, func(w io.Writer) error {
			_, err := io.WriteString(w, s)
			return err
		}); err != nil {
			return paths, err
		}
		paths = append(paths, base+f.ext)
	}
	return paths, nil
}

// Figure draws Figure 2 from the curves table (CurvesTable, read back from its CSV): mean
// test accuracy against optimisation time per method with ± 1 std bands, written as
// base.{svg,png,pdf}.
func Figure(curves *report.Table, base, title string) ([]string, error) {
	mc, err := curves.Column("method")
	if err != nil {
		return nil, err
	}
	cols := map[string][]float64{}
	for _, name := range []string{"seeds", "time_s", "acc_mean_pct", "acc_std_pct"} {
		if cols[name], err = curves.Floats(name); err != nil {
			return nil, err
		}
	}
	type series struct{ x, mean, lo, hi []float64 }
	var order []train.Method
	byMethod := map[train.Method]*series{}
	for i, r := range curves.Rows {
		m := train.Method(r[mc])
		s := byMethod[m]
		if s == nil {
			s = &series{}
			byMethod[m] = s
			order = append(order, m)
		}
		mean, std := cols["acc_mean_pct"][i], cols["acc_std_pct"][i]
		s.x = append(s.x, cols["time_s"][i])
		s.mean, s.lo, s.hi = append(s.mean, mean), append(s.lo, mean-std), append(s.hi, mean+std)
	}
	if len(order) == 0 {
		return nil, fmt.Errorf("headopt: the curves table has no rows")
	}
	p := plot.New(fmt.Sprintf("Head optimisation: %s (%g seeds)", title, maxOf(cols["seeds"])),
		"optimisation wall time (s)", "test accuracy (%)")
	p.Legend.Top, p.Legend.Left = false, false
	lo := math.Inf(1)
	for _, m := range order {
		st, ok := plot.MethodStyle(m)
		if !ok {
			return nil, fmt.Errorf("headopt: no plot style for method %q", m)
		}
		s := byMethod[m]
		if err := plot.AddBand(p, "", st.Color, s.x, s.lo, s.hi); err != nil {
			return nil, err
		}
		st.Glyph = nil // the grid is dense: a line per method, no markers
		if err := plot.AddSeries(p, m.Label(), st, s.x, s.mean); err != nil {
			return nil, err
		}
		// Zoom on the late part of the race, as the paper's figure does: the lower limit is the
		// lowest mean accuracy any method has at a tenth of the horizon.
		lo = math.Min(lo, s.mean[len(s.mean)/10])
	}
	p.Y.Min = math.Max(0, lo)
	return plot.Save(p, 1.5*plot.PanelWidth, 1.2*plot.PanelHeight, base)
}

// WriteAll aggregates the runs onto a grid of gridPoints times over the shared horizon and
// writes the curves CSV, Figure 2 and Table 1 (Files) for data d, the given thresholds
// (percent) and provenance; the figure and tables are drawn from the CSV files as read back.
// It returns the paths written.
func WriteAll(runs []Run, methods []train.Method, d *Data, files Files, thresholds []float64, gridPoints int,
	provenance func(*report.Table)) ([]string, error) {
	curves, horizon, err := Aggregate(runs, methods, gridPoints)
	if err != nil {
		return nil, err
	}
	ct := CurvesTable(curves, horizon, d.Title())
	ct.Comment("source", d.Source)
	provenance(ct)
	if err := ct.Write(files.Curves); err != nil {
		return nil, err
	}
	paths := []string{files.Curves}
	back, err := report.Read(files.Curves)
	if err != nil {
		return paths, err
	}
	figs, err := Figure(back, files.Figure, d.Title())
	paths = append(paths, figs...)
	if err != nil {
		return paths, err
	}
	st := SummaryTable(curves, horizon, thresholds)
	st.Comment("data", d.Title())
	st.Comment("source", d.Source)
	if len(thresholds) > 0 {
		top := thresholds[len(thresholds)-1]
		var fgnT, sgnT float64 = math.NaN(), math.NaN()
		for _, c := range curves {
			switch c.Method {
			case train.FGN:
				fgnT = TimeToThreshold(c.Time, c.AccMean, top/100)
			case train.SGN:
				sgnT = TimeToThreshold(c.Time, c.AccMean, top/100)
			}
		}
		st.Comment(fmt.Sprintf("fgn_over_sgn_time_to_%gpct", top), report.Format(fgnT/sgnT))
	}
	provenance(st)
	tabs, err := WriteTable(st, files.Table, d.Title())
	return append(paths, tabs...), err
}
