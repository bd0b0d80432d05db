package plot

import (
	"bytes"
	"fmt"
	"image/color"
	"io"
	"math"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/fgn-paper/fgn/internal/atomicfile"
)

// Formats are the file formats every figure is written in, in order: SVG for the web, PNG for
// notebooks and READMEs, PDF (fonts embedded) for LaTeX.
var Formats = []string{"svg", "png", "pdf"}

// Save writes the panel p, of size width × height, to base.svg, base.png and base.pdf, each
// atomically, and returns the paths written.
func Save(p *Plot, width, height vg.Length, base string) ([]string, error) {
	return SaveGrid([][]*Plot{{p}}, width, height, base)
}

// SaveRow writes the panels side by side (a triptych for three) as SaveGrid does.
func SaveRow(panels []*Plot, panelWidth, height vg.Length, base string) ([]string, error) {
	return SaveGrid([][]*Plot{panels}, panelWidth, height, base)
}

// SaveGrid writes the rows of panels, each panel panelWidth × panelHeight, with their data areas
// aligned in rows and columns and each legend where nothing else is drawn (extending a y axis
// upwards where no place is free; see placeLegends), to base.svg, base.png and base.pdf, each
// atomically, and returns the paths written.
func SaveGrid(rows [][]*Plot, panelWidth, panelHeight vg.Length, base string) ([]string, error) {
	if err := checkGrid(rows, panelWidth, panelHeight); err != nil {
		return nil, fmt.Errorf("plot: %s: %w", base, err)
	}
	places, err := placeLegends(rows, panelWidth, panelHeight)
	if err != nil {
		return nil, fmt.Errorf("plot: drawing %s: %w", base, err)
	}
	w, h := gridSize(rows, panelWidth, panelHeight)
	var paths []string
	for _, format := range Formats {
		c, err := newCanvas(format, w, h)
		if err != nil {
			return paths, err
		}
		if _, err := drawGrid(rows, c, places); err != nil {
			return paths, fmt.Errorf("plot: drawing %s: %w", base, err)
		}
		path := base + "." + format
		if err := atomicfile.Write(path, func(w io.Writer) error {
			_, err := c.WriteTo(w)
			return err
		}); err != nil {
			return paths, fmt.Errorf("plot: writing %s: %w", path, err)
		}
		paths = append(paths, path)
	}
	return paths, nil
}

// PNG draws the panels in one row as SaveRow does and returns the PNG image (for notebooks).
func PNG(panels []*Plot, panelWidth, height vg.Length) ([]byte, error) {
	rows := [][]*Plot{panels}
	if err := checkGrid(rows, panelWidth, height); err != nil {
		return nil, fmt.Errorf("plot: %w", err)
	}
	places, err := placeLegends(rows, panelWidth, height)
	if err != nil {
		return nil, fmt.Errorf("plot: drawing: %w", err)
	}
	w, h := gridSize(rows, panelWidth, height)
	c, err := newCanvas("png", w, h)
	if err != nil {
		return nil, err
	}
	if _, err := drawGrid(rows, c, places); err != nil {
		return nil, fmt.Errorf("plot: drawing: %w", err)
	}
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("plot: encoding PNG: %w", err)
	}
	return buf.Bytes(), nil
}

// checkGrid reports a grid that is empty, ragged or holds a nil panel, or a panel size that is
// not positive.
func checkGrid(rows [][]*Plot, panelWidth, panelHeight vg.Length) error {
	if len(rows) == 0 || len(rows[0]) == 0 {
		return fmt.Errorf("no panels")
	}
	for i, row := range rows {
		if len(row) != len(rows[0]) {
			return fmt.Errorf("row %d has %d panels, row 0 has %d", i, len(row), len(rows[0]))
		}
		for j, p := range row {
			if p == nil {
				return fmt.Errorf("panel %d of row %d is nil", j, i)
			}
		}
	}
	if !(panelWidth > 0 && panelHeight > 0) {
		return fmt.Errorf("panel size %v × %v must be positive", panelWidth, panelHeight)
	}
	return nil
}

// gridSize returns the size of the canvas of the rows of panels.
func gridSize(rows [][]*Plot, panelWidth, panelHeight vg.Length) (w, h vg.Length) {
	return panelWidth * vg.Length(len(rows[0])), panelHeight * vg.Length(len(rows))
}

// panelsOf returns the panels of the rows in order, row by row.
func panelsOf(rows [][]*Plot) []*Plot {
	var out []*Plot
	for _, row := range rows {
		out = append(out, row...)
	}
	return out
}

