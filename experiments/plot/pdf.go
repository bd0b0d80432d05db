package plot

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
	"time"

	pdf "codeberg.org/go-pdf/fpdf"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
)

// pdfDate is the creation and modification date written into every PDF, fixed so that the same
// drawing gives the same bytes.
var pdfDate = time.Unix(0, 0).UTC()

// pdfCanvas is a vg.Canvas that writes one PDF page through fpdf, as gonum's vgpdf does, but
// so that the document is read the same by every PDF reader:
//
//   - text is set in the TrueType font it was laid out with, embedded as a CID font (Identity-H
//     encoding, only the glyphs used) with a ToUnicode map, so that every character the font has
//     is drawn and text extraction (pdftotext, copy and paste) gives back the Unicode text;
//     vgpdf encodes text in code page 1252, which has no Greek letters, †, − or subscripts;
//   - a colour is written with its components unpremultiplied and its alpha as the opacity of
//     fills and strokes; vgpdf writes the alpha-premultiplied components of color.Color.RGBA, so
//     every translucent colour comes out darkened towards black;
//   - the creation and modification dates are pdfDate and the document's resource catalogues are
//     sorted, so that the same drawing gives the same bytes.
//
// Its coordinates are vg's (origin bottom left, y up), mapped onto fpdf's (origin top left,
// y down) by one transformation opened with the page.
type pdfCanvas struct {
	doc    *pdf.Fpdf
	w, h   vg.Length
	stack  []pdfContext
	fonts  map[string]bool // the fpdf family names of the fonts added
	images int
}

// pdfContext is the drawing state saved by Push and restored by Pop.
type pdfContext struct{ lineWidth vg.Length }

func newPDFCanvas(w, h vg.Length) *pdfCanvas {
	doc := pdf.NewCustom(&pdf.InitType{UnitStr: "pt", Size: pdf.SizeType{Wd: w.Points(), Ht: h.Points()}})
	doc.SetCatalogSort(true)
	doc.SetCreationDate(pdfDate)
	doc.SetModificationDate(pdfDate)
	doc.SetMargins(0, 0, 0)
	doc.SetAutoPageBreak(false, 0)
	doc.AddPage()
	c := &pdfCanvas{doc: doc, w: w, h: h, stack: []pdfContext{{}}, fonts: map[string]bool{}}
	c.Push() // vg's coordinates: origin at the bottom left, y up
	c.Translate(vg.Point{Y: h})
	c.Scale(1, -1)
	vg.Initialize(c)
	return c
}

func (c *pdfCanvas) Size() (w, h vg.Length) { return c.w, c.h }

func (c *pdfCanvas) SetLineWidth(w vg.Length) {
	c.stack[len(c.stack)-1].lineWidth = w
	c.doc.SetLineWidth(w.Points())
}

func (c *pdfCanvas) SetLineDash(dashes []vg.Length, offset vg.Length) {
	pattern := make([]float64, len(dashes))
	for i, d := range dashes {
		pattern[i] = d.Points()
	}
	c.doc.SetDashPattern(pattern, offset.Points())
}

// SetColor sets the colour of strokes, fills and text: its unpremultiplied components, and its
// alpha as their opacity.
func (c *pdfCanvas) SetColor(clr color.Color) {
	if clr == nil {
		clr = color.Black
	}
	n := color.NRGBAModel.Convert(clr).(color.NRGBA)
	r, g, b := int(n.R), int(n.G), int(n.B)
	c.doc.SetDrawColor(r, g, b)
	c.doc.SetFillColor(r, g, b)
	c.doc.SetTextColor(r, g, b)
	c.doc.SetAlpha(float64(n.A)/255, "Normal")
}

func (c *pdfCanvas) Rotate(rad float64) { c.doc.TransformRotate(-rad*180/math.Pi, 0, 0) }

func (c *pdfCanvas) Translate(pt vg.Point) { c.doc.TransformTranslate(pt.X.Points(), pt.Y.Points()) }

func (c *pdfCanvas) Scale(x, y float64) { c.doc.TransformScale(100*x, 100*y, 0, 0) }

func (c *pdfCanvas) Push() {
	c.stack = append(c.stack, c.stack[len(c.stack)-1])
	c.doc.TransformBegin()
}

func (c *pdfCanvas) Pop() {
	c.stack = c.stack[:len(c.stack)-1]
	c.doc.TransformEnd()
}

func (c *pdfCanvas) Stroke(p vg.Path) {
	if c.stack[len(c.stack)-1].lineWidth > 0 {
		c.path(p, "D")
	}
}

func (c *pdfCanvas) Fill(p vg.Path) { c.path(p, "F") }

