package headopt

import (
	"fmt"

	"github.com/fgn-paper/fgn/experiments/method"
	"github.com/fgn-paper/fgn/experiments/report"
)

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
	summary.Comment("data", d.Title())
	summary.Comment("source", d.Source)
	provenance(summary)
	if err := summary.Write(files.Table + ".csv"); err != nil {
		return paths, err
	}
	paths = append(paths, files.Table+".csv")
	drawn, err := Redraw(files, d.Title(), d.Tag())
	return append(paths, drawn...), err
}

// Redraw draws Figure 2, Table 1's Markdown and LaTeX and the caption from the CSV files a sweep
// wrote in files (the curves, the step curves and Table 1, with the thresholds Table 1 records),
// for data titled title and tagged tag, and returns the paths written. WriteAll calls it once
// the CSV files are written; redrawn from the same files, the outputs have the same bytes.
func Redraw(files Files, title, tag string) ([]string, error) {
	var tabs [3]*report.Table
	for i, path := range []string{files.Curves, files.Steps, files.Table + ".csv"} {
		t, err := report.Read(path)
		if err != nil {
			return nil, fmt.Errorf("headopt: a finished sweep's CSV file: %w (fgn headopt writes it)", err)
		}
		tabs[i] = t
	}
	curves, steps, table := tabs[0], tabs[1], tabs[2]
	_, _, thresholds, err := parseSummary(table)
	if err != nil {
		return nil, err
	}
	paths, err := Figure(curves, steps, thresholds, files.Figure, title)
	if err != nil {
		return paths, err
	}
	md, err := Markdown(table, title)
	if err != nil {
		return paths, err
	}
	tex, err := LaTeX(table, title, tag)
	if err != nil {
		return paths, err
	}
	for _, f := range []struct{ ext, text string }{{".md", md}, {".tex", tex}} {
		if err := writeText(files.Table+f.ext, f.text); err != nil {
			return paths, err
		}
		paths = append(paths, files.Table+f.ext)
	}
	text, err := Caption(table, title)
	return writeCaption(paths, files.Caption, text, err)
}

// writeCaption writes a caption (text, or the error of making it) to path and returns paths
// with it.
func writeCaption(paths []string, path, text string, err error) ([]string, error) {
	if err != nil {
		return paths, err
	}
	if err := writeText(path, text); err != nil {
		return paths, err
	}
	return append(paths, path), nil
}
