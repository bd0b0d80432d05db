package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fgn-paper/fgn/experiments/report"
	"github.com/fgn-paper/fgn/features"
)

func TestRunErrors(t *testing.T) {
	dir := t.TempDir()
	good, err := features.GaussianMixture(1, 0, 20, 3, 3, 1)
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
		{[]string{"train", "--classes", "1"}, `invalid value "1" for flag -classes: want an integer ≥ 2`},
		{[]string{"train", "--backend", "tpu"}, `unknown backend "tpu"`},
		{[]string{"train", "--damping-policy", "trust"}, `unknown damping policy "trust"`},
		{[]string{"train", "--method", "adam", "--cg-stop-at-noise"}, "--cg-stop-at-noise does not apply: it sets SGN and FGN"},
		{[]string{"train", "--method", "adam,sgn", "--ggn-step-length"}, "--ggn-step-length does not apply: it sets FGN's step"},
		{[]string{"train", "--method", "adam", "--scaled-damping"}, "--scaled-damping does not apply: it sets SGN and FGN"},
		{[]string{"train", "--method", "adam", "--momentum", "0.9"}, "--momentum does not apply: it sets SGN and FGN"},
		{[]string{"train", "--scaled-damping-per-entry"}, "--scaled-damping-per-entry does not apply: it sets --scaled-damping's metric"},
		{[]string{"train", "--momentum", "1", "--examples", "64", "--dim", "2", "--batch", "8"}, "momentum β must be in [0, 1), got 1"},
		{[]string{"train", "--method", "fgn", "--cg-stop-at-noise"}, "--cg-stop-at-noise does not apply: FGN's CG stops at the gradient's noise only on --cg-stopping-rule parameter"},
		{[]string{"train", "--damping-policy", "lm", "--damping", "1e7", "--examples", "64", "--dim", "2", "--batch", "8"},
			"outside the Levenberg-Marquardt bounds"},
		{[]string{"train", "--noise-floor", "2"}, "--noise-floor does not apply: it sets the Levenberg-Marquardt damping's floor, and --damping-policy is constant"},
		{[]string{"train", "--method", "adam", "--whole-variance=false"}, "--whole-variance does not apply: it sets SGN and FGN"},
		{[]string{"train", "--damping-policy", "lm", "--floor-exponent", "0"}, `invalid value "0" for flag -floor-exponent`},
		{[]string{"train", "--damping-policy", "lm", "--noise-average", "1", "--examples", "64", "--dim", "2", "--batch", "8"},
			"noise average must be in [0, 1)"},
		{[]string{"train", "--damping-policy", "lm", "--noise-floor", "-1", "--examples", "64", "--dim", "2", "--batch", "8"},
			"noise floor must be finite and ≥ 0"},
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
	// The paper's step (constant λ), and the library's step controls: Levenberg-Marquardt, CG
	// stopped at the gradient's noise, FGN at the GGN's step length, the damping metric.
	for _, tc := range []struct {
		damping, steering, rule string
		flags                   []string
	}{
		{"constant", "false", "whitened-row", nil},
		{"lm", "true", "parameter", []string{"--cg-stopping-rule", "parameter", "--cg-stop-at-noise", "--ggn-step-length",
			"--scaled-damping", "--noise-floor", "0.5", "--floor-exponent", "2", "--whole-variance=false", "--noise-average", "0.5",
			"--scaled-damping-per-entry", "--momentum", "0.9"}},
	} {
		damping := tc.damping
		out := t.TempDir()
		var stdout, stderr bytes.Buffer
		args := append([]string{"train", "--examples", "96", "--dim", "4", "--classes", "3", "--batch", "32", "--epochs", "2",
			"--eval-every", "2", "--method", "adam,fgn", "--damping-policy", damping, "--out", out, "--quiet"}, tc.flags...)
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
			if got, ok := tab.Lookup("damping_policy"); m == "fgn" && got != damping || m == "adam" && ok {
				t.Errorf("%s trace with --damping-policy %s: damping_policy comment %q", m, damping, got)
			}
			for _, key := range []string{"cg_stop_at_noise", "ggn_step_length", "scaled_damping", "scaled_damping_per_entry"} {
				if got, ok := tab.Lookup(key); m == "fgn" && got != tc.steering || m == "adam" && ok {
					t.Errorf("%s trace with %q: %s comment %q, want %q", m, tc.flags, key, got, tc.steering)
				}
			}
			wantMomentum := map[string]string{"constant": "0", "lm": "0.9"}[damping]
			if got, ok := tab.Lookup("momentum"); m == "fgn" && got != wantMomentum || m == "adam" && ok {
				t.Errorf("%s trace with %q: momentum comment %q, want %q", m, tc.flags, got, wantMomentum)
			}
			// The Levenberg-Marquardt floor's settings, as the flags set them, in an lm trace only.
			for key, want := range map[string]string{"noise_floor": "0.5", "floor_exponent": "2", "whole_variance": "false",
				"noise_average": "0.5"} {
				if got, ok := tab.Lookup(key); m == "fgn" && damping == "lm" && got != want || (m == "adam" || damping != "lm") && ok {
					t.Errorf("%s trace with --damping-policy %s and %q: %s comment %q (want %q in an lm trace only)",
						m, damping, tc.flags, key, got, want)
				}
			}
			if !strings.Contains(stdout.String(), m) {
				t.Errorf("summary lacks %s:\n%s", m, stdout.String())
			}
			// Without hyper-parameter flags each method runs with the paper's (method.Paper), but
			// for the stopping rule the case sets.
			paper := map[string]map[string]string{
				"adam": {"learning_rate": "0.0003", "beta1": "0.9", "beta2": "0.999", "epsilon": "1e-07"},
				"fgn":  {"learning_rate": "0.1", "damping": "1", "cg_max_iterations": "5", "cg_stopping_rule": tc.rule},
			}
			for key, want := range paper[m] {
				if got, _ := tab.Lookup(key); got != want {
					t.Errorf("%s trace: %s = %q, want the paper's %q", m, key, got, want)
				}
			}
		}
	}
}

