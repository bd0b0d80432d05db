package nb

import (
	"bytes"
	"fmt"
	"math"

	"github.com/janpfeifer/gonb/gonbui"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	fplot "github.com/fgn-paper/fgn/experiments/plot"
)

// dpi of the PNG figures: sharp on high-density screens, small enough for a notebook file.
const dpi = 110

// Show displays a PNG inline in the notebook (a no-op outside GoNB) and waits until GoNB has
// received it, so that a cell ending right after Show still shows its figure.
func Show(png []byte) {
	gonbui.DisplayPng(png)
	gonbui.Sync()
}

// ShowMarkdown displays Markdown (with $…$ mathematics) inline in the notebook (a no-op outside
// GoNB) and waits until GoNB has received it.
func ShowMarkdown(markdown string) {
	gonbui.DisplayMarkdown(markdown)
	gonbui.Sync()
}

// matrixGrid presents a matrix to plotter.HeatMap with row 0 at the top.
type matrixGrid struct{ m mat.Matrix }

func (g matrixGrid) Dims() (c, r int)   { r, c = g.m.Dims(); return c, r }
func (g matrixGrid) Z(c, r int) float64 { rows, _ := g.m.Dims(); return g.m.At(rows-1-r, c) }
func (g matrixGrid) X(c int) float64    { return float64(c) }
func (g matrixGrid) Y(r int) float64    { return float64(r) }

// Heatmaps draws the matrices side by side with one symmetric diverging colour scale (blue
// negative, red positive, white zero) shared by all panels, and a colour bar on the right, so
// that equal entries have equal colours across panels. It returns the PNG.
func Heatmaps(titles []string, mats []mat.Matrix) ([]byte, error) {
	if len(titles) != len(mats) || len(mats) == 0 {
		return nil, fmt.Errorf("nb.Heatmaps: %d titles for %d matrices", len(titles), len(mats))
	}
	scale := 0.0
	for _, m := range mats {
		r, c := m.Dims()
		for i := range r {
			for j := range c {
				scale = math.Max(scale, math.Abs(m.At(i, j)))
			}
		}
	}
	if scale == 0 {
		scale = 1
	}
	cmap := moreland.SmoothBlueRed()
	cmap.SetMin(-scale)
	cmap.SetMax(scale)
	pal := cmap.Palette(255)

	plots := make([]*plot.Plot, len(mats))
	for k, m := range mats {
		p := fplot.New(titles[k], "", "")
		h := plotter.NewHeatMap(matrixGrid{m}, pal)
		h.Min, h.Max = -scale, scale
		p.Add(h)
		p.HideAxes()
		plots[k] = p
	}
	bar := plot.New()
	bar.Title.Text = " "
	bar.Add(&plotter.ColorBar{ColorMap: cmap, Vertical: true})
	bar.HideX()
	bar.Y.Padding = 0

	panel := 2.2 * vg.Inch
	width := panel*vg.Length(len(mats)) + 0.9*vg.Inch
	c := vgimg.NewWith(vgimg.UseWH(width, panel+0.3*vg.Inch), vgimg.UseDPI(dpi))
	dc := draw.New(c)
	// The matrices share equal tiles on the left; the narrow colour bar takes the rest.
	tiles := draw.Tiles{Rows: 1, Cols: len(mats), PadX: vg.Millimeter, PadTop: vg.Millimeter, PadBottom: vg.Millimeter}
	matWidth := panel * vg.Length(len(mats))
	left := draw.Crop(dc, 0, matWidth-width, 0, 0)
	canvases := plot.Align([][]*plot.Plot{plots}, tiles, left)
	for k := range mats {
		plots[k].Draw(canvases[0][k])
	}
	right := draw.Crop(dc, matWidth+0.25*vg.Inch, 0, 0.4*vg.Inch, -0.1*vg.Inch)
	bar.Draw(right)
	return encodePNG(c)
}

// Series is one curve of a line plot.
type Series struct {
	Name string
	X, Y []float64
	// Dashed draws the curve dashed (for bounds and references).
	Dashed bool
}

// Axes describes a line plot's title, labels and scales.
type Axes struct {
	Title, X, Y   string
	LogX, LogY    bool
	Width, Height vg.Length // 0 selects 1.6 × 1.3 of the project's panel size
	// LegendLeft prefers the top-left corner for the legend to the top-right one; either way the
	// legend goes where no curve is (experiments/plot places it).
	LegendLeft bool
}

// Lines draws the series in the project's plotting style (experiments/plot: fonts, sizes and
// the k-th series style for the k-th series) and returns the PNG. Points that a log axis cannot
// show (values ≤ 0) are an error, not silently dropped. The embedded Liberation fonts have Greek
// letters and most mathematical operators, but not ★ or ∇: titles and labels should avoid them.
func Lines(ax Axes, series ...Series) ([]byte, error) {
	p := fplot.New(ax.Title, ax.X, ax.Y)
	if ax.LogX {
		fplot.LogAxis(&p.X)
	}
	if ax.LogY {
		fplot.LogAxis(&p.Y)
	}
	p.Legend.Top = true
	p.Legend.Left = ax.LegendLeft
	for k, s := range series {
		if len(s.X) != len(s.Y) {
			return nil, fmt.Errorf("nb.Lines: series %q has %d x and %d y values", s.Name, len(s.X), len(s.Y))
		}
		for i := range s.X {
			if (ax.LogX && !(s.X[i] > 0)) || (ax.LogY && !(s.Y[i] > 0)) {
				return nil, fmt.Errorf("nb.Lines: series %q point %d (%g, %g) cannot be shown on a log axis", s.Name, i, s.X[i], s.Y[i])
			}
		}
		style := fplot.Series(k)
		if s.Dashed {
			style.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
		}
		if err := fplot.AddSeries(p, s.Name, style, s.X, s.Y); err != nil {
			return nil, fmt.Errorf("nb.Lines: %w", err)
		}
	}
	w, h := ax.Width, ax.Height
	if w == 0 {
		w, h = 1.6*fplot.PanelWidth, 1.3*fplot.PanelHeight
	}
	return fplot.PNG([]*fplot.Plot{p}, w, h)
}

func encodePNG(c *vgimg.Canvas) ([]byte, error) {
	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: c}).WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("nb: encoding PNG: %w", err)
	}
	return buf.Bytes(), nil
}
