package plot

import (
	"fmt"
	"image/color"
	"math"

	"github.com/fgn-paper/fgn/experiments/method"
	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// AddMethod adds the curve ys(xs) of method m to p, with the method's fixed colour, dashes and
// markers, and a legend entry with its label.
func AddMethod(p *Plot, m method.Method, xs, ys []float64) error {
	s, ok := MethodStyle(m)
	if !ok {
		return fmt.Errorf("plot: unknown method %q", m)
	}
	return AddSeries(p, m.Label(), s, xs, ys)
}

// AddSeries adds the curve ys(xs) to p in the given style (a line, with markers when the style
// has a glyph) and, when label is not empty, a legend entry.
func AddSeries(p *Plot, label string, s Style, xs, ys []float64) error {
	pts, err := points(xs, ys)
	if err != nil {
		return fmt.Errorf("plot: series %q: %w", label, err)
	}
	line, err := plotter.NewLine(pts)
	if err != nil {
		return fmt.Errorf("plot: series %q: %w", label, err)
	}
	line.LineStyle = s.lineStyle()
	p.Add(line)
	if s.Glyph != nil {
		scatter, err := plotter.NewScatter(pts)
		if err != nil {
			return fmt.Errorf("plot: series %q: %w", label, err)
		}
		scatter.GlyphStyle = s.glyphStyle()
		p.Add(scatter)
	}
	if label != "" {
		AddLegendEntry(p, label, s)
	}
	return nil
}

// AddLegendEntry adds a legend entry drawn in the given style, for a series added without one
// (one entry standing for several curves, say).
func AddLegendEntry(p *Plot, label string, s Style) {
	thumbs := []gplot.Thumbnailer{&plotter.Line{LineStyle: s.lineStyle()}}
	if s.Glyph != nil {
		thumbs = append(thumbs, &plotter.Scatter{GlyphStyle: s.glyphStyle()})
	}
	p.Legend.Add(label, thumbs...)
}

func (s Style) lineStyle() draw.LineStyle {
	w := s.Width
	if w == 0 {
		w = LineWidth
	}
	return draw.LineStyle{Color: s.Color, Width: w, Dashes: s.Dashes}
}

func (s Style) glyphStyle() draw.GlyphStyle {
	return draw.GlyphStyle{Color: s.Color, Radius: GlyphRadius, Shape: s.Glyph}
}

// AddBand shades the region between lo(xs) and hi(xs) in clr at the style's band opacity
// (BandAlpha), with a legend entry when label is not empty. Use it for gaps between curves and
// for spreads (mean ± std, interquartile ranges) around a curve drawn in the same colour.
func AddBand(p *Plot, label string, clr color.Color, xs, lo, hi []float64) error {
	if len(lo) != len(xs) || len(hi) != len(xs) {
		return fmt.Errorf("plot: band %q: %d x values, %d lower and %d upper values", label, len(xs), len(lo), len(hi))
	}
	ring := make(plotter.XYs, 0, 2*len(xs))
	for i := range xs {
		ring = append(ring, plotter.XY{X: xs[i], Y: lo[i]})
	}
	for i := len(xs) - 1; i >= 0; i-- {
		ring = append(ring, plotter.XY{X: xs[i], Y: hi[i]})
	}
	for _, pt := range ring {
		if !finite(pt.X) || !finite(pt.Y) {
			return fmt.Errorf("plot: band %q: non-finite point (%g, %g)", label, pt.X, pt.Y)
		}
	}
	poly, err := plotter.NewPolygon(ring)
	if err != nil {
		return fmt.Errorf("plot: band %q: %w", label, err)
	}
	poly.Color = Translucent(clr, BandAlpha)
	poly.LineStyle.Width = 0
	p.Add(poly)
	if label != "" {
		p.Legend.Add(label, poly)
	}
	return nil
}

// BandColor returns the colour a band of clr (AddBand) has where it lies over the white
// background alone: each channel v becomes 255 − a·(255 − v), a the band's opacity.
func BandColor(clr color.Color) color.Color {
	c := Translucent(clr, BandAlpha).(color.NRGBA)
	a := float64(c.A) / 255
	over := func(v uint8) uint8 { return uint8(math.Round(255 - a*(255-float64(v)))) }
	return color.NRGBA{R: over(c.R), G: over(c.G), B: over(c.B), A: 0xff}
}

// Translucent returns clr with opacity alpha, clamped to [0, 1].
func Translucent(clr color.Color, alpha float64) color.Color {
	c := color.NRGBAModel.Convert(clr).(color.NRGBA)
	c.A = uint8(math.Round(255 * math.Max(0, math.Min(1, alpha))))
	return c
}

func points(xs, ys []float64) (plotter.XYs, error) {
	if len(xs) != len(ys) {
		return nil, fmt.Errorf("%d x values but %d y values", len(xs), len(ys))
	}
	if len(xs) == 0 {
		return nil, fmt.Errorf("no points")
	}
	pts := make(plotter.XYs, len(xs))
	for i := range xs {
		if !finite(xs[i]) || !finite(ys[i]) {
			return nil, fmt.Errorf("point %d is not finite: (%g, %g)", i, xs[i], ys[i])
		}
		pts[i] = plotter.XY{X: xs[i], Y: ys[i]}
	}
	return pts, nil
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// referenceLine is the style of reference lines (thresholds, horizons): thin, grey, dashed.
var referenceLine = draw.LineStyle{Color: grey, Width: AxisWidth, Dashes: []vg.Length{vg.Points(3), vg.Points(2)}}

// AddHLine draws a horizontal reference line at y (a threshold) across the data area; the y
// axis is widened to include it.
func AddHLine(p *Plot, y float64) { p.Add(refLine{at: y, horizontal: true}) }

// AddVLine draws a vertical reference line at x (a horizon) across the data area; the x axis
// is widened to include it.
func AddVLine(p *Plot, x float64) { p.Add(refLine{at: x}) }

// refLine is a reference line spanning the data area.
type refLine struct {
	at         float64
	horizontal bool
}

func (l refLine) Plot(c draw.Canvas, p *gplot.Plot) {
	trX, trY := p.Transforms(&c)
	if l.horizontal {
		y := trY(l.at)
		c.StrokeLine2(referenceLine, c.Min.X, y, c.Max.X, y)
		return
	}
	x := trX(l.at)
	c.StrokeLine2(referenceLine, x, c.Min.Y, x, c.Max.Y)
}

// DataRange covers only the line's coordinate, leaving the other axis to the data.
func (l refLine) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, xmax, ymin, ymax = math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	if l.horizontal {
		return xmin, xmax, l.at, l.at
	}
	return l.at, l.at, ymin, ymax
}
