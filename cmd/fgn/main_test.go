package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fgn-paper/fgn/experiments/report"
	"github.com/fgn-paper/fgn/experiments/train"
	"github.com/fgn-paper/fgn/features"
)

func TestRunErrors(t *testing.T) {
	dir := t.TempDir()
	good, err := train.GaussianMixture(1, 0, 20, 3, 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	gx, gy := filepath.Join(dir, "x.npy"), filepath.Join(dir, "y.npy")
	if err := good.Save(gx, gy); err != nil {
		t.Fatal(err)
	}
	// Features whose last value is a NaN (float32 bits 0x7fc00000, little-endian).
	bx, by := filepath.Join(dir, "bad_x.npy"), gy
	raw := mustRead(t, gx)
	copy(raw[len(raw)-4:], []byte{0, 0, 0xc0, 0x7f})
	if err := os.WriteFile(bx, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"nope"}, "unknown subcommand"},
		{[]string{"train", "--bogus"}, "flag provided but not defined"},
		{[]string{"train", "--method", "newton"}, `unknown method "newton"`},
		{[]string{"train", "--train-features", filepath.Join(dir, "missing.npy"), "--train-labels", gy}, "no such file"},
		{[]string{"train", "--train-features", gy, "--train-labels", gy}, "features must be float32 or float64"},
		{[]string{"train", "--train-features", gx, "--train-labels", gy, "--classes", "2"}, "outside [0, 2)"},
		{[]string{"train", "--train-features", bx, "--train-labels", by}, "must be finite"},
		{[]string{"train", "--train-features", gx, "--train-labels", gy, "--batch", "100"}, "batch size 100 is larger than"},
		{[]string{"train", "--train-features", gx}, "go together"},
		{[]string{"train", "--classes", "1"}, "at least 2 classes"},
		{[]string{"train", "--alpha", "-1", "--examples", "64", "--dim", "2", "--batch", "8"}, "step size α"},
		{[]string{"train", "--backend", "tpu"}, `unknown backend "tpu"`},
	} {
		var stdout, stderr bytes.Buffer
		err := run(append(tc.args, "--out", out), &stdout, &stderr)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("run(%q) error = %v, want one containing %q", tc.args, err, tc.want)
		}
	}
	if entries, err := os.ReadDir(out); err == nil && len(entries) > 0 {
		t.Errorf("failed runs left %d files in %s", len(entries), out)
	}
}

func TestTrainWritesTraces(t *testing.T) {
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	args := []string{"train", "--examples", "96", "--dim", "4", "--classes", "3", "--batch", "32", "--epochs", "2",
		"--eval-every", "2", "--method", "adam,fgn", "--out", out, "--quiet"}
	if err := run(args, &stdout, &stderr); err != nil {
		t.Fatalf("train: %v\n%s", err, stderr.String())
	}
	for _, m := range []string{"adam", "fgn"} {
		tab, err := report.Read(filepath.Join(out, m+"_seed1.csv"))
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := tab.Lookup("method"); got != m || len(tab.Rows) != 4 { // steps 0, 2, 4, 6
			t.Errorf("%s trace: method %q, %d rows; want %q and 4 rows", m, got, len(tab.Rows), m)
		}
		if !strings.Contains(stdout.String(), m) {
			t.Errorf("summary lacks %s:\n%s", m, stdout.String())
		}
	}
}

func TestHeadoptErrorsWriteNothing(t *testing.T) {
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache")
	for split, d := range map[string]int{"train": 3, "test": 4} {
		s, err := train.GaussianMixture(1, 0, 20, d, 3, 1)
		if err != nil {
			t.Fatal(err)
		}
		x, y := features.CachePaths(cache, split)
		if err := s.Save(x, y); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(dir, "out")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"headopt"}, "name the data"},
		{[]string{"headopt", "--features", filepath.Join(dir, "missing")}, "no such file or directory"},
		{[]string{"headopt", "--features", cache}, "training features have dimension 3, test features 4"},
		{[]string{"headopt", "--synthetic", "--features", cache}, "exclude each other"},
		{[]string{"headopt", "--synthetic", "--profile", "huge"}, `unknown profile "huge"`},
		{[]string{"headopt", "--synthetic", "--profile", "smoke", "--config", filepath.Join(dir, "none.json")}, "no such file"},
		{[]string{"headopt", "select", "--features", cache}, "training features have dimension 3"},
		{[]string{"headopt", "select", "--synthetic", "--profile", "smoke", "--val-fraction", "1.5"}, "fraction must be in (0, 1)"},
	} {
		var stdout, stderr bytes.Buffer
		err := run(append(tc.args, "--out", out, "--quiet"), &stdout, &stderr)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("run(%q) error = %v, want one containing %q", tc.args, err, tc.want)
		}
	}
	if entries, err := os.ReadDir(out); err == nil && len(entries) > 0 {
		t.Errorf("failed runs left %d files in %s", len(entries), out)
	}
}

func TestHeadoptSelectThenRun(t *testing.T) {
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	if err := run([]string{"headopt", "select", "--synthetic", "--profile", "smoke", "--epochs", "1", "--out", out, "--quiet"}, &stdout, &stderr); err != nil {
		t.Fatalf("select: %v\n%s", err, stderr.String())
	}
	config := filepath.Join(out, "headopt_config_synthetic_standin.json")
	if err := run([]string{"headopt", "--synthetic", "--profile", "smoke", "--config", config, "--out", out, "--quiet"}, &stdout, &stderr); err != nil {
		t.Fatalf("headopt: %v\n%s", err, stderr.String())
	}
	tab, err := report.Read(filepath.Join(out, "table1_synthetic_standin.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := tab.Lookup("hyper_parameters"); got != config || len(tab.Rows) != 3 {
		t.Errorf("table: hyper-parameters from %q, %d rows; want %q and 3 rows", got, len(tab.Rows), config)
	}
	for _, ext := range []string{"svg", "png", "pdf"} {
		if _, err := os.Stat(filepath.Join(out, "figure2_synthetic_standin."+ext)); err != nil {
			t.Error(err)
		}
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestReproduceErrorsWriteNothing(t *testing.T) {
	dir := t.TempDir()
	partial := filepath.Join(dir, "partial")
	s, err := train.GaussianMixture(1, 0, 20, 3, 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	x, y := features.CachePaths(partial, "train")
	if err := s.Save(x, y); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"reproduce", "--profile", "huge"}, `unknown profile "huge"`},
		{[]string{"reproduce", "--bogus"}, "flag provided but not defined"},
		{[]string{"reproduce", "quick"}, `unexpected argument "quick"`},
		{[]string{"reproduce", "--features", filepath.Join(dir, "missing")}, "no feature cache there"},
		{[]string{"reproduce", "--features", partial}, "[test_features.npy test_labels.npy] missing"},
		{[]string{"reproduce", "--backend", "tpu"}, `unknown backend "tpu"`},
	} {
		var stdout, stderr bytes.Buffer
		err := run(append(tc.args, "--out", out, "--quiet"), &stdout, &stderr)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("run(%q) error = %v, want one containing %q", tc.args, err, tc.want)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("failed runs created %s (stat: %v)", out, err)
	}
}
