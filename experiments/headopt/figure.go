package headopt

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/fgn-paper/fgn/experiments/method"
	"github.com/fgn-paper/fgn/experiments/plot"
	"github.com/fgn-paper/fgn/experiments/report"
)

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

// Figure draws Figure 2 (Figure2Panels) and writes it as base.{svg,png,pdf}.
func Figure(curves, steps *report.Table, thresholds []float64, base, title string) ([]string, error) {
	panels, err := Figure2Panels(curves, steps, thresholds, title)
	if err != nil {
		return nil, err
	}
	return plot.SaveRow(panels, Figure2Width, Figure2Height, base)
}

// Figure2Panels returns the panels of Figure 2 from the wall-time curves (CurvesTable) and the
// step curves (StepCurvesTable), both read back from their CSV files: (a) mean test accuracy
// against optimisation time, each method up to the end of the shortest of its seeds' runs, with
// ± 1 std bands and the shared horizon of Table 1 as a vertical line; (b) the same runs against
// steps. Both panels draw the thresholds (percent) and share the accuracy axis; each panel's
// legend goes where nothing else is drawn, the bottom right corner first (plot.SaveRow).
func Figure2Panels(curves, steps *report.Table, thresholds []float64, title string) ([]*plot.Plot, error) {
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
	return []*plot.Plot{a, b}, nil
}

// Figure2Width and Figure2Height are the size of each panel of Figure 2 and of the ablation's
// figure.
var Figure2Width, Figure2Height = 1.5 * plot.PanelWidth, 1.2 * plot.PanelHeight