// newCanvas returns a canvas of the format: gonum's SVG canvas with text that keeps its extent
// in any viewer (svgCanvas), gonum's PNG canvas at PNGDotsPerIn, and a PDF canvas embedding
// its Unicode font, keeping translucent colours and writing the same bytes for the same drawing
// (pdfCanvas).
func newCanvas(format string, w, h vg.Length) (vg.CanvasWriterTo, error) {
	switch format {
	case "svg":
		return newSVGCanvas(w, h), nil
	case "png":
		return vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(PNGDotsPerIn))}, nil
	case "pdf":
		return newPDFCanvas(w, h), nil
	}
	return nil, fmt.Errorf("plot: unsupported format %q", format)
}

// drawGrid paints a white background and the rows of panels, their data areas aligned by
// gonum's Align, with each panel's legend at its place (places holds one per panel, row by row;
// none where places is nil or holds nil), and returns the panels' data areas, row by row, in the
// canvas's coordinates. drawGrid draws two kinds of text itself:
//
//   - titles, on one baseline above each row's data areas (Align would otherwise place each at the
//     top of its own, differently sized, tile);
//   - axis labels, centred on the data area as gonum draws them. gonum/plot v0.15.2 reserves room
//     for an axis label around the arithmetic midpoint of the axis range in data coordinates,
//     which on a log axis lies near its far end, so a log panel would get a wide spurious margin;
//     the axes are therefore laid out with a one-space placeholder of the label's height.
//
// gonum/plot panics on some drawing errors (for example a log axis over non-positive data);
// they are returned as errors.
func drawGrid(rows [][]*Plot, c vg.CanvasSizer, places []*legendPlace) (areas []vg.Rectangle, err error) {
	type texts struct {
		title, x, y string
		legend      gplot.Legend
	}
	panels := panelsOf(rows)
	saved := make([]texts, len(panels))
	for i, p := range panels {
		saved[i] = texts{p.Title.Text, p.X.Label.Text, p.Y.Label.Text, p.Legend}
		p.Title.Text = ""
		p.X.Label.Text = placeholder(p.X.Label.Text)
		p.Y.Label.Text = placeholder(p.Y.Label.Text)
		p.Legend = gplot.NewLegend() // no entries: drawn at its place below
	}
	defer func() {
		for i, p := range panels {
			p.Title.Text, p.X.Label.Text, p.Y.Label.Text, p.Legend = saved[i].title, saved[i].x, saved[i].y, saved[i].legend
		}
		if r := recover(); r != nil {
			areas, err = nil, fmt.Errorf("%v", r)
		}
	}()
	dc := draw.New(c)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	// titleSpace is the room above each row of tiles: its titles' height and padding.
	titleSpace := vg.Points(2)
	for i, t := range saved {
		if t.title != "" {
			titleSpace = max(titleSpace, panels[i].Title.TextStyle.Height(t.title)+2*panels[i].Title.Padding)
		}
	}
	tiles := draw.Tiles{Rows: len(rows), Cols: len(rows[0]), PadX: vg.Points(6), PadY: titleSpace + vg.Points(4),
		PadTop: titleSpace, PadBottom: vg.Points(2), PadLeft: vg.Points(2), PadRight: vg.Points(4)}
	canvases := gplot.Align(rows, tiles, dc)
	areas = make([]vg.Rectangle, len(panels))
	for i, p := range panels {
		r, col := i/len(rows[0]), i%len(rows[0])
		tile := canvases[r][col]
		p.Draw(tile)
		data := p.DataCanvas(tile)
		areas[i] = data.Rectangle
		center := data.Center()
		if t := saved[i].title; t != "" {
			style := p.Title.TextStyle
			style.XAlign, style.YAlign = draw.XCenter, draw.YTop
			// Centred on the data area, but moved inwards so that a long title is not cut off.
			half := style.Width(t) / 2
			x := max(dc.Min.X+half, min(dc.Max.X-half, center.X))
			// Below the top of the row's room for titles (Align moves the tiles within it).
			top := tiles.At(dc, col, r).Max.Y + titleSpace
			dc.FillText(style, vg.Point{X: x, Y: top - p.Title.Padding}, t)
		}
		if t := saved[i].x; t != "" {
			style := p.X.Label.TextStyle
			dc.FillText(style, vg.Point{X: center.X, Y: tile.Min.Y + style.FontExtents().Descent}, t)
		}
		if t := saved[i].y; t != "" {
			style := p.Y.Label.TextStyle
			style.Rotation += math.Pi / 2
			x := tile.Min.X + p.Y.Label.TextStyle.Height(t) - style.FontExtents().Descent
			dc.FillText(style, vg.Point{X: x, Y: center.Y}, t)
		}
		if i < len(places) && places[i] != nil {
			p.Legend = saved[i].legend
			drawLegend(p, dc, places[i])
		}
	}
	return areas, nil
}

// placeholder returns a one-space stand-in for a non-empty axis label.
func placeholder(label string) string {
	if label == "" {
		return ""
	}
	return " "
}
