package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fgn-paper/fgn/experiments/mechanism"
	"github.com/fgn-paper/fgn/fgn/backend"
)

func TestFigureErrors(t *testing.T) {
	empty := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"figure"}, "name the figure"},
		{[]string{"figure", "--profile", "quick"}, "name the figure"},
		{[]string{"figure", "nope"}, `unknown figure "nope"`},
		{[]string{"figure", "mechanism", "--profile", "huge"}, `unknown profile "huge"`},
		{[]string{"figure", "mechanism", "--panels", "a,d"}, `unknown panel "d"`},
		{[]string{"figure", "mechanism", "--bogus"}, "flag provided but not defined"},
		{[]string{"figure", "mechanism", "extra"}, `unexpected argument "extra"`},
		{[]string{"figure", "mechanism", "--from-csv", "--out", empty}, "--panels a,b,c"},
		{[]string{"figure", "mechanism", "--panels", "c", "--t-max", "0", "--out", empty}, `invalid value "0" for flag -t-max: want a finite value > 0`},
	} {
		var out, errOut bytes.Buffer
		err := run(tc.args, &out, &errOut)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("run(%q) error = %v, want one containing %q", tc.args, err, tc.want)
		}
	}
}

// TestFigureMechanism computes panels (b) and (c) with the command, reusing a panel (a) CSV
// already in the output directory (written here at test size), and checks what it reports.
func TestFigureMechanism(t *testing.T) {
	dir := t.TempDir()
	cfg := mechanism.PaperStepTime()
	cfg.Profile = "test"
	cfg.Dim, cfg.Batch, cfg.Examples, cfg.Classes, cfg.Steps = 8, 4, 8, []int{2, 3}, 2
	be, err := backend.New()
	if err != nil {
		t.Fatal(err)
	}
	tab, _, err := mechanism.StepTime(be, cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if err := tab.Write(filepath.Join(dir, mechanism.StepTimeFile)); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if err := run([]string{"figure", "mechanism", "--panels", "b,c", "--out", dir}, &out, &errOut); err != nil {
		t.Fatalf("figure mechanism: %v\n%s", err, errOut.String())
	}
	for _, f := range []string{mechanism.TraceFile, mechanism.AgreementFile, mechanism.FigureBase + ".png",
		mechanism.FigureBase + ".svg", mechanism.FigureBase + ".pdf", mechanism.CaptionFile} {
		path := filepath.Join(dir, f)
		if !strings.Contains(out.String(), "wrote "+path) {
			t.Errorf("output does not report %s:\n%s", path, out.String())
		}
		if _, err := os.Stat(path); err != nil {
			t.Error(err)
		}
	}
	// figures/README's "the exact panels only": without panel (a)'s CSV the figure has (b), (c).
	fresh := t.TempDir()
	out.Reset()
	if err := run([]string{"figure", "mechanism", "--panels", "b,c", "--out", fresh}, &out, &errOut); err != nil {
		t.Fatalf("figure mechanism --panels b,c without panel (a)'s CSV: %v\n%s", err, errOut.String())
	}
	if !strings.Contains(out.String(), "panel (a) left out") {
		t.Errorf("--panels b,c without panel (a)'s CSV does not say that (a) is left out:\n%s", out.String())
	}
	out.Reset()
	if err := run([]string{"figure", "mechanism", "--from-csv", "--out", dir}, &out, &errOut); err != nil {
		t.Fatalf("--from-csv: %v", err)
	}
	if strings.Contains(out.String(), "panel (") {
		t.Errorf("--from-csv computed a panel:\n%s", out.String())
	}
}
