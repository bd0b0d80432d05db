package plot

import (
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// legendCorners are the corners of the data area the legend may take, in order of preference.
var legendCorners = []struct{ top, left bool }{
	{false, false}, // bottom right
	{true, false},  // top right
	{true, true},   // top left
	{false, true},  // bottom left
}

// ClearLegend puts p's legend in the corner of its data area that the given curves cross least,
// as the panel is laid out at width × height: the curves are sampled along their segments and
// the corner whose legend box holds the fewest samples wins, the earlier of legendCorners on a
// tie. Call it once the axes' ranges are final.
func ClearLegend(p *Plot, width, height vg.Length, curves ...plotter.XYs) {
	da := p.DataCanvas(draw.New(vgimg.New(width, height)))
	size := p.Legend.Rectangle(da).Size()
	trX, trY := p.Transforms(&da)
	best, fewest := 0, -1
	for i, corner := range legendCorners {
		box := vg.Rectangle{Min: vg.Point{X: da.Max.X - size.X, Y: da.Min.Y}, Max: vg.Point{X: da.Max.X, Y: da.Min.Y + size.Y}}
		if corner.left {
			box.Min.X, box.Max.X = da.Min.X, da.Min.X+size.X
		}
		if corner.top {
			box.Min.Y, box.Max.Y = da.Max.Y-size.Y, da.Max.Y
		}
		hits := 0
		for _, xys := range curves {
			for k := 1; k < len(xys); k++ {
				a := vg.Point{X: trX(xys[k-1].X), Y: trY(xys[k-1].Y)}
				b := vg.Point{X: trX(xys[k].X), Y: trY(xys[k].Y)}
				const samples = 32
				for s := range samples {
					f := vg.Length(s) / samples
					q := vg.Point{X: a.X + f*(b.X-a.X), Y: a.Y + f*(b.Y-a.Y)}
					if q.X >= box.Min.X && q.X <= box.Max.X && q.Y >= box.Min.Y && q.Y <= box.Max.Y {
						hits++
					}
				}
			}
		}
		if fewest < 0 || hits < fewest {
			best, fewest = i, hits
		}
	}
	p.Legend.Top, p.Legend.Left = legendCorners[best].top, legendCorners[best].left
}
