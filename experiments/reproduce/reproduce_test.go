package reproduce

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fgn-paper/fgn/experiments/profile"
	"github.com/fgn-paper/fgn/features"
	"github.com/fgn-paper/fgn/fgn/backend"
)

// tinyPlan is the smoke plan with panel (a) shrunk to test size (the other experiments'
// smoke settings already take well under a second).
func tinyPlan(t *testing.T) profile.Plan {
	t.Helper()
	p, err := profile.Named("smoke")
	if err != nil {
		t.Fatal(err)
	}
	p.StepTime.Dim, p.StepTime.Batch, p.StepTime.Examples = 8, 4, 8
	p.StepTime.Classes, p.StepTime.Warmup, p.StepTime.Steps = []int{2, 3}, 0, 1
	return p
}

// outputs returns the modification time of every declared output and stamp of cfg's targets,
// failing the test if one is missing.
func outputs(t *testing.T, cfg Config) map[string]time.Time {
	t.Helper()
	targets, err := Targets(cfg)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]time.Time{}
	for _, tg := range targets {
		paths := []string{stampPath(cfg.Out, tg.Name)}
		for _, f := range tg.Outputs {
			paths = append(paths, filepath.Join(cfg.Out, f))
		}
		for _, p := range paths {
			st, err := os.Stat(p)
			if err != nil {
				t.Fatalf("target %s: %v", tg.Name, err)
			}
			if st.Size() == 0 {
				t.Errorf("target %s: %s is empty", tg.Name, p)
			}
			out[p] = st.ModTime()
		}
	}
	return out
}

// TestRunSkipsWhatIsUpToDate builds the targets once at test size, then checks which targets
// each later run rebuilds: none when nothing changed (no file rewritten), the one whose output
// is missing, whose stamp is missing (an interrupted build) or whose settings changed, all of
// them when the profile changes or with Force.
func TestRunSkipsWhatIsUpToDate(t *testing.T) {
	be := backend.MustNew()
	cfg := Config{Plan: tinyPlan(t), Out: t.TempDir(), Backend: be, Command: "test"}
	const fig1, fig2, ablation = "figure1", "headopt_synthetic_standin", "cg_stopping_synthetic_standin"
	res, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{fig1, fig2, ablation}; !slices.Equal(res.Built, want) || len(res.Skipped) != 0 {
		t.Fatalf("first run built %v, skipped %v; want %v built", res.Built, res.Skipped, want)
	}
	before := outputs(t, cfg)
	if len(before) != 3+8+10+5 {
		t.Errorf("%d declared outputs and stamps, want 26: %v", len(before), slices.Sorted(maps.Keys(before)))
	}

	res, err = Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Built) != 0 {
		t.Errorf("second run rebuilt %v", res.Built)
	}
	if after := outputs(t, cfg); !maps.Equal(before, after) {
		for p, m := range after {
			if !m.Equal(before[p]) {
				t.Errorf("second run rewrote %s", p)
			}
		}
	}

	for _, tc := range []struct {
		name   string
		change func(*Config)
		built  []string
	}{
		{"missing output", func(c *Config) {
			if err := os.Remove(filepath.Join(c.Out, "figure1_mechanism.png")); err != nil {
				t.Fatal(err)
			}
		}, []string{fig1}},
		{"interrupted (no stamp)", func(c *Config) {
			if err := os.Remove(stampPath(c.Out, fig2)); err != nil {
				t.Fatal(err)
			}
		}, []string{fig2}},
		{"settings changed", func(c *Config) { c.Plan.Trace.Points = 31 }, []string{fig1}},
		{"profile changed", func(c *Config) { c.Plan.Profile, c.Plan.Headopt.Epochs = "quick", 3 }, []string{fig1, fig2, ablation}},
		{"forced", func(c *Config) { c.Force = true }, []string{fig1, fig2, ablation}},
		{"nothing changed", func(c *Config) { c.Force = false }, nil},
	} {
		tc.change(&cfg)
		var log strings.Builder
		cfg.Log = &log
		res, err := Run(cfg)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !slices.Equal(res.Built, tc.built) {
			t.Errorf("%s: built %v, want %v", tc.name, res.Built, tc.built)
		}
		outputs(t, cfg)
		// The sweep's finished runs are read back only by a build of the same identity.
		readBack := strings.Count(log.String(), "read back")
		if wantBack := map[string]int{"interrupted (no stamp)": 6}[tc.name]; readBack != wantBack {
			t.Errorf("%s: %d runs read back, want %d:\n%s", tc.name, readBack, wantBack, log.String())
		}
		for _, target := range []string{fig2, ablation} {
			if work, _ := filepath.Glob(filepath.Join(cfg.Out, StampDir, target+"-*")); len(work) != 1 {
				t.Errorf("%s: %s's work directories %v, want one", tc.name, target, work)
			}
		}
	}
	cfg.Log = nil

	// A build that fails half-way leaves no stamp: the next run builds the target again even
	// though its old outputs are still there.
	good := cfg.Plan
	cfg.Force = true
	cfg.Plan.StepTime.Steps = 0
	if _, err := Run(cfg); err == nil || !strings.Contains(err.Error(), "timed steps") {
		t.Fatalf("run with an invalid panel (a): error %v, want one about timed steps", err)
	}
	if _, err := os.Stat(stampPath(cfg.Out, fig1)); !os.IsNotExist(err) {
		t.Errorf("failed build left its stamp (stat error %v)", err)
	}
	cfg.Plan, cfg.Force = good, false
	if res, err := Run(cfg); err != nil || !slices.Equal(res.Built, []string{fig1}) {
		t.Errorf("after a failed build: built %v (error %v), want [%s]", res.Built, err, fig1)
	}
}

