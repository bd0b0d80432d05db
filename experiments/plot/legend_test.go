package plot

import (
	"testing"

	"gonum.org/v1/plot/plotter"
)

// TestClearLegend checks the corner chosen for curves that leave exactly one or two corners of
// the unit square free.
func TestClearLegend(t *testing.T) {
	line := func(pts ...float64) plotter.XYs {
		var xys plotter.XYs
		for i := 0; i < len(pts); i += 2 {
			xys = append(xys, plotter.XY{X: pts[i], Y: pts[i+1]})
		}
		return xys
	}
	tests := []struct {
		name      string
		curves    []plotter.XYs
		top, left bool
	}{
		{"rising and saturating: bottom right free", []plotter.XYs{line(0, 0, 0.1, 0.9, 1, 1)}, false, false},
		{"flat along the bottom, falling on the left: top right free", []plotter.XYs{line(0, 0.02, 1, 0.02), line(0, 1, 0.4, 0)}, true, false},
		{"falling: bottom left and top right free, top right first", []plotter.XYs{line(0, 1, 1, 0)}, true, false},
		{"flat bottom and top right curve: top left free", []plotter.XYs{line(0, 0.02, 1, 0.02), line(0.6, 0.5, 1, 1)}, true, true},
		{"no curves: bottom right", nil, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := New("", "x", "y")
			for _, c := range tc.curves {
				if err := AddSeries(p, "a longer legend entry", Series(0), xsOf(c), ysOf(c)); err != nil {
					t.Fatal(err)
				}
			}
			p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, 1, 0, 1
			ClearLegend(p, PanelWidth, PanelHeight, tc.curves...)
			if p.Legend.Top != tc.top || p.Legend.Left != tc.left {
				t.Errorf("legend top=%v left=%v, want top=%v left=%v", p.Legend.Top, p.Legend.Left, tc.top, tc.left)
			}
		})
	}
}

func xsOf(xys plotter.XYs) []float64 {
	out := make([]float64, len(xys))
	for i, p := range xys {
		out[i] = p.X
	}
	return out
}

func ysOf(xys plotter.XYs) []float64 {
	out := make([]float64, len(xys))
	for i, p := range xys {
		out[i] = p.Y
	}
	return out
}
