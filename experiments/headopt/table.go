package headopt

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/fgn-paper/fgn/experiments/report"
	"github.com/fgn-paper/fgn/internal/atomicfile"
)

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
		"backend, build and CPU vector width gives the same numbers.\n\n| Method | Steps | Acc. at the end | CE at the end |")
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

func writeText(path, text string) error {
	return atomicfile.Write(path, func(w io.Writer) error {
		_, err := io.WriteString(w, text)
		return err
	})
}
