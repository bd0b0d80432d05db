// Package plottest checks written figures with poppler's command-line tools (Debian's
// poppler-utils: pdftotext, pdffonts, pdftoppm), as a reader's PDF viewer and text extraction
// see them: the text reads back, every font is embedded with a Unicode map, and translucent
// bands have their colour.
//
// Without the tools a test is skipped, unless FGN_CI is set (.ci/run sets it and .ci/install.sh
// installs poppler-utils), when it fails.
package plottest

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// tool returns the path of a poppler tool, skipping (or, under FGN_CI, failing) the test when
// it is not installed.
func tool(t testing.TB, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	if os.Getenv("FGN_CI") != "" {
		t.Fatalf("%s not found (FGN_CI is set): install poppler-utils (.ci/install.sh does)", name)
	}
	t.Skipf("%s not found: install poppler-utils to check PDFs", name)
	return ""
}

func run(t testing.TB, name string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(tool(t, name), args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.String())
	}
	if stderr.Len() > 0 { // poppler reports damaged documents on stderr and carries on
		t.Errorf("%s %s reported: %s", name, strings.Join(args, " "), stderr.String())
	}
	return out
}

// Text returns the text pdftotext extracts from the PDF at path.
func Text(t testing.TB, path string) string {
	t.Helper()
	return string(run(t, "pdftotext", "-enc", "UTF-8", path, "-"))
}

// Word is a word pdftotext finds on the page, with its box in points from the top left corner.
type Word struct {
	Text                   string
	XMin, YMin, XMax, YMax float64
}

// Words returns the words pdftotext -bbox finds in the PDF at path.
func Words(t testing.TB, path string) []Word {
	t.Helper()
	var doc struct {
		Words []struct {
			XMin float64 `xml:"xMin,attr"`
			YMin float64 `xml:"yMin,attr"`
			XMax float64 `xml:"xMax,attr"`
			YMax float64 `xml:"yMax,attr"`
			Text string  `xml:",chardata"`
		} `xml:"body>doc>page>word"`
	}
	out := run(t, "pdftotext", "-bbox", "-enc", "UTF-8", path, "-")
	if err := xml.Unmarshal(out, &doc); err != nil {
		t.Fatalf("pdftotext -bbox %s: %v", path, err)
	}
	words := make([]Word, len(doc.Words))
	for i, w := range doc.Words {
		words[i] = Word{Text: w.Text, XMin: w.XMin, YMin: w.YMin, XMax: w.XMax, YMax: w.YMax}
	}
	return words
}

// Font is one row of pdffonts' table.
type Font struct {
	Name, Type, Encoding string
	Embedded, Unicode    bool
}

// Fonts returns the fonts pdffonts lists for the PDF at path.
func Fonts(t testing.TB, path string) []Font {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(string(run(t, "pdffonts", path))), "\n")
	if len(lines) < 2 || !strings.HasPrefix(lines[1], "---") {
		t.Fatalf("pdffonts %s: unexpected output:\n%s", path, strings.Join(lines, "\n"))
	}
	// Columns: name, type (may contain a space), encoding, emb, sub, uni, object ID (two
	// fields); read from the right.
	var fonts []Font
	for _, line := range lines[2:] {
		f := strings.Fields(line)
		if len(f) < 8 {
			t.Fatalf("pdffonts %s: unexpected row %q", path, line)
		}
		n := len(f)
		fonts = append(fonts, Font{Name: f[0], Type: strings.Join(f[1:n-6], " "), Encoding: f[n-6],
			Embedded: f[n-5] == "yes", Unicode: f[n-3] == "yes"})
	}
	return fonts
}

// CheckPDF checks the PDF at path as a reader sees it: pdftotext gives back every one of the
// labels (each as one run of text), pdffonts lists at least one font and every font is
// embedded with a Unicode map, and the page drawn by pdftoppm has, for each of bands (the
// colours as drawn over white, plot.BandColor), at least minBandPixels pixels of that colour
// within 3/255 in each channel.
func CheckPDF(t testing.TB, path string, labels []string, bands []color.Color) {
	t.Helper()
	text := Text(t, path)
	for _, l := range labels {
		if !strings.Contains(text, l) {
			t.Errorf("%s: pdftotext gives no %q; it gives:\n%s", path, l, text)
		}
	}
	fonts := Fonts(t, path)
	if len(fonts) == 0 {
		t.Errorf("%s: pdffonts lists no font", path)
	}
	for _, f := range fonts {
		if !f.Embedded || !f.Unicode {
			t.Errorf("%s: font %s (%s, %s) embedded=%v, Unicode map=%v; want both", path, f.Name, f.Type, f.Encoding, f.Embedded, f.Unicode)
		}
	}
	if len(bands) == 0 {
		return
	}
	img := Render(t, path, 100)
	for _, want := range bands {
		if n := CountColour(img, want, 3); n < minBandPixels {
			t.Errorf("%s drawn by pdftoppm: %d pixels of band colour %v (±3), want at least %d", path, n, want, minBandPixels)
		}
	}
}

// minBandPixels is the fewest pixels of a band's colour that CheckPDF accepts at 100 dpi: a
// band 1 pt high and 20 pt wide.
const minBandPixels = 25

// Render draws the first page of the PDF at path with pdftoppm at dpi and returns the image.
func Render(t testing.TB, path string, dpi int) image.Image {
	t.Helper()
	out := filepath.Join(t.TempDir(), "page")
	run(t, "pdftoppm", "-png", "-singlefile", "-r", fmt.Sprint(dpi), path, out)
	data, err := os.ReadFile(out + ".png")
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("pdftoppm's drawing of %s: %v", path, err)
	}
	return img
}

// CountColour returns the number of pixels of img within tol (of 255) of want in each channel.
func CountColour(img image.Image, want color.Color, tol int) int {
	n := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if Near(img.At(x, y), want, tol) {
				n++
			}
		}
	}
	return n
}

// Near reports whether the colours (without their opacity) are within tol (of 255) in each
// channel.
func Near(a, b color.Color, tol int) bool {
	p, q := color.NRGBAModel.Convert(a).(color.NRGBA), color.NRGBAModel.Convert(b).(color.NRGBA)
	near := func(u, v uint8) bool { return int(u)-int(v) <= tol && int(v)-int(u) <= tol }
	return near(p.R, q.R) && near(p.G, q.G) && near(p.B, q.B)
}
