package plot

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"

	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// serifFallbacks are the families an SVG viewer may set the text in when it lacks Liberation
// Serif: metric-compatible clones of Times first (same advance widths), then the generic family.
const serifFallbacks = `'Times New Roman',Times,Tinos,'Nimbus Roman','Nimbus Roman No9 L','TeX Gyre Termes',serif`

// svgCanvas is gonum's SVG canvas with text that keeps its laid-out extent in any viewer: each
// text element names the project font followed by serifFallbacks, and states the width it was
// laid out with (textLength, lengthAdjust="spacingAndGlyphs"), so that a viewer setting it in
// another font scales it to that width instead of running it into the line samples or data
// beside it. The text stays text (searchable, selectable), not outlines.
type svgCanvas struct {
	*vgsvg.Canvas
	widths []vg.Length // of the strings drawn, in order
}

func newSVGCanvas(w, h vg.Length) *svgCanvas { return &svgCanvas{Canvas: vgsvg.New(w, h)} }

func (c *svgCanvas) FillString(fnt font.Face, pt vg.Point, str string) {
	c.widths = append(c.widths, fnt.Width(str))
	c.Canvas.FillString(fnt, pt, str)
}

// WriteTo writes the SVG document with the text elements completed as svgCanvas says.
func (c *svgCanvas) WriteTo(w io.Writer) (int64, error) {
	var doc bytes.Buffer
	if _, err := c.Canvas.WriteTo(&doc); err != nil {
		return 0, err
	}
	parts := strings.Split(doc.String(), "<text ")
	if len(parts)-1 != len(c.widths) {
		return 0, fmt.Errorf("plot: SVG: %d text elements for %d strings drawn", len(parts)-1, len(c.widths))
	}
	var out strings.Builder
	out.WriteString(parts[0])
	for i, part := range parts[1:] {
		family := strings.Index(part, "font-family:")
		end := strings.IndexByte(part[max(family, 0):], ';')
		if family < 0 || end < 0 {
			return 0, fmt.Errorf("plot: SVG: text element %d names no font family", i)
		}
		end += family
		name := part[family+len("font-family:") : end]
		fmt.Fprintf(&out, `<text textLength="%s" lengthAdjust="spacingAndGlyphs" `, strconv.FormatFloat(c.widths[i].Points(), 'g', 6, 64))
		out.WriteString(part[:family])
		fmt.Fprintf(&out, "font-family:'%s',%s", name, serifFallbacks)
		out.WriteString(part[end:])
	}
	n, err := io.WriteString(w, out.String())
	return int64(n), err
}
