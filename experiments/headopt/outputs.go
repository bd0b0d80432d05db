package headopt

import (
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
