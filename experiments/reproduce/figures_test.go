package reproduce

import (
	"bytes"
	"image/color"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/fgn-paper/fgn/experiments/headopt"
	"github.com/fgn-paper/fgn/experiments/mechanism"
	"github.com/fgn-paper/fgn/experiments/method"
	"github.com/fgn-paper/fgn/experiments/plot"
	"github.com/fgn-paper/fgn/experiments/plot/plottest"
	"github.com/fgn-paper/fgn/experiments/report"
	"gonum.org/v1/plot/vg"
)

// committedFigure is a committed figure of figures/ and how to redraw it from its CSV files.
type committedFigure struct {
	base   string // figures/<base>.{svg,png,pdf}
	labels []string
	bands  []color.Color // the colours of bands wide enough to be seen (plot.BandColor)
	// draw writes the figure to base from the committed CSV files in dir and returns its panels.
	draw func(t *testing.T, dir, base string) [][]*plot.Plot
	// panelWidth and panelHeight are each panel's size.
	panelWidth, panelHeight vg.Length
}

// TestCommittedFigures redraws every committed figure of figures/ from its committed CSV files
// and checks it as a reader would see it: the committed SVG, PNG and PDF are the redraw byte for
// byte (a redraw leaves the checkout as it was); the PDF, read by poppler, gives back every
// title, axis label and legend label with its Greek letters and symbols, embeds its fonts with a
// Unicode map, and shows its bands in their colour; no legend covers anything drawn.
func TestCommittedFigures(t *testing.T) {
	const dir = "../../figures"
	const standIn = "synthetic stand-in, NOT Cars196"
	colourOf := func(m method.Method) color.Color {
		s, _ := plot.MethodStyle(m)
		return s.Color
	}
	table := func(t *testing.T, name string) *report.Table {
		t.Helper()
		tab, err := report.Read(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return tab
	}
	var rules []string
	for _, r := range headopt.StoppingRules {
		rules = append(rules, headopt.RuleLabel(r))
	}
	figures := []committedFigure{
		{
			base: mechanism.FigureBase,
			labels: []string{"(a) step time", "(b) output-space trace", "(c) step agreement", "number of classes C",
				"time per step (ms)", "competitor dispersion ξ", "decrease ratio R", "full 2q + p†²ξ", "retained q(2−ξ)",
				"dropped p†ξ", "gap = dropped", "λ scale 0.01", method.FGN.Label(), method.FGNMatrixFree.Label()},
			bands: []color.Color{plot.BandColor(plot.Series(3).Color)},
			draw: func(t *testing.T, dir, base string) [][]*plot.Plot {
				ts, err := mechanism.ReadTables(dir)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := mechanism.Figure(ts, filepath.Dir(base)); err != nil {
					t.Fatal(err)
				}
				var panels []*plot.Plot
				for _, p := range []struct {
					t    *report.Table
					draw func(*report.Table) (*plot.Plot, error)
				}{{ts.StepTime, mechanism.PanelStepTime}, {ts.Trace, mechanism.PanelTrace}, {ts.Agreement, mechanism.PanelAgreement}} {
					panel, err := p.draw(p.t)
					if err != nil {
						t.Fatal(err)
					}
					panels = append(panels, panel)
				}
				return [][]*plot.Plot{panels}
			},
			panelWidth: plot.PanelWidth, panelHeight: plot.PanelHeight,
		},
		{
			base: "figure2_synthetic_standin",
			labels: []string{"(a) " + standIn, "(b) the same runs by step", "optimisation wall time (s)", "optimisation step",
				"test accuracy (%)", method.Adam.Label(), method.SGN.Label(), method.FGN.Label()},
			bands: []color.Color{plot.BandColor(colourOf(method.Adam))},
			draw: func(t *testing.T, dir, base string) [][]*plot.Plot {
				curves, steps := table(t, "figure2_synthetic_standin_curves.csv"), table(t, "figure2_synthetic_standin_steps.csv")
				recorded, _ := table(t, "table1_synthetic_standin.csv").Lookup("thresholds_pct")
				var thresholds []float64
				for _, f := range strings.Fields(recorded) {
					v, err := strconv.ParseFloat(f, 64)
					if err != nil {
						t.Fatal(err)
					}
					thresholds = append(thresholds, v)
				}
				if _, err := headopt.Figure(curves, steps, thresholds, base, standIn); err != nil {
					t.Fatal(err)
				}
				panels, err := headopt.Figure2Panels(curves, steps, thresholds, standIn)
				if err != nil {
					t.Fatal(err)
				}
				return [][]*plot.Plot{panels}
			},
			panelWidth: headopt.Figure2Width, panelHeight: headopt.Figure2Height,
		},
		{
			base: "ablation_cg_stopping_synthetic_standin",
			labels: append([]string{"(a) " + standIn, "CG cap 5", "mean CG iterations per step", "optimisation step",
				"test accuracy (%)"}, rules...),
			draw: func(t *testing.T, dir, base string) [][]*plot.Plot {
				steps := table(t, "ablation_cg_stopping_synthetic_standin_steps.csv")
				if _, err := headopt.AblationFigure(steps, base, standIn); err != nil {
					t.Fatal(err)
				}
				rows, err := headopt.AblationPanels(steps, standIn)
				if err != nil {
					t.Fatal(err)
				}
				return rows
			},
			panelWidth: headopt.Figure2Width, panelHeight: headopt.Figure2Height,
		},
	}
	for _, f := range figures {
		t.Run(f.base, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), f.base)
			rows := f.draw(t, dir, out)
			for _, ext := range plot.Formats {
				got, err := os.ReadFile(out + "." + ext)
				if err != nil {
					t.Fatal(err)
				}
				want, err := os.ReadFile(filepath.Join(dir, f.base+"."+ext))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("figures/%s.%s differs from its redraw from the committed CSV files", f.base, ext)
				}
			}
			plottest.CheckPDF(t, out+".pdf", f.labels, f.bands)
			if err := plot.CheckLegends(rows, f.panelWidth, f.panelHeight); err != nil {
				t.Error(err)
			}
		})
	}
}
