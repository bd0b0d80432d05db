// Package plot is the one plotting style of the project, on gonum.org/v1/plot: fonts, sizes,
// line widths and a fixed colour, dash pattern and marker per optimisation method, used by every
// figure, plus helpers that save a plot, a row or a grid of panels as SVG (web), PDF (LaTeX) and
// PNG (notebooks, READMEs), each written atomically, with the same bytes for the same drawing.
// PDFs embed their font with a Unicode map and keep translucent colours; SVG text keeps its
// laid-out width in any viewer; each legend is placed where nothing else is drawn.
//
// A figure is made by creating panels with [New], adding series with [AddMethod], [AddSeries]
// and [AddBand], and writing them with [Save], [SaveRow] or [SaveGrid]; [CheckLegends] checks
// the legends' places in a test.
package plot

import (
	"fmt"
	"image/color"
	"math"
	"strconv"
	"strings"

	"github.com/fgn-paper/fgn/experiments/method"
	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Plot is a gonum/plot panel; this package's helpers create, fill and save them.
type Plot = gplot.Plot

// Style is how one series is drawn.
type Style struct {
	Color  color.Color
	Dashes []vg.Length // nil for a solid line
	Glyph  draw.GlyphDrawer
	Width  vg.Length // of the line; 0 for LineWidth
}

// The palette is Okabe & Ito's colour-blind-safe set. Methods take four of its colours; other
// series (curves that are not methods, such as trace terms or damping levels) use Series.
var (
	black         = color.RGBA{0x00, 0x00, 0x00, 0xff}
	orange        = color.RGBA{0xe6, 0x9f, 0x00, 0xff}
	skyBlue       = color.RGBA{0x56, 0xb4, 0xe9, 0xff}
	bluishGreen   = color.RGBA{0x00, 0x9e, 0x73, 0xff}
	blue          = color.RGBA{0x00, 0x72, 0xb2, 0xff}
	vermillion    = color.RGBA{0xd5, 0x5e, 0x00, 0xff}
	reddishPurple = color.RGBA{0xcc, 0x79, 0xa7, 0xff}
	grey          = color.RGBA{0x66, 0x66, 0x66, 0xff}
)

// MethodStyle returns the fixed style of an optimisation method, the same in every figure of
// the project, and false for a method it does not know. FGN and its matrix-free variant share
// the warm hues and differ in dash and marker; Adam is grey (the first-order reference), SGN blue.
func MethodStyle(m method.Method) (Style, bool) {
	switch m {
	case method.Adam:
		return Style{Color: grey, Dashes: []vg.Length{vg.Points(1), vg.Points(2)}, Glyph: draw.SquareGlyph{}}, true
	case method.SGN:
		return Style{Color: blue, Glyph: draw.TriangleGlyph{}}, true
	case method.FGN:
		return Style{Color: vermillion, Glyph: draw.CircleGlyph{}}, true
	case method.FGNMatrixFree:
		return Style{Color: reddishPurple, Dashes: []vg.Length{vg.Points(4), vg.Points(2)}, Glyph: draw.RingGlyph{}}, true
	}
	return Style{}, false
}

// seriesStyles are the styles for series that are not methods, in order; the first three use
// colours no method uses.
var seriesStyles = []Style{
	{Color: bluishGreen},
	{Color: orange, Dashes: []vg.Length{vg.Points(4), vg.Points(2)}},
	{Color: skyBlue, Dashes: []vg.Length{vg.Points(6), vg.Points(2), vg.Points(1), vg.Points(2)}},
	{Color: black, Dashes: []vg.Length{vg.Points(1), vg.Points(2)}},
}

// Series returns the i-th style for series that are not methods (cycling).
func Series(i int) Style {
	n := len(seriesStyles)
	return seriesStyles[((i%n)+n)%n]
}

// Sizes of the project style. A panel is PanelWidth × PanelHeight; fonts are chosen for a
// three-panel row scaled to the width of a paper page.
var (
	PanelWidth   = vg.Points(200)
	PanelHeight  = vg.Points(160)
	LineWidth    = vg.Points(1.25)
	GlyphRadius  = vg.Points(2)
	AxisWidth    = vg.Points(0.6)
	TitleSize    = vg.Points(10)
	LabelSize    = vg.Points(9)
	TickSize     = vg.Points(7.5)
	LegendSize   = vg.Points(7.5)
	BandAlpha    = 0.22 // opacity of shaded bands
	PNGDotsPerIn = 200
)

// textFont is the project's typeface, Liberation Serif (metrics of Times, to sit beside LaTeX).
func textFont(size vg.Length) font.Font {
	return font.Font{Typeface: "Liberation", Variant: "Serif", Size: size}
}

// New returns an empty panel in the project style with the given title and axis labels, its
// linear axes ticked by NiceTicks.
func New(title, xLabel, yLabel string) *Plot {
	p := gplot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font = textFont(TitleSize)
	p.Title.Padding = vg.Points(4)
	for _, ax := range []*gplot.Axis{&p.X, &p.Y} {
		ax.Label.TextStyle.Font = textFont(LabelSize)
		ax.Tick.Label.Font = textFont(TickSize)
		ax.LineStyle.Width = AxisWidth
		ax.Tick.LineStyle.Width = AxisWidth
		ax.Tick.Length = vg.Points(4)
		ax.Padding = vg.Points(2)
	}
	p.X.Label.Text = xLabel
	p.Y.Label.Text = yLabel
	p.X.Tick.Marker, p.Y.Tick.Marker = NiceTicks{}, NiceTicks{}
	p.Legend.TextStyle.Font = textFont(LegendSize)
	p.Legend.ThumbnailWidth = vg.Points(18)
	p.Legend.Padding = vg.Points(1)
	return p
}

// LogLog2 sets the panel's x axis to a log scale with ticks at powers of two and its y axis to a
// log scale with decade ticks.
func LogLog2(p *Plot) {
	p.X.Scale = gplot.LogScale{}
	p.X.Tick.Marker = powersOfTwo{}
	LogAxis(&p.Y)
}

// LogAxis sets an axis (&p.X or &p.Y) to a log scale with decade ticks (Decades).
func LogAxis(ax *gplot.Axis) {
	ax.Scale = gplot.LogScale{}
	ax.Tick.Marker = Decades{}
}

// Decades ticks a log axis at the powers of ten, labelled as plain numbers from 0.001 to 10000
// and as 1e-5, 1e+06 beyond, with unlabelled ticks at 2-9 times each power (every third power
// labelled when the axis spans more than seven decades).
type Decades struct{}

func (Decades) Ticks(lo, hi float64) []gplot.Tick {
	if !(lo > 0 && hi >= lo) {
		return nil
	}
	first, last := int(math.Floor(math.Log10(lo))), int(math.Ceil(math.Log10(hi)))
	every := 1
	if last-first > 7 {
		every = 3
	}
	var ticks []gplot.Tick
	for k := first; k <= last; k++ {
		p := math.Pow10(k)
		if p >= lo*(1-1e-12) && p <= hi*(1+1e-12) {
			t := gplot.Tick{Value: p}
			if ((k%every)+every)%every == 0 {
				t.Label = strconv.FormatFloat(p, 'f', -1, 64)
				if k < -3 || k > 4 {
					t.Label = strconv.FormatFloat(p, 'g', -1, 64)
				}
			}
			ticks = append(ticks, t)
		}
		if every > 1 {
			continue
		}
		for m := 2.0; m <= 9; m++ {
			if v := m * p; v >= lo && v <= hi {
				ticks = append(ticks, gplot.Tick{Value: v})
			}
		}
	}
	return ticks
}

// powersOfTwo ticks a log axis at 2^k, labelling every other power when there are many.
type powersOfTwo struct{}

func (powersOfTwo) Ticks(lo, hi float64) []gplot.Tick {
	var ticks []gplot.Tick
	var powers []float64
	for v := 1.0; v <= hi*(1+1e-12); v *= 2 {
		if v >= lo*(1-1e-12) {
			powers = append(powers, v)
		}
	}
	step := 1
	if len(powers) > 7 {
		step = 2
	}
	for i, v := range powers {
		t := gplot.Tick{Value: v}
		if i%step == 0 {
			t.Label = fmt.Sprintf("%g", v)
		}
		ticks = append(ticks, t)
	}
	return ticks
}

// NiceTicks ticks a linear axis at multiples of 1, 2 or 5 × 10^k, the largest step giving at
// least three labelled ticks, with an unlabelled tick halfway between labelled ones.
type NiceTicks struct{}

func (NiceTicks) Ticks(lo, hi float64) []gplot.Tick {
	if !(hi > lo) {
		return []gplot.Tick{{Value: lo, Label: strconv.FormatFloat(lo, 'g', 4, 64)}}
	}
	var step float64
	for e := math.Floor(math.Log10(hi - lo)); step == 0; e-- {
		for _, m := range []float64{5, 2, 1} {
			if s := m * math.Pow(10, e); math.Floor(hi/s)-math.Ceil(lo/s)+1 >= 3 {
				step = s
				break
			}
		}
	}
	decimals := 0 // the fewest that write every multiple of step exactly
	for x := step; decimals < 10 && math.Abs(x-math.Round(x)) > 1e-9*x; x *= 10 {
		decimals++
	}
	var ticks []gplot.Tick
	for k := math.Ceil(lo / step * 2); k <= math.Floor(hi/step*2); k++ {
		v := k * step / 2
		t := gplot.Tick{Value: v}
		if int(k)%2 == 0 {
			t.Label = strconv.FormatFloat(v, 'f', decimals, 64)
			if decimals > 0 {
				t.Label = strings.TrimRight(strings.TrimRight(t.Label, "0"), ".")
			}
		}
		ticks = append(ticks, t)
	}
	return ticks
}
