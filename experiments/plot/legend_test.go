package plot

import (
	"fmt"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg"
)

// line returns the points (x0, y0, x1, y1, ...) as xs and ys.
func line(pts ...float64) (xs, ys []float64) {
	for i := 0; i < len(pts); i += 2 {
		xs, ys = append(xs, pts[i]), append(ys, pts[i+1])
	}
	return xs, ys
}

// TestLegendPlacement checks where placeLegends puts a legend among curves that leave one or
// two corners of the unit square free, and that CheckLegends finds it clear of them.
func TestLegendPlacement(t *testing.T) {
	tests := []struct {
		name      string
		curves    [][]float64
		pref      struct{ top, left bool } // the panel's own preference
		top, left bool                     // the corner the legend must touch
	}{
		{"rising and saturating: bottom right free", [][]float64{{0, 0, 0.1, 0.9, 1, 1}}, struct{ top, left bool }{}, false, false},
		{"flat along the bottom, falling on the left: top right free", [][]float64{{0, 0.02, 1, 0.02}, {0, 1, 0.4, 0}}, struct{ top, left bool }{}, true, false},
		{"falling: bottom left and top right free, preference bottom left", [][]float64{{0, 1, 1, 0}}, struct{ top, left bool }{false, true}, false, true},
		{"falling: bottom left and top right free, no preference", [][]float64{{0, 1, 1, 0}}, struct{ top, left bool }{}, true, false},
		{"flat bottom and top right curve: top left free", [][]float64{{0, 0.02, 1, 0.02}, {0.6, 0.5, 1, 1}}, struct{ top, left bool }{}, true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := New("", "x", "y")
			for _, c := range tc.curves {
				xs, ys := line(c...)
				if err := AddSeries(p, "a longer legend entry", Series(0), xs, ys); err != nil {
					t.Fatal(err)
				}
			}
			p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, 1, 0, 1
			p.Legend.Top, p.Legend.Left = tc.pref.top, tc.pref.left
			places, err := placeLegends([][]*Plot{{p}}, PanelWidth, PanelHeight)
			if err != nil {
				t.Fatal(err)
			}
			if p.Y.Max != 1 {
				t.Errorf("the y axis was extended to %g with a corner free", p.Y.Max)
			}
			area := dataArea(t, p)
			box := places[0].box
			const tol = vg.Length(legendStep)
			touchesX := box.Max.X >= area.Max.X-tol
			if tc.left {
				touchesX = box.Min.X <= area.Min.X+tol
			}
			touchesY := box.Min.Y <= area.Min.Y+tol
			if tc.top {
				touchesY = box.Max.Y >= area.Max.Y-tol
			}
			if !touchesX || !touchesY || places[0].left != tc.left {
				t.Errorf("legend box %v (text after the samples: %v) in data area %v, want it in the corner top=%v left=%v",
					box, places[0].left, area, tc.top, tc.left)
			}
			if err := CheckLegends([][]*Plot{{p}}, PanelWidth, PanelHeight); err != nil {
				t.Error(err)
			}
		})
	}
}

// dataArea returns p's data area drawn alone at PanelWidth × PanelHeight.
func dataArea(t *testing.T, p *Plot) vg.Rectangle {
	t.Helper()
	c, err := newCanvas("png", PanelWidth, PanelHeight)
	if err != nil {
		t.Fatal(err)
	}
	areas, err := drawGrid([][]*Plot{{p}}, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	return areas[0]
}

// TestLegendHeadroom fills the data areas of two panels sharing a y range (a zigzag over the
// whole area, on a linear and on a log axis): no place is free, so the y axes are extended
// upwards, the shared range stays shared, and the legends end up clear of the data.
func TestLegendHeadroom(t *testing.T) {
	for _, log := range []bool{false, true} {
		t.Run(fmt.Sprintf("log=%v", log), func(t *testing.T) {
			var panels []*Plot
			for k := range 2 {
				p := New(fmt.Sprintf("(%c)", 'a'+k), "x", "y")
				if log {
					LogAxis(&p.Y)
				}
				var xs, ys []float64
				for i := range 41 {
					xs = append(xs, float64(i))
					ys = append(ys, 1+float64(i%2)*9)
				}
				if err := AddSeries(p, "zigzag over everything", Series(k), xs, ys); err != nil {
					t.Fatal(err)
				}
				panels = append(panels, p)
			}
			panels[1].Legend = New("", "", "").Legend // no entries: only shares the range
			if err := CheckLegends([][]*Plot{panels}, PanelWidth, PanelHeight); err != nil {
				t.Error(err)
			}
			if !(panels[0].Y.Max > 10) || panels[1].Y.Max != panels[0].Y.Max || panels[0].Y.Min != 1 {
				t.Errorf("y ranges [%g, %g] and [%g, %g], want [1, > 10] shared", panels[0].Y.Min, panels[0].Y.Max, panels[1].Y.Min, panels[1].Y.Max)
			}
		})
	}
}

// TestCheckLegendsFails gives a panel a legend larger than its data area, which covers the
// data wherever it goes, and checks that CheckLegends says so.
func TestCheckLegendsFails(t *testing.T) {
	p := New("crowded", "x", "y")
	for i := range 12 {
		if err := AddSeries(p, strings.Repeat("a long legend entry ", 2), Series(i), []float64{0, 1}, []float64{float64(i), float64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	err := CheckLegends([][]*Plot{{p}}, PanelWidth/2, PanelHeight/2)
	if err == nil || !strings.Contains(err.Error(), "covers") {
		t.Errorf("CheckLegends: %v, want an error saying the legend covers drawn pixels", err)
	}
}
