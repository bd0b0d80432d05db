package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/fgn-paper/fgn/experiments/method"
	"github.com/fgn-paper/fgn/experiments/plot"
	"github.com/fgn-paper/fgn/experiments/plot/plottest"
)

// TestCommittedFigure redraws bench/step_scale from its committed CSV file and checks that the
// committed figure is that drawing, byte for byte in every format (a redraw leaves the checkout
// as it was), that its PDF reads back every legend label, axis label and title with its
// symbols and embeds its fonts with a Unicode map, and that its legend covers no data.
func TestCommittedFigure(t *testing.T) {
	const csvPath, base = "../step_scale.csv", "../step_scale"
	out := filepath.Join(t.TempDir(), "step_scale")
	if err := run(csvPath, out); err != nil {
		t.Fatal(err)
	}
	for _, ext := range plot.Formats {
		got, err := os.ReadFile(out + "." + ext)
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(base + "." + ext)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s.%s differs from its redraw from %s: go run ./bench/scalefig redraws it", base, ext, csvPath)
		}
	}
	labels := []string{"(a) classes, b = 512", "(b) batch, C = 4096", "number of classes C", "batch size b",
		"time per step (ms)", "its PyTorch peer (thin, ×)", "one b×d×C sgemm (OpenBLAS)"}
	for _, m := range method.Methods {
		labels = append(labels, m.Label())
	}
	plottest.CheckPDF(t, out+".pdf", labels, nil)
	panels, err := figure(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := plot.CheckLegends([][]*plot.Plot{panels}, panelWidth, panelHeight); err != nil {
		t.Error(err)
	}
}
