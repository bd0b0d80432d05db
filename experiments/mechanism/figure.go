package mechanism

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"path/filepath"

	"github.com/fgn-paper/fgn/experiments/method"
	"github.com/fgn-paper/fgn/experiments/plot"
	"github.com/fgn-paper/fgn/experiments/report"
	"github.com/fgn-paper/fgn/internal/atomicfile"
)

// File names of the figure and its data, inside the output directory.
const (
	StepTimeFile    = "figure1a_step_time.csv"
	StepSamplesFile = "figure1a_step_samples.csv" // every timed step of panel (a)
	TraceFile       = "figure1b_trace.csv"
	AgreementFile   = "figure1c_agreement.csv"
	FigureBase      = "figure1_mechanism" // + .svg, .png, .pdf
	CaptionFile     = "figure1_mechanism.caption.md"
)

// Tables are the data of the three panels; a panel whose CSV file is absent has a nil table.
type Tables struct{ StepTime, Trace, Agreement *report.Table }

// panelFiles are the panels' letters and CSV files, in order.
var panelFiles = []struct{ panel, file string }{{"a", StepTimeFile}, {"b", TraceFile}, {"c", AgreementFile}}

// ReadTables reads the panels' CSV files from dir. A panel whose file does not exist is left out
// (a nil table; Missing names it); no file at all, or one that cannot be read, is an error.
func ReadTables(dir string) (*Tables, error) {
	ts := &Tables{}
	for i, dst := range ts.tables() {
		t, err := report.Read(filepath.Join(dir, panelFiles[i].file))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("mechanism: panel (%s) data: %w", panelFiles[i].panel, err)
		}
		*dst = t
	}
	if len(ts.Missing()) == len(panelFiles) {
		return nil, fmt.Errorf("mechanism: no panel data in %s (%s, %s, %s): compute the panels with --panels a,b,c",
			dir, StepTimeFile, TraceFile, AgreementFile)
	}
	return ts, nil
}

// tables returns the addresses of the panels' tables, in panel order.
func (ts *Tables) tables() []**report.Table {
	return []**report.Table{&ts.StepTime, &ts.Trace, &ts.Agreement}
}

// Missing returns the letters of the panels without a table.
func (ts *Tables) Missing() []string {
	var out []string
	for i, t := range ts.tables() {
		if *t == nil {
			out = append(out, panelFiles[i].panel)
		}
	}
	return out
}

// Figure draws the panels whose tables it has (the triptych when it has all three) and writes
// them as dir/FigureBase.{svg,png,pdf}, with the caption in dir/CaptionFile. It returns the
// paths written.
func Figure(ts *Tables, dir string) ([]string, error) {
	var panels []*plot.Plot
	for _, p := range []struct {
		t    *report.Table
		draw func(*report.Table) (*plot.Plot, error)
	}{{ts.StepTime, PanelStepTime}, {ts.Trace, PanelTrace}, {ts.Agreement, PanelAgreement}} {
		if p.t == nil {
			continue
		}
		panel, err := p.draw(p.t)
		if err != nil {
			return nil, err
		}
		panels = append(panels, panel)
	}
	paths, err := plot.SaveRow(panels, plot.PanelWidth, plot.PanelHeight, filepath.Join(dir, FigureBase))
	if err != nil {
		return paths, err
	}
	caption, err := Caption(ts)
	if err != nil {
		return paths, err
	}
	path := filepath.Join(dir, CaptionFile)
	if err := atomicfile.Write(path, func(w io.Writer) error {
		_, err := io.WriteString(w, caption)
		return err
	}); err != nil {
		return paths, err
	}
	return append(paths, path), nil
}

// stepTimeSeries holds one method's curve of panel (a).
type stepTimeSeries struct{ classes, median, q1, q3 []float64 }

