package mechanism

import (
	"bytes"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fgn-paper/fgn/experiments/plot"
	"github.com/fgn-paper/fgn/experiments/report"
	"github.com/fgn-paper/fgn/internal/mdtext"
)

// writeTinyTables writes the three panel tables, at test sizes, into dir.
func writeTinyTables(t *testing.T, dir string) {
	t.Helper()
	stepTime, _, err := StepTime(testBackend, tinyStepTime(t), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	trace, err := Trace(testBackend, TraceConfig{PStar: 0.6, Classes: 10, Points: 5})
	if err != nil {
		t.Fatal(err)
	}
	agreement, err := Agreement(testBackend, AgreementConfig{Classes: 10, PStar: 0.7, Eta: 1.25, Beta: 3, TMax: 1,
		Scales: []float64{0.01, 0.1, 1}, Points: 5})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for name, tab := range map[string]interface {
		Write(string) error
	}{StepTimeFile: stepTime, TraceFile: trace, AgreementFile: agreement} {
		switch name {
		case StepTimeFile:
			report.Provenance(stepTime, testBackend, "test", "go test", now)
		case TraceFile:
			report.Provenance(trace, testBackend, "n/a", "go test", now)
		default:
			report.Provenance(agreement, testBackend, "n/a", "go test", now)
		}
		if err := tab.Write(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestFigureFromCSV draws the triptych and its caption from CSV files alone.
func TestFigureFromCSV(t *testing.T) {
	dir := t.TempDir()
	writeTinyTables(t, dir)
	tables, err := ReadTables(dir)
	if err != nil {
		t.Fatal(err)
	}
	paths, err := Figure(tables, dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{FigureBase + ".svg", FigureBase + ".png", FigureBase + ".pdf", CaptionFile}
	if len(paths) != len(want) {
		t.Fatalf("wrote %v, want %v", paths, want)
	}
	for i, p := range paths {
		if filepath.Base(p) != want[i] {
			t.Errorf("wrote %s, want %s", p, want[i])
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, FigureBase+".png"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := png.Decode(bytes.NewReader(data)); err != nil {
		t.Fatalf("PNG does not decode: %v", err)
	}
	caption, err := os.ReadFile(filepath.Join(dir, CaptionFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"Profile test", "FGN (closed-form Gram)/SGN median step-time ratio", "FGN (matrix-free)/SGN", `t\_max=1`,
		"`C=10 p_star=0.7 eta=1.25 beta=3 a_star=(-1,eta) a_j=(1,beta*t_j) rho(alpha)=(1-alpha)e1+alpha*1/(C-1) points=5`", mdtext.Escape(report.Device())} {
		if !strings.Contains(string(caption), s) {
			t.Errorf("caption lacks %q:\n%s", s, caption)
		}
	}
	for _, p := range mdtext.StrayEmphasis(string(caption)) {
		t.Errorf("caption: %s", p)
	}
}

// TestFigureWithoutPanels removes panel CSV files: without panel (a)'s the figure has panels
// (b) and (c) and its caption says (a) is left out; without any it is an error, as is a CSV
// file that cannot be read.
func TestFigureWithoutPanels(t *testing.T) {
	dir := t.TempDir()
	writeTinyTables(t, dir)
	if err := os.Remove(filepath.Join(dir, StepTimeFile)); err != nil {
		t.Fatal(err)
	}
	tables, err := ReadTables(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := tables.Missing(); len(got) != 1 || got[0] != "a" {
		t.Errorf("Missing() = %q, want [a]", got)
	}
	if _, err := Figure(tables, dir); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, FigureBase+".png"))
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := img.Bounds().Dx(), int(math.Round(float64(2*plot.PanelWidth)/72*float64(plot.PNGDotsPerIn))); got != want {
		t.Errorf("figure without panel (a): %d px wide, want two panels' %d", got, want)
	}
	caption, err := os.ReadFile(filepath.Join(dir, CaptionFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Panel (a) is left out", "--panels a", "(b) Output-space traces", "(c) Fraction R"} {
		if !strings.Contains(string(caption), want) {
			t.Errorf("caption lacks %q:\n%s", want, caption)
		}
	}
	if strings.Contains(string(caption), "(a) Steady-state") {
		t.Errorf("caption describes the missing panel (a):\n%s", caption)
	}

	if err := os.WriteFile(filepath.Join(dir, TraceFile), []byte("not,a\ntable"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadTables(dir); err == nil || !strings.Contains(err.Error(), "panel (b) data") {
		t.Errorf("ReadTables with an unreadable trace CSV: error %v, want one naming panel (b)", err)
	}
	for _, f := range []string{TraceFile, AgreementFile} {
		if err := os.Remove(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ReadTables(dir); err == nil || !strings.Contains(err.Error(), "--panels a,b,c") {
		t.Errorf("ReadTables without any CSV: error %v, want one naming --panels a,b,c", err)
	}
}