// writeCache writes a small feature cache (both splits and the manifest) into dir.
func writeCache(t *testing.T, dir string) {
	t.Helper()
	m := &features.Manifest{Splits: map[string]features.Split{}}
	for draw, split := range []string{"train", "test"} {
		s, err := features.GaussianMixture(1, uint64(draw), 40, 3, 4, 1)
		if err != nil {
			t.Fatal(err)
		}
		x, y := features.CachePaths(dir, split)
		if err := s.Save(x, y); err != nil {
			t.Fatal(err)
		}
		m.Splits[split] = features.Split{Examples: 40, Features: 3, Classes: 4}
	}
	if err := features.WriteManifest(dir, m); err != nil {
		t.Fatal(err)
	}
}

// TestTargetsData checks the choice between the Cars196 cache and the stand-in, the declared
// outputs of each, and that the cache's fingerprint follows its files.
func TestTargetsData(t *testing.T) {
	cfg := Config{Plan: tinyPlan(t), Out: "out"}
	targets, err := Targets(cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"figure2_synthetic_standin_curves.csv", "figure2_synthetic_standin_steps.csv", "table1_synthetic_standin_seeds.csv",
		"figure2_synthetic_standin.caption.md", "figure2_synthetic_standin.svg", "figure2_synthetic_standin.png",
		"figure2_synthetic_standin.pdf", "table1_synthetic_standin.csv", "table1_synthetic_standin.md", "table1_synthetic_standin.tex"}
	if len(targets) != 3 || targets[1].Name != "headopt_synthetic_standin" || !slices.Equal(targets[1].Outputs, want) {
		t.Errorf("without a cache: targets %v, outputs %v; want headopt_synthetic_standin with %v", targets, targets[1].Outputs, want)
	}
	wantAblation := []string{"ablation_cg_stopping_synthetic_standin_steps.csv", "ablation_cg_stopping_synthetic_standin.caption.md",
		"ablation_cg_stopping_synthetic_standin.svg", "ablation_cg_stopping_synthetic_standin.png", "ablation_cg_stopping_synthetic_standin.pdf"}
	if len(targets) == 3 && (targets[2].Name != "cg_stopping_synthetic_standin" || !slices.Equal(targets[2].Outputs, wantAblation)) {
		t.Errorf("without a cache: ablation target %s with outputs %v; want cg_stopping_synthetic_standin with %v",
			targets[2].Name, targets[2].Outputs, wantAblation)
	}

	cache := filepath.Join(t.TempDir(), "toy")
	writeCache(t, cache)
	cfg.Features = cache
	targets, err = Targets(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// A 4-class cache is named from its manifest, not called Cars196.
	fig2 := targets[1]
	if fig2.Name != "headopt_features_toy" || !slices.Contains(fig2.Outputs, "table1_features_toy.csv") ||
		fig2.Title != "Figure 2 and Table 1 (feature cache toy (C = 4, not Cars196))" {
		t.Errorf("with a cache: target %s (%s), outputs %v; want headopt_features_toy writing table1_features_toy.csv", fig2.Name, fig2.Title, fig2.Outputs)
	}
	if ab := targets[2]; ab.Name != "cg_stopping_features_toy" || !maps.Equal(ab.Inputs, fig2.Inputs) ||
		ab.Title != "CG stopping-rule ablation (feature cache toy (C = 4, not Cars196))" {
		t.Errorf("with a cache: ablation target %s (%s), inputs %v; want cg_stopping_features_toy on the cache's fingerprint", ab.Name, ab.Title, ab.Inputs)
	}
	x, _ := features.CachePaths(cache, "train")
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(x, later, later); err != nil {
		t.Fatal(err)
	}
	if again, err := Targets(cfg); err != nil || maps.Equal(again[1].Inputs, fig2.Inputs) {
		t.Errorf("touching %s left the inputs' fingerprint unchanged (error %v)", x, err)
	}

	if err := os.Remove(x); err != nil {
		t.Fatal(err)
	}
	if _, err := Targets(cfg); err == nil || !strings.Contains(err.Error(), "train_features.npy") {
		t.Errorf("incomplete cache: error %v, want one naming train_features.npy", err)
	}
}