func stepTimeByMethod(t *report.Table) (map[method.Method]*stepTimeSeries, error) {
	mc, err := t.Column("method")
	if err != nil {
		return nil, err
	}
	cols := map[string][]float64{}
	for _, name := range []string{"classes", "median_ms", "q1_ms", "q3_ms"} {
		if cols[name], err = t.Floats(name); err != nil {
			return nil, err
		}
	}
	out := map[method.Method]*stepTimeSeries{}
	for i, row := range t.Rows {
		m := method.Method(row[mc])
		if _, ok := plot.MethodStyle(m); !ok {
			return nil, fmt.Errorf("mechanism: step-time row %d: unknown method %q", i, row[mc])
		}
		s := out[m]
		if s == nil {
			s = &stepTimeSeries{}
			out[m] = s
		}
		s.classes = append(s.classes, cols["classes"][i])
		s.median = append(s.median, cols["median_ms"][i])
		s.q1 = append(s.q1, cols["q1_ms"][i])
		s.q3 = append(s.q3, cols["q3_ms"][i])
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("mechanism: the step-time table has no rows")
	}
	return out, nil
}

// PanelStepTime draws panel (a): median step time against C on log-log axes, one curve per
// method, the interquartile range shaded.
func PanelStepTime(t *report.Table) (*plot.Plot, error) {
	series, err := stepTimeByMethod(t)
	if err != nil {
		return nil, err
	}
	p := plot.New("(a) step time", "number of classes C", "time per step (ms)")
	plot.LogLog2(p)
	p.Legend.Top, p.Legend.Left = false, false
	for _, m := range method.Methods {
		s := series[m]
		if s == nil {
			continue
		}
		style, _ := plot.MethodStyle(m)
		if err := plot.AddBand(p, "", style.Color, s.classes, s.q1, s.q3); err != nil {
			return nil, err
		}
		if err := plot.AddMethod(p, m, s.classes, s.median); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// PanelTrace draws panel (b): retained, dropped and full output-space traces against ξ, the gap
// between retained and full (= dropped) shaded.
func PanelTrace(t *report.Table) (*plot.Plot, error) {
	cols := map[string][]float64{}
	for _, name := range []string{"xi_target", "tr_retained", "tr_dropped", "tr_full"} {
		v, err := t.Floats(name)
		if err != nil {
			return nil, err
		}
		cols[name] = v
	}
	xi := cols["xi_target"]
	p := plot.New("(b) output-space trace", "competitor dispersion ξ", "trace")
	p.Legend.Top, p.Legend.Left = true, true
	gap := plot.Series(3).Color
	if err := plot.AddBand(p, "gap = dropped", gap, xi, cols["tr_retained"], cols["tr_full"]); err != nil {
		return nil, err
	}
	sgnStyle, _ := plot.MethodStyle(method.SGN)
	fgnStyle, _ := plot.MethodStyle(method.FGN)
	full := plot.Style{Color: sgnStyle.Color}
	retained := plot.Style{Color: fgnStyle.Color, Dashes: plot.Series(1).Dashes}
	for _, s := range []struct {
		label string
		style plot.Style
		ys    []float64
	}{
		// q = p★p† (eq. 2.5): the embedded fonts have no ★.
		{"full 2q + p†²ξ", full, cols["tr_full"]},
		{"retained q(2−ξ)", retained, cols["tr_retained"]},
		{"dropped p†ξ", plot.Series(3), cols["tr_dropped"]},
	} {
		if err := plot.AddSeries(p, s.label, s.style, xi, s.ys); err != nil {
			return nil, err
		}
	}
	p.Y.Min = 0
	return p, nil
}

// PanelAgreement draws panel (c): R(ξ) for each damping scale.
func PanelAgreement(t *report.Table) (*plot.Plot, error) {
	cols := map[string][]float64{}
	for _, name := range []string{"xi", "scale", "ratio"} {
		v, err := t.Floats(name)
		if err != nil {
			return nil, err
		}
		cols[name] = v
	}
	var scales []float64
	xs, ys := map[float64][]float64{}, map[float64][]float64{}
	for i, s := range cols["scale"] {
		if _, ok := xs[s]; !ok {
			scales = append(scales, s)
		}
		xs[s] = append(xs[s], cols["xi"][i])
		ys[s] = append(ys[s], cols["ratio"][i])
	}
	if len(scales) == 0 {
		return nil, fmt.Errorf("mechanism: the agreement table has no rows")
	}
	p := plot.New("(c) step agreement", "competitor dispersion ξ", "decrease ratio R")
	p.Legend.Top, p.Legend.Left = false, true
	lo := 1.0
	for i, s := range scales {
		if err := plot.AddSeries(p, fmt.Sprintf("λ scale %g", s), plot.Series(i), xs[s], ys[s]); err != nil {
			return nil, err
		}
		for _, r := range ys[s] {
			lo = math.Min(lo, r)
		}
	}
	p.Y.Max = 1.02
	p.Y.Min = math.Min(lo-0.02*(1.02-lo), 0.98)
	return p, nil
}

// Caption returns the figure's caption (Markdown), built from the tables' provenance and data,
// with a line for each panel left out.
func Caption(ts *Tables) (string, error) {
	get, code := report.Recorded, report.RecordedCode
	b := report.NewCaption("Figure 1: mechanism checks for FGN", "fgn figure mechanism")
	for _, p := range ts.Missing() {
		fmt.Fprintf(b, "Panel (%s) is left out: its data were not computed (`fgn figure mechanism --panels %s` computes them).\n\n", p, p)
	}
	if ts.StepTime != nil {
		if err := stepTimeCaption(b, ts.StepTime); err != nil {
			return "", err
		}
	}
	if ts.Trace != nil {
		fmt.Fprintf(b, "\n(b) Output-space traces of Theorem 3.1 for one example, from the library's dense matrices "+
			"(paper.NewDense: Kept, DroppedOut, Cov), against the competitor dispersion ξ; the shaded gap between full and "+
			"retained is the dropped trace p†ξ; q = p★p† is the curvature weight of eq. (2.5). %s.\n", code(ts.Trace, "parameters"))
	}
	if ts.Agreement != nil {
		fmt.Fprintf(b, "\n(c) Fraction R of the full-GGN damped quadratic decrease retained by the damped FGN step in the "+
			"two-dimensional linear-logit construction of appendix G.1, against ξ, for three damping scales. %s; t\\_j %s; %s.\n",
			code(ts.Agreement, "parameters"), get(ts.Agreement, "t_j"), code(ts.Agreement, "damping"))
	}
	return b.String(), nil
}

// stepTimeCaption writes panel (a)'s paragraph of the caption.
func stepTimeCaption(b io.Writer, t *report.Table) error {
	series, err := stepTimeByMethod(t)
	if err != nil {
		return err
	}
	get, code := report.Recorded, report.RecordedCode
	fmt.Fprintf(b, "(a) Steady-state time of one optimiser step (logits, direction and parameter update in one compiled graph) "+
		"of a linear softmax head on fixed Gaussian features, against the number of classes C; median over the timed steps, "+
		"interquartile range shaded; the step is the training loop's, with hᵀ (and the feature Gram h hᵀ + 1 for FGN (closed-form Gram)) "+
		"laid out once per static batch, untimed. Adam (GoMLX's defaults, updating in place) is on the head's closed-form gradient; SGN is parameter-space CG on "+
		"the full softmax GGN; FGN (closed-form Gram) is row-space CG (eq. 4.6) on the closed-form affine-head row Gram of appendix F.2; "+
		"FGN (matrix-free) is the same row-space CG applying the row operator by one JVP and one VJP of the head per iteration (eq. 4.8), "+
		"the products SGN uses. λ = 1, CG budget 5. %s. %s. Profile %s.\n",
		code(t, "parameters"), get(t, "steps"), get(t, "profile"))
	fmt.Fprintf(b, "Measured on %s; host %s.\n", report.MeasuredOn(t), get(t, "host load"))
	if sgn := series[method.SGN]; sgn != nil {
		last := len(sgn.classes) - 1
		for _, m := range []method.Method{method.FGN, method.FGNMatrixFree} {
			if s := series[m]; s != nil && len(s.classes) == len(sgn.classes) && s.classes[last] == sgn.classes[last] {
				fmt.Fprintf(b, "At C = %g, %s/SGN median step-time ratio: %.3g.\n", sgn.classes[last], m.Label(), s.median[last]/sgn.median[last])
			}
		}
	}
	return nil
}
