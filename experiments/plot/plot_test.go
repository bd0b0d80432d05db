package plot

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"image/color"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/fgn-paper/fgn/experiments/method"
	"github.com/fgn-paper/fgn/experiments/plot/plottest"
	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
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

// TestSaveRow writes a row of two panels, with Greek letters and symbols in their text and a
// translucent band, and checks every file as a reader sees it: the PNG decodes at the
// configured resolution with FGN's exact colour and the band's colour over white; the SVG is
// XML whose every text element states its laid-out width and a fallback family list; the PDF
// gives its text back through pdftotext, embeds its fonts with a Unicode map and, drawn by
// pdftoppm, has the band's colour. Writing the row again gives the same bytes in every format.
func TestSaveRow(t *testing.T) {
	xs := []float64{1, 2, 4, 8}
	a := New("(a) methods, λ = 0.1", "number of classes C", "time per step (ms)")
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
	b := New("(b) band", "competitor dispersion ξ", "trace")
	band := Series(1).Color
	if err := AddBand(b, "gap p†ξ", band, xs, []float64{0, 0, 1, 1}, []float64{1, 2, 3, 4}); err != nil {
		t.Fatal(err)
	}
	if err := AddSeries(b, "full 2q + p†²ξ, b×d×C, q(2−ξ)", Series(0), xs, []float64{1, 2, 3, 4}); err != nil {
		t.Fatal(err)
	}
	labels := []string{"(a) methods, λ = 0.1", "competitor dispersion ξ", "time per step (ms)", "gap p†ξ",
		"full 2q + p†²ξ, b×d×C, q(2−ξ)", method.FGN.Label()}
	dir := t.TempDir()
	paths, err := SaveRow([]*Plot{a, b}, PanelWidth, PanelHeight, filepath.Join(dir, "sub", "row"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != len(Formats) {
		t.Fatalf("wrote %v, want one file per format %v", paths, Formats)
	}
	again, err := SaveRow([]*Plot{a, b}, PanelWidth, PanelHeight, filepath.Join(dir, "again"))
	if err != nil {
		t.Fatal(err)
	}
	for i, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if other, err := os.ReadFile(again[i]); err != nil || !bytes.Equal(data, other) {
			t.Errorf("%s and %s, the same row written twice, differ (%v)", path, again[i], err)
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
			for _, want := range []color.Color{style.Color, BandColor(band)} {
				if n := plottest.CountColour(img, want, 0); n == 0 {
					t.Errorf("%s: no pixel has the colour %v", path, want)
				}
			}
		case ".svg":
			checkSVG(t, path, data)
		case ".pdf":
			if !bytes.HasPrefix(data, []byte("%PDF-")) || !bytes.Contains(data[len(data)-32:], []byte("%%EOF")) {
				t.Errorf("%s: not a complete PDF document", path)
			}
			plottest.CheckPDF(t, path, labels, []color.Color{BandColor(band)})
		default:
			t.Errorf("unexpected file %s", path)
		}
	}
}

// checkSVG checks that an SVG document is well-formed XML and that each of its text elements
// has a textLength equal to its text's width in the project font and a font-family list that
// starts with the project font and ends with the generic serif family.
func checkSVG(t *testing.T, path string, data []byte) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(data))
	texts := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s: not XML: %v", path, err)
		}
		start, ok := tok.(xml.StartElement)
		if !ok || start.Name.Local != "text" {
			continue
		}
		var content string
		if err := dec.DecodeElement(&content, &start); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		texts++
		attrs := map[string]string{}
		for _, a := range start.Attr {
			attrs[a.Name.Local] = a.Value
		}
		family := regexp.MustCompile(`font-family:([^;]*)`).FindStringSubmatch(attrs["style"])
		if family == nil || !strings.HasPrefix(family[1], "'Liberation Serif',") || !strings.HasSuffix(family[1], ",serif") {
			t.Errorf("%s: text %q: font families %q, want 'Liberation Serif' first and serif last", path, content, family)
		}
		size := regexp.MustCompile(`font-size:([0-9.]+)px`).FindStringSubmatch(attrs["style"])
		if size == nil {
			t.Fatalf("%s: text %q has no font size", path, content)
		}
		pt, _ := strconv.ParseFloat(size[1], 64)
		face := font.DefaultCache.Lookup(textFont(vg.Length(pt)), vg.Length(pt))
		want := float64(face.Width(content))
		got, err := strconv.ParseFloat(attrs["textLength"], 64)
		if err != nil || math.Abs(got-want) > 1e-3*want+1e-6 || attrs["lengthAdjust"] != "spacingAndGlyphs" {
			t.Errorf("%s: text %q: textLength %q lengthAdjust %q, want %.6g (±0.1%%) and spacingAndGlyphs",
				path, content, attrs["textLength"], attrs["lengthAdjust"], want)
		}
	}
	if texts == 0 {
		t.Errorf("%s: no text elements", path)
	}
}

// TestSaveGrid writes two rows of two panels and checks the drawing's size, and that in the PDF,
// read back by pdftotext with its words' boxes, every title lies above its own panel's x label
// and below the x label of the panel above.
func TestSaveGrid(t *testing.T) {
	var rows [][]*Plot
	for r := range 2 {
		var row []*Plot
		for c := range 2 {
			p := New(fmt.Sprintf("T%d%d", r, c), fmt.Sprintf("X%d%d", r, c), "y")
			if err := AddSeries(p, "", Series(c), []float64{0, 1}, []float64{0, 1}); err != nil {
				t.Fatal(err)
			}
			row = append(row, p)
		}
		rows = append(rows, row)
	}
	paths, err := SaveGrid(rows, PanelWidth, PanelHeight, filepath.Join(t.TempDir(), "grid"))
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(paths[1])
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := img.Bounds().Dy(), int(math.Round(float64(2*PanelHeight)/72*float64(PNGDotsPerIn))); got != want {
		t.Errorf("%s: height %d px, want %d", paths[1], got, want)
	}
	tops := map[string]float64{} // of each word's box, from the top of the page
	for _, w := range plottest.Words(t, paths[2]) {
		tops[w.Text] = w.YMin
	}
	for c := range 2 {
		order := []string{fmt.Sprintf("T0%d", c), fmt.Sprintf("X0%d", c), fmt.Sprintf("T1%d", c), fmt.Sprintf("X1%d", c)}
		for k, word := range order {
			if _, ok := tops[word]; !ok {
				t.Fatalf("%s: pdftotext gives no word %q", paths[2], word)
			}
			if k > 0 && !(tops[order[k-1]] < tops[word]) {
				t.Errorf("%s: %q (top %.1f pt) is not above %q (top %.1f pt)", paths[2], order[k-1], tops[order[k-1]], word, tops[word])
			}
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
		{"ragged grid", second(SaveGrid([][]*Plot{{p, p}, {p}}, PanelWidth, PanelHeight, filepath.Join(dir, "x"))), "row 1 has 1 panels, row 0 has 2"},
		{"nil panel", second(SaveGrid([][]*Plot{{p}, {nil}}, PanelWidth, PanelHeight, filepath.Join(dir, "x"))), "panel 0 of row 1 is nil"},
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