// path adds p to the page and strokes ("D") or fills ("F") it.
func (c *pdfCanvas) path(p vg.Path, style string) {
	var start vg.Point // of the current subpath, for CloseComp
	for _, comp := range p {
		switch comp.Type {
		case vg.MoveComp:
			start = comp.Pos
			c.doc.MoveTo(comp.Pos.X.Points(), comp.Pos.Y.Points())
		case vg.LineComp:
			c.doc.LineTo(comp.Pos.X.Points(), comp.Pos.Y.Points())
		case vg.ArcComp:
			c.arc(comp, style)
		case vg.CurveComp:
			switch len(comp.Control) {
			case 1:
				c.doc.CurveTo(comp.Control[0].X.Points(), comp.Control[0].Y.Points(), comp.Pos.X.Points(), comp.Pos.Y.Points())
			case 2:
				c.doc.CurveBezierCubicTo(comp.Control[0].X.Points(), comp.Control[0].Y.Points(),
					comp.Control[1].X.Points(), comp.Control[1].Y.Points(), comp.Pos.X.Points(), comp.Pos.Y.Points())
			default:
				panic(fmt.Sprintf("plot: PDF: a curve with %d control points", len(comp.Control)))
			}
		case vg.CloseComp:
			c.doc.LineTo(start.X.Points(), start.Y.Points())
			c.doc.ClosePath()
		default:
			panic(fmt.Sprintf("plot: PDF: unknown path component %d", comp.Type))
		}
	}
	c.doc.DrawPath(style)
}

// arc adds the arc comp: a line to its start, the arc, and a move to its end (vg's arcs
// continue the current subpath from the arc's end point).
func (c *pdfCanvas) arc(comp vg.PathComp, style string) {
	at := func(angle float64) (float64, float64) {
		return (comp.Pos.X + comp.Radius*vg.Length(math.Cos(angle))).Points(),
			(comp.Pos.Y + comp.Radius*vg.Length(math.Sin(angle))).Points()
	}
	c.doc.LineTo(at(comp.Start))
	r := comp.Radius.Points()
	const deg = 180 / math.Pi
	c.doc.Arc(comp.Pos.X.Points(), comp.Pos.Y.Points(), r, r, comp.Angle*deg, comp.Start*deg, (comp.Start+comp.Angle)*deg, style)
	c.doc.MoveTo(at(comp.Start + comp.Angle))
}

// FillString draws str with its baseline starting at pt, in the font of fnt, added to the
// document (as a UTF-8 TrueType font) on its first use.
func (c *pdfCanvas) FillString(fnt font.Face, pt vg.Point, str string) {
	if fnt.Font.Size == 0 {
		return
	}
	family := fnt.Name()
	if !c.fonts[family] {
		var ttf bytes.Buffer
		if _, err := fnt.Face.WriteSourceTo(nil, &ttf); err != nil {
			panic(fmt.Sprintf("plot: PDF: reading font %s: %v", family, err))
		}
		c.doc.AddUTF8FontFromBytes(family, "", ttf.Bytes())
		c.fonts[family] = true
	}
	c.doc.SetFont(family, "", fnt.Font.Size.Points())
	c.Push()
	defer c.Pop()
	c.Translate(pt)
	c.Scale(1, -1) // fpdf sets text upright in its own, y-down, coordinates
	c.doc.Text(0, 0, str)
}

// DrawImage draws img scaled into rect, as an embedded PNG.
func (c *pdfCanvas) DrawImage(rect vg.Rectangle, img image.Image) {
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		panic(fmt.Sprintf("plot: PDF: encoding an image: %v", err))
	}
	c.images++
	name := fmt.Sprintf("image%03d.png", c.images)
	opts := pdf.ImageOptions{ImageType: "png"}
	c.doc.RegisterImageOptionsReader(name, opts, &buf)
	size := rect.Size()
	c.Push()
	defer c.Pop()
	c.Translate(vg.Point{X: rect.Min.X, Y: rect.Max.Y})
	c.Scale(1, -1) // fpdf draws images downwards from their top left corner
	c.doc.ImageOptions(name, 0, 0, size.X.Points(), size.Y.Points(), false, opts, 0, "")
}

// WriteTo closes the page and writes the document to w; the canvas cannot be drawn on after.
func (c *pdfCanvas) WriteTo(w io.Writer) (int64, error) {
	c.Pop()
	cw := &countingWriter{w: w}
	err := c.doc.Output(cw)
	return cw.n, err
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (cw *countingWriter) Write(p []byte) (int, error) {
	n, err := cw.w.Write(p)
	cw.n += int64(n)
	return n, err
}
