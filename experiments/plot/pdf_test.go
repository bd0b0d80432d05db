package plot

import (
	"image"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/fgn-paper/fgn/experiments/plot/plottest"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// TestPDFCanvasDrawing draws what the figures do not (an image, an arc) and a rotated label on
// the PDF canvas and checks pdftoppm's drawing of the page at 72 dpi: the image upright in its
// rectangle, the disc filled around its centre and nothing outside it, the rotated text read
// back by pdftotext.
func TestPDFCanvasDrawing(t *testing.T) {
	red, blue := color.NRGBA{R: 255, A: 255}, color.NRGBA{B: 255, A: 255}
	img := image.NewNRGBA(image.Rect(0, 0, 20, 10))
	for y := range 10 {
		for x := range 20 {
			img.Set(x, y, blue)
			if y < 5 {
				img.Set(x, y, red) // the top half
			}
		}
	}
	c := newPDFCanvas(vg.Points(200), vg.Points(100))
	dc := draw.New(c)
	dc.DrawImage(vg.Rectangle{Min: vg.Point{X: 100, Y: 20}, Max: vg.Point{X: 180, Y: 60}}, img)
	var disc vg.Path
	disc.Move(vg.Point{X: 50, Y: 50})
	disc.Arc(vg.Point{X: 50, Y: 50}, 20, 0, 2*math.Pi)
	disc.Close()
	dc.SetColor(color.Black)
	dc.Fill(disc)
	style := New("", "", "").Y.Label.TextStyle
	style.Rotation = math.Pi / 2
	dc.FillText(style, vg.Point{X: 10, Y: 50}, "rotated ξ")
	path := filepath.Join(t.TempDir(), "canvas.pdf")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.WriteTo(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	plottest.CheckPDF(t, path, []string{"rotated ξ"}, nil)
	page := plottest.Render(t, path, 72)
	// Page pixel (x, y) covers vg's [x, x+1] × [100-y-1, 100-y].
	for _, tc := range []struct {
		name string
		x, y int
		want color.Color
	}{
		{"image, top half", 140, 100 - 50, red},
		{"image, bottom half", 140, 100 - 30, blue},
		{"disc centre", 50, 50, color.Black},
		{"disc, inside its edge", 50 + 17, 50, color.Black},
		{"outside the disc", 50 + 23, 50, color.White},
		{"outside the image", 190, 100 - 40, color.White},
	} {
		if got := page.At(tc.x, tc.y); !plottest.Near(got, tc.want, 8) {
			t.Errorf("%s: pixel (%d, %d) is %v, want %v (±8)", tc.name, tc.x, tc.y, got, tc.want)
		}
	}
}
