// Command scalefig draws the step times of `bench/peer.py --scale` from the CSV file it writes
// (bench/step_scale.csv): two log-log panels, ms per step against the number of classes C (at
// b=512) and against the batch size b (at C=4096), one curve per method for the Go step in the
// method's style, its PyTorch peer as a thin line with crosses in the same colour, and the sgemm time of one b×d×C
// product, whose multiples are the methods' floors. It writes base.svg, base.png and base.pdf.
//
//	go run ./bench/scalefig -csv bench/step_scale.csv -out bench/step_scale
package main

import (
	"flag"
	"fmt"
	"image/color"
	"os"
	"slices"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/fgn-paper/fgn/experiments/method"
	"github.com/fgn-paper/fgn/experiments/plot"
	"github.com/fgn-paper/fgn/experiments/report"
)

// The axes of the figure: C varies at classAxisBatch, b at batchAxisClasses.
const classAxisBatch, batchAxisClasses = 512, 4096

func main() {
	csvPath := flag.String("csv", "bench/step_scale.csv", "the CSV file bench/peer.py --scale wrote")
	out := flag.String("out", "bench/step_scale", "base path of the figure (.svg, .png and .pdf are written)")
	flag.Parse()
	if err := run(*csvPath, *out); err != nil {
		fmt.Fprintln(os.Stderr, "scalefig:", err)
		os.Exit(1)
	}
}

// The size of each panel.
var panelWidth, panelHeight = plot.PanelWidth * 1.25, plot.PanelHeight * 1.25

func run(csvPath, out string) error {
	panels, err := figure(csvPath)
	if err != nil {
		return err
	}
	_, err = plot.SaveRow(panels, panelWidth, panelHeight, out)
	return err
}

// figure returns the two panels drawn from the CSV file.
func figure(csvPath string) ([]*plot.Plot, error) {
	t, err := report.Read(csvPath)
	if err != nil {
		return nil, err
	}
	rows, err := readRows(t)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", csvPath, err)
	}
	byC, err := panel(rows, "(a) classes, b = 512", "number of classes C", true,
		func(r row) (float64, bool) { return float64(r.classes), r.batch == classAxisBatch })
	if err != nil {
		return nil, err
	}
	byB, err := panel(rows, "(b) batch, C = 4096", "batch size b", false,
		func(r row) (float64, bool) { return float64(r.batch), r.classes == batchAxisClasses })
	if err != nil {
		return nil, err
	}
	return []*plot.Plot{byC, byB}, nil
}

// row is one (b, C, method) cell of the CSV file.
type row struct {
	batch, classes     int
	method             method.Method
	goMS, torchMS, one float64
}

func readRows(t *report.Table) ([]row, error) {
	mc, err := t.Column("method")
	if err != nil {
		return nil, err
	}
	cols := map[string][]float64{}
	for _, name := range []string{"batch", "classes", "go_ms", "torch_ms", "sgemm_ms"} {
		if cols[name], err = t.Floats(name); err != nil {
			return nil, err
		}
	}
	rows := make([]row, len(t.Rows))
	for i, r := range t.Rows {
		m, err := method.ParseMethod(r[mc])
		if err != nil {
			return nil, fmt.Errorf("row %d: %w", i, err)
		}
		rows[i] = row{batch: int(cols["batch"][i]), classes: int(cols["classes"][i]), method: m,
			goMS: cols["go_ms"][i], torchMS: cols["torch_ms"][i], one: cols["sgemm_ms"][i]}
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("no rows")
	}
	return rows, nil
}

// peerStyle is the style of the PyTorch curve of a method drawn in clr: a thin line in a paler
// clr with crosses at the measurements, unlike every method's line.
func peerStyle(clr color.Color) plot.Style {
	return plot.Style{Color: clr, Width: vg.Points(0.6), Glyph: draw.CrossGlyph{}}
}

// panel draws the rows on which x reports true against x, in increasing x, with the legend when
// legend is set.
func panel(rows []row, title, xLabel string, legend bool, x func(row) (float64, bool)) (*plot.Plot, error) {
	var on []row
	for _, r := range rows {
		if _, ok := x(r); ok {
			on = append(on, r)
		}
	}
	slices.SortStableFunc(on, func(a, b row) int {
		xa, _ := x(a)
		xb, _ := x(b)
		switch {
		case xa < xb:
			return -1
		case xa > xb:
			return 1
		}
		return 0
	})
	p := plot.New(title, xLabel, "time per step (ms)")
	plot.LogLog2(p)
	p.Legend.Top, p.Legend.Left = false, false
	var sgemmX, sgemmY []float64
	for _, r := range on {
		if xv, _ := x(r); len(sgemmX) == 0 || sgemmX[len(sgemmX)-1] != xv {
			sgemmX, sgemmY = append(sgemmX, xv), append(sgemmY, r.one)
		}
	}
	if len(sgemmX) < 2 {
		return nil, fmt.Errorf("panel %q: %d shapes, need at least 2", title, len(sgemmX))
	}
	for _, m := range method.Methods {
		var xs, goMS, torchMS []float64
		for _, r := range on {
			if r.method == m {
				xv, _ := x(r)
				xs, goMS, torchMS = append(xs, xv), append(goMS, r.goMS), append(torchMS, r.torchMS)
			}
		}
		if len(xs) == 0 {
			continue
		}
		style, _ := plot.MethodStyle(m)
		label := ""
		if legend {
			label = m.Label()
		}
		if err := plot.AddSeries(p, label, style, xs, goMS); err != nil {
			return nil, err
		}
		if err := plot.AddSeries(p, "", peerStyle(plot.Translucent(style.Color, 0.7)), xs, torchMS); err != nil {
			return nil, err
		}
	}
	sgemmLabel := ""
	if legend {
		// The PyTorch curves share one legend entry, drawn in black.
		plot.AddLegendEntry(p, "its PyTorch peer (thin, ×)", peerStyle(plot.Series(3).Color))
		sgemmLabel = "one b×d×C sgemm (OpenBLAS)"
	}
	if err := plot.AddSeries(p, sgemmLabel, plot.Series(0), sgemmX, sgemmY); err != nil {
		return nil, err
	}
	return p, nil
}
