package plot

import (
	"bytes"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fgn-paper/fgn/experiments/method"
	gplot "gonum.org/v1/plot"
)

// TestMethodStyles pins the colour of every method (they must not drift between figures) and
// checks that methods are told apart by colour and by dash-or-marker.
func TestMethodStyles(t *testing.T) {
	want := map[method.Method]color.RGBA{
		method.Adam:          {0x66, 0x66, 0x66, 0xff},
		method.SGN:           {0x00, 0x72, 0xb2, 0xff},
		method.FGN:           {0xd5, 0x5e, 0x00, 0xff},
		method.FGNMatrixFree: {0xcc, 0x79, 0xa7, 0xff},
	}
	seen := map[color.RGBA]method.Method{}
	for _, m := range method.Methods {
		s, ok := MethodStyle(m)
		if !ok {
			t.Fatalf("%s has no style", m)
		}
		got := color.RGBAModel.Convert(s.Color).(color.RGBA)
		if got != want[m] {
			t.Errorf("%s: colour %v, want %v", m, got, want[m])
		}
		if other, dup := seen[got]; dup {
			t.Errorf("%s and %s share colour %v", m, other, got)
		}
		seen[got] = m
		if s.Glyph == nil {
			t.Errorf("%s has no marker", m)
		}
	}
	if _, ok := MethodStyle("lbfgs"); ok {
		t.Error("MethodStyle knows an unknown method")
	}
}

// TestSaveRow writes a row of two panels and checks every file: the PNG decodes at the
// configured resolution and contains FGN's exact colour (its line was drawn), the SVG and PDF
// have their headers.
func TestSaveRow(t *testing.T) {
	xs := []float64{1, 2, 4, 8}
	a := New("(a) methods", "x", "y")
	LogLog2(a)
	for i, m := range method.Methods {
		ys := []float64{1, 2, 3, 4}
		for k := range ys {
			ys[k] *= math.Pow(2, float64(i))
		}
		if err := AddMethod(a, m, xs, ys); err != nil {
			t.Fatal(err)
		}
	}
	b := New("(b) band", "x", "y")
	if err := AddBand(b, "gap", Series(1).Color, xs, []float64{0, 0, 1, 1}, []float64{1, 2, 3, 4}); err != nil {
		t.Fatal(err)
	}
	if err := AddSeries(b, "upper", Series(0), xs, []float64{1, 2, 3, 4}); err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(t.TempDir(), "sub", "row")
	paths, err := SaveRow([]*Plot{a, b}, PanelWidth, PanelHeight, base)
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != len(Formats) {
		t.Fatalf("wrote %v, want one file per format %v", paths, Formats)
	}
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		switch filepath.Ext(path) {
		case ".png":
			img, err := png.Decode(bytes.NewReader(data))
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			wantW := int(math.Round(float64(2*PanelWidth) / 72 * float64(PNGDotsPerIn)))
			if got := img.Bounds().Dx(); got != wantW {
				t.Errorf("%s: width %d px, want %d", path, got, wantW)
			}
			style, _ := MethodStyle(method.FGN)
			fgn := color.RGBAModel.Convert(style.Color).(color.RGBA)
			found := false
			for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y && !found; y++ {
				for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x++ {
					if color.RGBAModel.Convert(img.At(x, y)).(color.RGBA) == fgn {
						found = true
						break
					}
				}
			}
			if !found {
				t.Errorf("%s: no pixel has FGN's colour %v", path, fgn)
			}
		case ".svg":
			if !bytes.HasPrefix(data, []byte("<?xml")) || !bytes.Contains(data, []byte("<svg")) {
				t.Errorf("%s: not an SVG document: %.40q", path, data)
			}
		case ".pdf":
			if !bytes.HasPrefix(data, []byte("%PDF-")) || !bytes.Contains(data[len(data)-32:], []byte("%%EOF")) {
				t.Errorf("%s: not a complete PDF document", path)
			}
		default:
			t.Errorf("unexpected file %s", path)
		}
	}
}

func TestErrors(t *testing.T) {
	p := New("", "", "")
	logPanel := New("", "", "")
	LogLog2(logPanel)
	if err := AddSeries(logPanel, "negative", Series(0), []float64{1, 2}, []float64{-1, 1}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"length mismatch", AddSeries(p, "s", Series(0), []float64{1, 2}, []float64{1}), "2 x values but 1 y values"},
		{"NaN", AddMethod(p, method.SGN, []float64{1, 2}, []float64{1, math.NaN()}), "not finite"},
		{"empty", AddSeries(p, "s", Series(0), nil, nil), "no points"},
		{"unknown method", AddMethod(p, "lbfgs", []float64{1}, []float64{1}), "unknown method"},
		{"band lengths", AddBand(p, "b", Series(0).Color, []float64{1, 2}, []float64{1}, []float64{1, 2}), "1 lower"},
		{"no panels", second(SaveRow(nil, PanelWidth, PanelHeight, filepath.Join(dir, "x"))), "no panels"},
		{"zero size", second(Save(p, 0, PanelHeight, filepath.Join(dir, "x"))), "must be positive"},
		{"log of negative", second(Save(logPanel, PanelWidth, PanelHeight, filepath.Join(dir, "neg"))), "drawing"},
	} {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, tc.err, tc.want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("failed saves left files behind: %v", entries)
	}
}

func second[T any](_ T, err error) error { return err }

// TestTickers checks the labelled ticks of the project's linear (NiceTicks) and log (Decades)
// tickers, and that no tick lies outside the axis range.
func TestTickers(t *testing.T) {
	for _, tc := range []struct {
		ticker gplot.Ticker
		lo, hi float64
		labels []string
	}{
		{NiceTicks{}, 3.2, 38.5, []string{"10", "20", "30"}},
		{NiceTicks{}, 0, 1, []string{"0", "0.5", "1"}},
		{NiceTicks{}, 30, 41, []string{"30", "35", "40"}},
		{NiceTicks{}, 0.31, 0.36, []string{"0.32", "0.34", "0.36"}},
		{NiceTicks{}, -3, 3, []string{"-2", "0", "2"}},
		{Decades{}, 1e-11, 1, []string{"1e-09", "1e-06", "0.001", "1"}},
		{Decades{}, 0.5, 30, []string{"1", "10"}},
		{Decades{}, 0.002, 2000, []string{"0.01", "0.1", "1", "10", "100", "1000"}},
		{Decades{}, 3e4, 2e6, []string{"100000", "1e+06"}},
	} {
		var labels []string
		for _, tick := range tc.ticker.Ticks(tc.lo, tc.hi) {
			if tick.Value < tc.lo || tick.Value > tc.hi {
				t.Errorf("%T [%g, %g]: tick %g outside the range", tc.ticker, tc.lo, tc.hi, tick.Value)
			}
			if tick.Label != "" {
				labels = append(labels, tick.Label)
			}
		}
		if !slices.Equal(labels, tc.labels) {
			t.Errorf("%T [%g, %g]: labels %q, want %q", tc.ticker, tc.lo, tc.hi, labels, tc.labels)
		}
	}
}