func TestHeadoptErrorsWriteNothing(t *testing.T) {
	dir := t.TempDir()
	// manifest writes the feature-cache manifest that data/fetch would: 20 examples per split of
	// Cars196's 196 classes.
	manifest := func(c string) {
		t.Helper()
		data, err := json.Marshal(features.Manifest{Splits: map[string]features.Split{
			"train": {Examples: 20, Classes: 196}, "test": {Examples: 20, Classes: 196}}})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(c, features.ManifestName), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cache := filepath.Join(dir, "cache")
	for split, d := range map[string]int{"train": 3, "test": 4} {
		s, err := features.GaussianMixture(1, 0, 20, d, 3, 1)
		if err != nil {
			t.Fatal(err)
		}
		x, y := features.CachePaths(cache, split)
		if err := s.Save(x, y); err != nil {
			t.Fatal(err)
		}
	}
	manifest(cache)
	// Bad caches, each a copy of a good one (20 train and test examples, d = 3) with one defect.
	good := filepath.Join(dir, "good")
	for split, draw := range map[string]uint64{"train": 0, "test": 1} {
		s, err := features.GaussianMixture(1, draw, 20, 3, 3, 1)
		if err != nil {
			t.Fatal(err)
		}
		x, y := features.CachePaths(good, split)
		if err := s.Save(x, y); err != nil {
			t.Fatal(err)
		}
	}
	bad := func(name string, defect func(trainX, trainY string)) string {
		t.Helper()
		c := filepath.Join(dir, name)
		for _, split := range []string{"train", "test"} {
			gx, gy := features.CachePaths(good, split)
			x, y := features.CachePaths(c, split)
			if err := os.MkdirAll(c, 0o755); err != nil {
				t.Fatal(err)
			}
			for _, f := range [][2]string{{gx, x}, {gy, y}} {
				if err := os.WriteFile(f[1], mustRead(t, f[0]), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		defect(features.CachePaths(c, "train"))
		manifest(c)
		return c
	}
	nan := bad("nan", func(x, _ string) { // the last feature becomes a NaN (float32 0x7fc00000)
		raw := mustRead(t, x)
		copy(raw[len(raw)-4:], []byte{0, 0, 0xc0, 0x7f})
		if err := os.WriteFile(x, raw, 0o644); err != nil {
			t.Fatal(err)
		}
	})
	label196 := bad("label196", func(x, y string) {
		s, err := features.Load(x, y)
		if err != nil {
			t.Fatal(err)
		}
		s.Y[7] = 196
		if err := s.Save(x, y); err != nil {
			t.Fatal(err)
		}
	})
	fewLabels := bad("fewlabels", func(x, y string) {
		s := &features.Set{X: make([]float32, 5*3), Y: make([]int32, 5), N: 5, D: 3}
		if err := s.Save(filepath.Join(dir, "scratch_x.npy"), y); err != nil {
			t.Fatal(err)
		}
	})
	labels2D := bad("labels2d", func(x, y string) {
		if err := os.WriteFile(y, mustRead(t, x), 0o644); err != nil {
			t.Fatal(err)
		}
	})
	out := filepath.Join(dir, "out")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"headopt"}, "name the data"},
		{[]string{"headopt", "--features", filepath.Join(dir, "missing")}, "no such file or directory"},
		{[]string{"headopt", "--features", cache}, "training features have dimension 3, test features 4"},
		{[]string{"headopt", "--features", nan}, "feature 2 of example 19 is NaN"},
		{[]string{"headopt", "--features", label196}, "label 196 of example 7 is outside [0, 196)"},
		{[]string{"headopt", "--features", fewLabels}, "has 5 labels but"},
		{[]string{"headopt", "--features", labels2D}, "labels must be 1-D"},
		{[]string{"headopt", "select", "--features", label196}, "label 196 of example 7"},
		{[]string{"headopt", "--synthetic", "--profile", "smoke", "--seeds", "-1"}, `invalid value "-1" for flag -seeds: want an integer ≥ 1`},
		{[]string{"headopt", "--synthetic", "--features", cache}, "exclude each other"},
		{[]string{"headopt", "--synthetic", "--profile", "huge"}, `unknown profile "huge"`},
		{[]string{"headopt", "--synthetic", "--profile", "smoke", "--config", filepath.Join(dir, "none.json")}, "no such file"},
		{[]string{"headopt", "select", "--features", cache}, "training features have dimension 3"},
		{[]string{"headopt", "select", "--synthetic", "--profile", "smoke", "--val-fraction", "1.5"}, "--val-fraction 1.5: want a fraction in (0, 1)"},
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

// TestHeadoptSeeds checks that --seeds N runs seeds 1..N of every method instead of the
// profile's count.
func TestHeadoptSeeds(t *testing.T) {
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	if err := run([]string{"headopt", "--synthetic", "--profile", "smoke", "--seeds", "1", "--out", out, "--quiet"}, &stdout, &stderr); err != nil {
		t.Fatalf("headopt --seeds 1: %v\n%s", err, stderr.String())
	}
	traces, err := filepath.Glob(filepath.Join(out, "traces_synthetic_standin", "*.csv"))
	if err != nil {
		t.Fatal(err)
	}
	for i, tr := range traces {
		traces[i] = filepath.Base(tr)
	}
	if want := []string{"adam_seed1.csv", "fgn_seed1.csv", "sgn_seed1.csv"}; !slices.Equal(traces, want) {
		t.Errorf("--seeds 1 wrote traces %v, want %v", traces, want)
	}
	tab, err := report.Read(filepath.Join(out, "table1_synthetic_standin.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if seeds, err := tab.Floats("seeds"); err != nil || !slices.Equal(seeds, []float64{1, 1, 1}) {
		t.Errorf("table seeds column %v (%v), want 1 per method", seeds, err)
	}

	// --from-csv redraws Figure 2, Table 1's Markdown and LaTeX and the caption: the same bytes.
	drawn := []string{"figure2_synthetic_standin.svg", "figure2_synthetic_standin.png", "figure2_synthetic_standin.pdf",
		"table1_synthetic_standin.md", "table1_synthetic_standin.tex", "figure2_synthetic_standin.caption.md"}
	before := map[string][]byte{}
	for _, f := range drawn {
		before[f] = mustRead(t, filepath.Join(out, f))
		if err := os.Remove(filepath.Join(out, f)); err != nil {
			t.Fatal(err)
		}
	}
	stdout.Reset()
	if err := run([]string{"headopt", "--synthetic", "--from-csv", "--out", out}, &stdout, &stderr); err != nil {
		t.Fatalf("headopt --from-csv: %v\n%s", err, stderr.String())
	}
	for _, f := range drawn {
		if got := mustRead(t, filepath.Join(out, f)); !bytes.Equal(got, before[f]) {
			t.Errorf("headopt --from-csv wrote %s differently from the sweep", f)
		}
	}
	if err := run([]string{"headopt", "--synthetic", "--from-csv", "--profile", "smoke", "--out", out}, &stdout, &stderr); err == nil ||
		!strings.Contains(err.Error(), "--profile does not apply: --from-csv computes nothing") {
		t.Errorf("headopt --from-csv --profile smoke: error %v, want one saying --profile does not apply", err)
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
	s, err := features.GaussianMixture(1, 0, 20, 3, 3, 1)
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
		{[]string{"reproduce", "--features", partial}, "[test_features.npy test_labels.npy manifest.json] missing"},
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
