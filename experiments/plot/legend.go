package plot

import (
	"fmt"
	"image"
	"math"
	"strings"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Legends are placed where nothing else is drawn. SaveGrid and PNG lay the panels out, draw
// them without legends at placementDPI and give each panel's legend the free position of its data
// area nearest a corner (the corner its Legend.Top and Legend.Left name first, then
// legendCorners), keeping legendMargin clear around it. A panel with no free position gets
// headroom: its y axis (and that of every panel sharing its y range) is extended upwards by
// headroomFraction of its range, up to headroomSteps times, until one is free.

// legendCorners are the corners of the data area a legend may be nearest, in order of
// preference after the panel's own.
var legendCorners = []struct{ top, left bool }{
	{false, false}, // bottom right
	{true, false},  // top right
	{true, true},   // top left
	{false, true},  // bottom left
}

const (
	placementDPI     = 72 // one pixel per point
	legendMargin     = vg.Length(3)
	legendStep       = vg.Length(2) // between the candidate positions
	headroomFraction = 0.1
	headroomSteps    = 8
)

// legendPlace is where a legend is drawn: its box, in the coordinates of the row's canvas, and
// whether its text follows the line samples (left) or precedes them.
type legendPlace struct {
	box  vg.Rectangle
	left bool
}

// legendSize is the size of p's legend as drawLegend draws it (gonum's legend rectangle and
// the text's descent above its first entry); zero when the legend has no entries.
func legendSize(p *Plot) vg.Point {
	size := p.Legend.Rectangle(draw.Canvas{}).Size()
	if size.X == 0 {
		return vg.Point{}
	}
	size.Y += p.Legend.TextStyle.FontExtents().Descent
	return size
}

// drawLegend draws p's legend into its place on dc.
func drawLegend(p *Plot, dc draw.Canvas, at *legendPlace) {
	l := p.Legend
	l.Top, l.Left, l.XOffs, l.YOffs = true, at.left, 0, 0
	l.Draw(draw.Canvas{Canvas: dc.Canvas, Rectangle: at.box})
}

// placeLegends places the legend of every panel of the rows (see above), extending y axes where
// needed, and returns the places, row by row (nil for a panel without legend entries).
func placeLegends(rows [][]*Plot, panelWidth, panelHeight vg.Length) ([]*legendPlace, error) {
	panels := panelsOf(rows)
	places := make([]*legendPlace, len(panels))
	for round := 0; ; round++ {
		c := vgimg.NewWith(vgimg.UseWH(gridSize(rows, panelWidth, panelHeight)), vgimg.UseDPI(placementDPI))
		areas, err := drawGrid(rows, c, nil)
		if err != nil {
			return nil, err
		}
		ink := newInkMap(c.Image())
		var crowded []*Plot
		for i, p := range panels {
			size := legendSize(p)
			if size.X == 0 {
				continue
			}
			var free bool
			places[i], free = ink.place(areas[i], size, p.Legend.Top, p.Legend.Left)
			if !free {
				crowded = append(crowded, p)
			}
		}
		if len(crowded) == 0 || round == headroomSteps {
			return places, nil
		}
		raise(panels, crowded)
	}
}

// raise extends upwards the y axis of each crowded panel, and of every panel sharing its range,
// by headroomFraction of the range (of its logarithm on a log axis).
func raise(panels, crowded []*Plot) {
	type yRange struct{ lo, hi float64 }
	ranges := map[yRange]bool{}
	for _, p := range crowded {
		ranges[yRange{p.Y.Min, p.Y.Max}] = true
	}
	for _, p := range panels {
		if !ranges[yRange{p.Y.Min, p.Y.Max}] {
			continue
		}
		if _, log := p.Y.Scale.(gplot.LogScale); log {
			p.Y.Max *= math.Pow(p.Y.Max/p.Y.Min, headroomFraction)
		} else {
			p.Y.Max += headroomFraction * (p.Y.Max - p.Y.Min)
		}
	}
}

// inkMap counts the drawn (non-background) pixels of an image drawn at placementDPI in any
// rectangle, through its summed-area table.
type inkMap struct {
	w, h int
	sum  []int32 // sum[j*(w+1)+i]: drawn pixels above row j and left of column i
}

// inked reports whether a pixel is drawn: any channel darker than 240/255 (light enough to
// ignore only the faintest anti-aliasing fringe; every band colour is darker).
func inked(img image.Image, x, y int) bool {
	r, g, b, _ := img.At(x, y).RGBA()
	const light = 240 * 0x101
	return r < light || g < light || b < light
}

func newInkMap(img image.Image) *inkMap {
	bounds := img.Bounds()
	m := &inkMap{w: bounds.Dx(), h: bounds.Dy()}
	m.sum = make([]int32, (m.w+1)*(m.h+1))
	for j := range m.h {
		var row int32
		for i := range m.w {
			if inked(img, bounds.Min.X+i, bounds.Min.Y+j) {
				row++
			}
			m.sum[(j+1)*(m.w+1)+i+1] = m.sum[j*(m.w+1)+i+1] + row
		}
	}
	return m
}

// count returns the number of drawn pixels that r (in points, y up) touches.
func (m *inkMap) count(r vg.Rectangle) int {
	x0 := max(0, int(math.Floor(float64(r.Min.X))))
	x1 := min(m.w, int(math.Ceil(float64(r.Max.X))))
	y0 := max(0, int(math.Floor(float64(m.h)-float64(r.Max.Y))))
	y1 := min(m.h, int(math.Ceil(float64(m.h)-float64(r.Min.Y))))
	if x0 >= x1 || y0 >= y1 {
		return 0
	}
	w := m.w + 1
	return int(m.sum[y1*w+x1] - m.sum[y0*w+x1] - m.sum[y1*w+x0] + m.sum[y0*w+x0])
}

// place returns the position of a legend of the given size in the data area: among the
// positions on a legendStep grid whose box widened by legendMargin (within the area) is free of
// ink, the one nearest a corner, the corner (top, left) winning ties, then legendCorners; and
// whether it is free. With no free position it returns the one touching the least ink.
func (m *inkMap) place(area vg.Rectangle, size vg.Point, top, left bool) (*legendPlace, bool) {
	corners := append([]struct{ top, left bool }{{top, left}}, legendCorners...)
	steps := func(lo, hi vg.Length) []vg.Length {
		var out []vg.Length
		for v := lo; v < hi; v += legendStep {
			out = append(out, v)
		}
		return append(out, max(lo, hi))
	}
	if available := area.Size(); size.X > available.X || size.Y > available.Y {
		// It does not fit: at the top left, over the data, rather than outside the axes.
		return &legendPlace{box: vg.Rectangle{Min: vg.Point{X: area.Min.X, Y: area.Max.Y - size.Y}, Max: vg.Point{X: area.Min.X + size.X, Y: area.Max.Y}}, left: true}, false
	}
	var (
		best            *legendPlace
		bestInk         = math.MaxInt
		bestDist, bestK = math.Inf(1), len(corners)
		widen           = vg.Point{X: legendMargin, Y: legendMargin}
	)
	for _, y := range steps(area.Min.Y, area.Max.Y-size.Y) {
		for _, x := range steps(area.Min.X, area.Max.X-size.X) {
			box := vg.Rectangle{Min: vg.Point{X: x, Y: y}, Max: vg.Point{X: x + size.X, Y: y + size.Y}}
			clear := vg.Rectangle{Min: box.Min.Sub(widen), Max: box.Max.Add(widen)}
			clear.Min.X, clear.Min.Y = max(clear.Min.X, area.Min.X), max(clear.Min.Y, area.Min.Y)
			clear.Max.X, clear.Max.Y = min(clear.Max.X, area.Max.X), min(clear.Max.Y, area.Max.Y)
			ink := m.count(clear)
			dist, k := math.Inf(1), 0
			for i, c := range corners {
				dx, dy := area.Max.X-box.Max.X, box.Min.Y-area.Min.Y
				if c.left {
					dx = box.Min.X - area.Min.X
				}
				if c.top {
					dy = area.Max.Y - box.Max.Y
				}
				if d := math.Hypot(float64(dx), float64(dy)); d < dist {
					dist, k = d, i
				}
			}
			if ink < bestInk || (ink == bestInk && (dist < bestDist || (dist == bestDist && k < bestK))) {
				best = &legendPlace{box: box, left: corners[k].left}
				bestInk, bestDist, bestK = ink, dist, k
			}
		}
	}
	return best, bestInk == 0
}

// CheckLegends draws the rows of panels as SaveGrid does, at PNGDotsPerIn, and returns an error
// naming every panel whose legend covers anything else drawn there (a curve, band, marker,
// reference line or axis). A legend's pixels are those that change when the panels are drawn
// without legends; in that drawing, the bounding box of the legend's pixels, widened by one
// pixel, must be background (white).
func CheckLegends(rows [][]*Plot, panelWidth, panelHeight vg.Length) error {
	if err := checkGrid(rows, panelWidth, panelHeight); err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	places, err := placeLegends(rows, panelWidth, panelHeight)
	if err != nil {
		return err
	}
	render := func(places []*legendPlace) (image.Image, []vg.Rectangle, error) {
		c := vgimg.NewWith(vgimg.UseWH(gridSize(rows, panelWidth, panelHeight)), vgimg.UseDPI(PNGDotsPerIn))
		areas, err := drawGrid(rows, c, places)
		return c.Image(), areas, err
	}
	with, areas, err := render(places)
	if err != nil {
		return err
	}
	without, _, err := render(nil)
	if err != nil {
		return err
	}
	b := with.Bounds()
	scale := float64(PNGDotsPerIn) / 72
	var problems []string
	for i, p := range panelsOf(rows) {
		if places[i] == nil {
			continue
		}
		// The legend's pixels lie in the panel's data area.
		a := areas[i]
		x0, x1 := int(float64(a.Min.X)*scale), int(math.Ceil(float64(a.Max.X)*scale))
		y0, y1 := b.Dy()-int(math.Ceil(float64(a.Max.Y)*scale)), b.Dy()-int(float64(a.Min.Y)*scale)
		lx0, ly0, lx1, ly1 := b.Dx(), b.Dy(), -1, -1
		for y := max(y0, 0); y < min(y1, b.Dy()); y++ {
			for x := max(x0, 0); x < min(x1, b.Dx()); x++ {
				if with.At(b.Min.X+x, b.Min.Y+y) != without.At(b.Min.X+x, b.Min.Y+y) {
					lx0, ly0, lx1, ly1 = min(lx0, x), min(ly0, y), max(lx1, x), max(ly1, y)
				}
			}
		}
		if lx1 < 0 {
			problems = append(problems, fmt.Sprintf("panel %d (%q): its legend draws nothing", i, p.Title.Text))
			continue
		}
		covered := 0
		for y := max(ly0-1, 0); y <= min(ly1+1, b.Dy()-1); y++ {
			for x := max(lx0-1, 0); x <= min(lx1+1, b.Dx()-1); x++ {
				if r, g, bl, _ := without.At(b.Min.X+x, b.Min.Y+y).RGBA(); r != 0xffff || g != 0xffff || bl != 0xffff {
					covered++
				}
			}
		}
		if covered > 0 {
			problems = append(problems, fmt.Sprintf("panel %d (%q): its legend (pixels %d-%d × %d-%d) covers %d drawn pixels",
				i, p.Title.Text, lx0, lx1, ly0, ly1, covered))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("plot: legends over data: %s", strings.Join(problems, "; "))
	}
	return nil
}
