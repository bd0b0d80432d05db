package nb

import (
	"bytes"
	"fmt"
	"image/color"
	"math"

	"github.com/janpfeifer/gonb/gonbui"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
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
		p := plot.New()
		p.Title.Text = titles[k]
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

// palette holds the curve colours (Okabe-Ito, distinguishable with colour-vision deficiencies).
var palette = []color.Color{
	color.RGBA{0xd5, 0x5e, 0x00, 0xff}, color.RGBA{0x00, 0x72, 0xb2, 0xff},
	color.RGBA{0x00, 0x9e, 0x73, 0xff}, color.RGBA{0xcc, 0x79, 0xa7, 0xff},
	color.RGBA{0x66, 0x66, 0x66, 0xff}, color.RGBA{0xe6, 0x9f, 0x00, 0xff},
}

// Axes describes a line plot's title, labels and scales.
type Axes struct {
	Title, X, Y   string
	LogX, LogY    bool
	Width, Height vg.Length // 0 selects 5 × 3.2 inches
	// LegendLeft puts the legend in the top-left corner instead of the top-right one.
	LegendLeft bool
}

// Lines draws the series as lines (with point markers when they have at most 40 points) and
// returns the PNG. Points that a log axis cannot show (values ≤ 0) are an error, not silently
// dropped. The embedded Liberation fonts have Greek letters and most mathematical operators, but
// not ★ or ∇: titles and labels should avoid them.
func Lines(ax Axes, series ...Series) ([]byte, error) {
	p := plot.New()
	p.Title.Text = ax.Title
	p.X.Label.Text = ax.X
	p.Y.Label.Text = ax.Y
	if ax.LogX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: 1}
	}
	if ax.LogY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: 1}
	}
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	p.Legend.Left = ax.LegendLeft
	for k, s := range series {
		if len(s.X) != len(s.Y) {
			return nil, fmt.Errorf("nb.Lines: series %q has %d x and %d y values", s.Name, len(s.X), len(s.Y))
		}
		xy := make(plotter.XYs, len(s.X))
		for i := range s.X {
			if (ax.LogX && !(s.X[i] > 0)) || (ax.LogY && !(s.Y[i] > 0)) {
				return nil, fmt.Errorf("nb.Lines: series %q point %d (%g, %g) cannot be shown on a log axis", s.Name, i, s.X[i], s.Y[i])
			}
			xy[i] = plotter.XY{X: s.X[i], Y: s.Y[i]}
		}
		line, points, err := plotter.NewLinePoints(xy)
		if err != nil {
			return nil, fmt.Errorf("nb.Lines: series %q: %w", s.Name, err)
		}
		col := palette[k%len(palette)]
		line.Color, points.Color = col, col
		line.Width = 1.5
		points.Radius = 2
		if s.Dashed {
			line.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		}
		if len(xy) > 40 {
			p.Add(line)
			p.Legend.Add(s.Name, line)
		} else {
			p.Add(line, points)
			p.Legend.Add(s.Name, line, points)
		}
	}
	w, h := ax.Width, ax.Height
	if w == 0 {
		w, h = 5*vg.Inch, 3.2*vg.Inch
	}
	c := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(dpi))
	p.Draw(draw.New(c))
	return encodePNG(c)
}

func encodePNG(c *vgimg.Canvas) ([]byte, error) {
	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: c}).WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("nb: encoding PNG: %w", err)
	}
	return buf.Bytes(), nil
}
