package headopt

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fgn-paper/fgn/experiments/method"
	"github.com/fgn-paper/fgn/experiments/report"
	"github.com/fgn-paper/fgn/features"
	"github.com/fgn-paper/fgn/fgn/backend"
)

// tiny returns the paper's protocol shrunk to test size, on a tiny stand-in.
func tiny(t *testing.T) (Profile, *Data) {
	t.Helper()
	p := PaperProfile()
	p.Name = "test"
	p.BatchSize, p.Epochs, p.Seeds, p.EvalEvery = 32, 2, 2, 4
	p.SynthTrain, p.SynthTest, p.SynthDim, p.SynthClasses, p.SynthSeparation = 192, 96, 16, 4, 0.5
	p.SynthThresholds = []float64{50, 60, 70}
	d, err := Synthetic(p)
	if err != nil {
		t.Fatal(err)
	}
	return p, d
}

// deterministic are the trace columns that do not depend on the clock.
var deterministic = []string{"step", "epoch", "train_loss", "eval_loss", "eval_accuracy", "cg_iterations",
	"cg_residual", "mean_p_dagger", "mean_xi"}

func TestSweepResumes(t *testing.T) {
	be, err := backend.New()
	if err != nil {
		t.Fatal(err)
	}
	p, d := tiny(t)
	dir := t.TempDir()
	runs := len(p.Methods) * p.Seeds
	var log bytes.Buffer
	var trained []string // the runs a sweep trained, as "method seed"
	cfg := SweepConfig{Profile: p, Dir: dir, Command: "test", Log: &log,
		RunProgress: func(_, _ int, m method.Method, seed uint64) func(done, total int) {
			trained = append(trained, fmt.Sprint(m, " ", seed))
			return nil
		}}
	first, err := Sweep(be, cfg, d)
	if err != nil {
		t.Fatal(err)
	}
	if len(trained) != runs {
		t.Fatalf("first sweep trained %v, want all %d runs", trained, runs)
	}
	if n := strings.Count(log.String(), "\n"); n != runs {
		t.Errorf("first sweep logged %d lines, want one per run (%d):\n%s", n, runs, log.String())
	}
	victim := TracePath(dir, method.SGN, 2)
	before, err := report.Read(victim)
	if err != nil {
		t.Fatal(err)
	}
	// Simulate a crash: the run in flight left no trace, only an interrupted temporary file.
	if err := os.Remove(victim); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(dir, ".sgn_seed2.csv.tmp-123")
	if err := os.WriteFile(stale, []byte("# method: sgn\nstep,ep"), 0o644); err != nil {
		t.Fatal(err)
	}
	log.Reset()
	trained = nil
	second, err := Sweep(be, cfg, d)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{fmt.Sprint(method.SGN, " ", 2)}; !slices.Equal(trained, want) {
		t.Errorf("resumed sweep trained %v, want only %v", trained, want)
	}
	if n := strings.Count(log.String(), "\n"); n != runs {
		t.Errorf("resumed sweep logged %d lines, want one per run, read back or trained (%d):\n%s", n, runs, log.String())
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the interrupted temporary file was not removed (stat: %v)", err)
	}
	after, err := report.Read(victim)
	if err != nil {
		t.Fatal(err)
	}
	if load, ok := after.Lookup("host_load"); !ok || !strings.Contains(load, "load averages") {
		t.Errorf("trace lacks the host load (got %q, %v)", load, ok)
	}
	for _, col := range deterministic {
		b, _ := before.Floats(col)
		a, err := after.Floats(col)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.EqualFunc(a, b, func(x, y float64) bool { return x == y || (x != x && y != y) }) {
			t.Errorf("redone run's %s differs from the first (want bit-identical on the pure-Go backend):\n%v\n%v", col, b, a)
		}
	}
	if len(first) != len(second) {
		t.Fatalf("%d runs, then %d", len(first), len(second))
	}
	for i := range first {
		if first[i].Method != second[i].Method || first[i].Seed != second[i].Seed {
			t.Errorf("run %d: %s/%d, then %s/%d", i, first[i].Method, first[i].Seed, second[i].Method, second[i].Seed)
		}
	}

	// A changed configuration refuses to reuse the finished runs and overwrites nothing.
	changed := cfg
	adam := method.Paper(method.Adam)
	adam.Adam.LearningRate = 1e-2
	changed.Hyper = map[method.Method]method.Hyper{method.Adam: adam}
	if _, err := Sweep(be, changed, d); err == nil || !strings.Contains(err.Error(), `learning_rate = "0.0003", but this sweep has "0.01"`) {
		t.Errorf("sweep with another α over finished runs: error %v, want a learning_rate mismatch", err)
	}
	changed = cfg
	changed.Profile.Epochs++
	if _, err := Sweep(be, changed, d); err == nil || !strings.Contains(err.Error(), "epochs") {
		t.Errorf("sweep with more epochs over finished runs: error %v, want an epochs mismatch", err)
	}

	// The outputs.
	out := t.TempDir()
	files := FilesFor(out, d.Tag())
	paths, err := WriteAll(second, p.Methods, d, files, p.SynthThresholds, 101, func(*report.Table) {})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range paths {
		if !strings.Contains(filepath.Base(path), "synthetic") {
			t.Errorf("output %s made from the stand-in does not say synthetic in its name", path)
		}
	}
	if len(paths) != 10 {
		t.Errorf("wrote %d files, want 10 (time and step curves, per-seed results, 3 figure formats, 3 table formats, caption): %v", len(paths), paths)
	}
	// The step curves of the first sweep and of the one that redid sgn seed 2 are bit-identical.
	firstOut := FilesFor(t.TempDir(), d.Tag())
	if _, err := WriteAll(first, p.Methods, d, firstOut, p.SynthThresholds, 101, func(*report.Table) {}); err != nil {
		t.Fatal(err)
	}
	a, errA := report.Read(firstOut.Steps)
	b, errB := report.Read(files.Steps)
	if errA != nil || errB != nil || !slices.EqualFunc(a.Rows, b.Rows, slices.Equal) {
		t.Errorf("step curves differ after a seed was rerun (errors %v, %v)", errA, errB)
	}
	md, err := os.ReadFile(files.Table + ".md")
	if err != nil || !strings.Contains(string(md), "synthetic stand-in, NOT Cars196") {
		t.Errorf("table caption does not name the stand-in (%v):\n%s", err, md)
	}
}

func TestSelectionFeedsTheRun(t *testing.T) {
	be, err := backend.New()
	if err != nil {
		t.Fatal(err)
	}
	p, d := tiny(t)
	p.Seeds = 1
	with := func(m method.Method, alpha, lambda float64) method.Hyper {
		h := method.Paper(m)
		h.GN.LearningRate, h.GN.Damping = alpha, lambda
		return h
	}
	adam := func(alpha float64) method.Hyper { return method.Hyper{Adam: method.GoMLXAdam(alpha)} }
	grid := map[method.Method][]method.Hyper{
		method.Adam: {adam(1e-3), adam(0.05)},
		method.SGN:  {with(method.SGN, 0.1, 1), with(method.SGN, 0.5, 0.5)},
		method.FGN:  {with(method.FGN, 0.1, 1), with(method.FGN, 0.5, 0.5)},
	}
	sel, err := Select(be, SelectConfig{Profile: p, Grid: grid, ValidationFraction: 0.25, Seed: 3}, d)
	if err != nil {
		t.Fatal(err)
	}
	if len(sel.Candidates) != 6 {
		t.Fatalf("%d candidates, want 6", len(sel.Candidates))
	}
	// The chosen candidate of each method has the best validation accuracy.
	for _, m := range p.Methods {
		var best *Candidate
		for i := range sel.Candidates {
			if c := &sel.Candidates[i]; c.Method == m && c.Error == "" && (best == nil || better(*c, *best)) {
				best = c
			}
		}
		if best == nil || sel.Chosen[m].LearningRate(m) != best.LearningRate || sel.Chosen[m].GN.Damping != best.Damping && m != method.Adam {
			t.Errorf("%s: chose %+v, best candidate %+v", m, sel.Chosen[m], best)
		}
	}
	path := filepath.Join(t.TempDir(), "config.json")
	if err := sel.Write(path); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadSelection(path, "cars196", p.Methods); err == nil || !strings.Contains(err.Error(), "selected on") {
		t.Errorf("reading a stand-in selection for Cars196: error %v, want a data mismatch", err)
	}
	hypers, _, err := ReadSelection(path, d.Tag(), p.Methods)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := Sweep(be, SweepConfig{Profile: p, Hyper: hypers, Dir: dir}, d); err != nil {
		t.Fatal(err)
	}
	for _, m := range p.Methods {
		tab, err := report.Read(TracePath(dir, m, 1))
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := tab.Lookup("learning_rate"); got != report.Format(sel.Chosen[m].LearningRate(m)) {
			t.Errorf("%s trace ran with α = %s, the selection chose %g", m, got, sel.Chosen[m].LearningRate(m))
		}
	}
}

// writeCache writes a feature cache with its manifest (splits of n examples, d features, labels
// cycling over classes, the manifest recording classes) into dir.
func writeCache(t *testing.T, dir string, train, test, d, classes int) {
	t.Helper()
	m := &features.Manifest{Source: "test cache", Weights: features.ManifestWeights{Name: "test weights"},
		Splits: map[string]features.Split{}}
	for split, n := range map[string]int{"train": train, "test": test} {
		s := &features.Set{X: make([]float32, n*d), Y: make([]int32, n), N: n, D: d}
		for i := range s.Y {
			s.Y[i] = int32(i % classes)
			s.X[i*d] = float32(s.Y[i])
		}
		x, y := features.CachePaths(dir, split)
		if err := s.Save(x, y); err != nil {
			t.Fatal(err)
		}
		m.Splits[split] = features.Split{Examples: n, Features: d, Classes: classes}
	}
	if err := features.WriteManifest(dir, m); err != nil {
		t.Fatal(err)
	}
}

// TestLoadCacheNames checks that a cache is named from its manifest: only the canonical Cars196
// split is "cars196"; any other cache says what it is, with the manifest's class count.
func TestLoadCacheNames(t *testing.T) {
	root := t.TempDir()
	toy, cars := filepath.Join(root, "toy cache"), filepath.Join(root, "cars")
	writeCache(t, toy, 40, 20, 3, 5)
	writeCache(t, cars, features.Cars196Train, features.Cars196Test, 1, features.Cars196Classes)
	for _, tc := range []struct {
		dir, tag, title string
		classes         int
		cars196         bool
		thresholds      []float64
	}{
		{toy, "features_toy_cache", "feature cache toy_cache (C = 5, not Cars196)", 5, false, nil},
		{cars, "cars196", "Cars196", 196, true, Cars196Thresholds},
	} {
		d, err := LoadCache(tc.dir)
		if err != nil {
			t.Fatal(err)
		}
		if d.Tag() != tc.tag || d.Title() != tc.title || d.Classes != tc.classes || d.Cars196 != tc.cars196 {
			t.Errorf("LoadCache(%s): tag %q, title %q, %d classes, Cars196 %v; want %q, %q, %d, %v",
				tc.dir, d.Tag(), d.Title(), d.Classes, d.Cars196, tc.tag, tc.title, tc.classes, tc.cars196)
		}
		if !tc.cars196 && !strings.Contains(d.Source, "not the canonical Cars196 split: train has 40 examples of 5 classes") {
			t.Errorf("LoadCache(%s): source %q does not say why it is not Cars196", tc.dir, d.Source)
		}
		if tag, title, err := CacheNames(tc.dir); err != nil || tag != tc.tag || title != tc.title {
			t.Errorf("CacheNames(%s) = %q, %q, %v; want LoadCache's", tc.dir, tag, title, err)
		}
		if th := Thresholds(PaperProfile(), d); !slices.Equal(th, tc.thresholds) {
			t.Errorf("%s: default thresholds %v, want %v", tc.dir, th, tc.thresholds)
		}
	}
}

func TestLoadCacheErrors(t *testing.T) {
	set := func(n, d int, label int32) *features.Set {
		s := &features.Set{X: make([]float32, n*d), Y: make([]int32, n), N: n, D: d}
		s.Y[n-1] = label
		return s
	}
	split := func(n, classes int) *features.Split { return &features.Split{Examples: n, Classes: classes} }
	root := t.TempDir()
	for _, tc := range []struct {
		name        string
		train, test *features.Set
		mTrain      *features.Split // nil: no manifest
		mTest       *features.Split
		want        string
	}{
		{"missing", nil, nil, nil, nil, "no such file or directory"},
		{"dims", set(4, 3, 1), set(4, 5, 1), split(4, 3), split(4, 3), "training features have dimension 3, test features 5"},
		{"labels", set(4, 3, 5), set(4, 3, 1), split(4, 5), split(4, 5), "label 5 of example 3 is outside [0, 5)"},
		{"nomanifest", set(4, 3, 1), set(4, 3, 1), nil, nil, "has no readable manifest"},
		{"count", set(4, 3, 1), set(4, 3, 1), split(5, 3), split(4, 3), "the train split has 4 examples, its manifest says 5"},
		{"classes", set(4, 3, 1), set(4, 3, 1), split(4, 3), split(4, 4), "the training split 3 classes and the test split 4"},
	} {
		dir := filepath.Join(root, tc.name)
		for _, sp := range []struct {
			name string
			s    *features.Set
		}{{"train", tc.train}, {"test", tc.test}} {
			if sp.s == nil {
				continue
			}
			x, y := features.CachePaths(dir, sp.name)
			if err := sp.s.Save(x, y); err != nil {
				t.Fatal(err)
			}
		}
		if tc.mTrain != nil {
			data, err := json.Marshal(features.Manifest{Splits: map[string]features.Split{"train": *tc.mTrain, "test": *tc.mTest}})
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, features.ManifestName), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := LoadCache(dir); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("LoadCache(%s): error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

// TestSweepProgress checks the sweep-wide progress count: it rises with every step to the total
// over all (method, seed) runs, and a resumed sweep counts the runs it reads back as done.
func TestSweepProgress(t *testing.T) {
	be, err := backend.New()
	if err != nil {
		t.Fatal(err)
	}
	p, d := tiny(t)
	steps := p.Epochs * ((p.SynthTrain + p.BatchSize - 1) / p.BatchSize)
	runs := len(p.Methods) * p.Seeds
	dir := t.TempDir()
	sweep := func() (counts []int, trained []int) {
		t.Helper()
		cfg := SweepConfig{Profile: p, Dir: dir,
			RunProgress: func(k, n int, m method.Method, seed uint64) func(done, total int) {
				if n != runs {
					t.Errorf("RunProgress(%d, %d, %s, %d): n = %d, want %d", k, n, m, seed, n, runs)
				}
				trained = append(trained, k)
				last := 0
				return func(done, total int) {
					if done != last+1 || total != steps {
						t.Errorf("run %d: step callback (%d, %d) after %d, want (%d, %d)", k, done, total, last, last+1, steps)
					}
					last = done
				}
			},
			Progress: func(done, total int) {
				if total != runs*steps {
					t.Errorf("sweep progress total %d, want %d runs × %d steps", total, runs, steps)
				}
				counts = append(counts, done)
			}}
		if _, err := Sweep(be, cfg, d); err != nil {
			t.Fatal(err)
		}
		return counts, trained
	}
	check := func(name string, counts []int, wantCalls int) {
		t.Helper()
		if len(counts) != wantCalls {
			t.Errorf("%s: %d progress calls, want %d", name, len(counts), wantCalls)
		}
		for i := 1; i < len(counts); i++ {
			if counts[i] <= counts[i-1] {
				t.Errorf("%s: progress went from %d to %d (call %d)", name, counts[i-1], counts[i], i)
			}
		}
		if len(counts) == 0 || counts[len(counts)-1] != runs*steps {
			t.Errorf("%s: progress ends at %v, want the total %d", name, counts[max(0, len(counts)-1):], runs*steps)
		}
	}

	counts, trained := sweep()
	check("fresh sweep", counts, runs*steps) // one call per step
	if len(trained) != runs {
		t.Errorf("fresh sweep: RunProgress for runs %v, want all %d", trained, runs)
	}

	// Interrupted in SGN seed 1 (run p.Seeds+1): the runs before it are read back and counted
	// whole, then every step of the redone run follows, then the read-back runs after it.
	if err := os.Remove(TracePath(dir, method.SGN, 1)); err != nil {
		t.Fatal(err)
	}
	counts, trained = sweep()
	check("resumed sweep", counts, runs-1+steps)
	if k := p.Seeds + 1; !slices.Equal(trained, []int{k}) {
		t.Errorf("resumed sweep: RunProgress for runs %v, want only run %d", trained, k)
	}
	if len(counts) > p.Seeds && (counts[0] != steps || counts[p.Seeds] != p.Seeds*steps+1) {
		t.Errorf("resumed sweep: progress starts %v, want %d (a read-back run counts whole) and reaches %d "+
			"at the redone run's first step", counts[:p.Seeds+1], steps, p.Seeds*steps+1)
	}
}

// killedSweepDir names the trace directory of the sweep that TestSweepKilledAfterOneRun runs
// in a child process and kills.
const killedSweepDir = "FGN_HEADOPT_KILLED_SWEEP_DIR"

// TestSweepKilledAfterOneRun kills a sweep process (SIGKILL: no deferred cleanup) in the middle
// of its second run, then restarts the sweep: only the first run was kept and is read back,
// every other run is trained, and all traces equal those of an uninterrupted sweep bit for bit
// (apart from the clock columns).
func TestSweepKilledAfterOneRun(t *testing.T) {
	p, d := tiny(t)
	be, err := backend.New()
	if err != nil {
		t.Fatal(err)
	}
	if dir := os.Getenv(killedSweepDir); dir != "" { // the child
		cfg := SweepConfig{Profile: p, Dir: dir, RunProgress: func(k, _ int, _ method.Method, _ uint64) func(done, total int) {
			return func(done, _ int) {
				if k == 2 && done == 3 {
					self, err := os.FindProcess(os.Getpid())
					if err == nil {
						err = self.Kill()
					}
					t.Fatalf("killing the sweep: %v", err)
				}
			}
		}}
		_, err := Sweep(be, cfg, d)
		t.Fatalf("the sweep ended (error %v) instead of being killed", err)
	}

	dir := t.TempDir()
	child := exec.Command(os.Args[0], "-test.run=^TestSweepKilledAfterOneRun$", "-test.count=1")
	child.Env = append(os.Environ(), killedSweepDir+"="+dir)
	out, err := child.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != -1 { // -1: ended by a signal
		t.Fatalf("the child sweep was not killed (%v):\n%s", err, out)
	}
	left, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 1 || left[0].Name() != filepath.Base(TracePath(dir, p.Methods[0], 1)) {
		t.Fatalf("the killed sweep left %v, want only its first run's trace", left)
	}

	var trained []int
	resumed, err := Sweep(be, SweepConfig{Profile: p, Dir: dir,
		RunProgress: func(k, _ int, _ method.Method, _ uint64) func(done, total int) {
			trained = append(trained, k)
			return nil
		}}, d)
	if err != nil {
		t.Fatal(err)
	}
	runs := len(p.Methods) * p.Seeds
	if want := seq(2, runs); !slices.Equal(trained, want) {
		t.Errorf("the restarted sweep trained runs %v, want %v (run 1 read back)", trained, want)
	}
	fresh := t.TempDir()
	whole, err := Sweep(be, SweepConfig{Profile: p, Dir: fresh}, d)
	if err != nil {
		t.Fatal(err)
	}
	if len(resumed) != len(whole) {
		t.Fatalf("%d runs after the restart, %d uninterrupted", len(resumed), len(whole))
	}
	for _, r := range whole {
		a, err := report.Read(TracePath(dir, r.Method, r.Seed))
		if err != nil {
			t.Fatal(err)
		}
		b, err := report.Read(TracePath(fresh, r.Method, r.Seed))
		if err != nil {
			t.Fatal(err)
		}
		for _, col := range deterministic {
			x, _ := a.Floats(col)
			y, err := b.Floats(col)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.EqualFunc(x, y, func(u, v float64) bool { return u == v || (u != u && v != v) }) {
				t.Errorf("%s seed %d: %s after the restart differs from the uninterrupted sweep's:\n%v\n%v",
					r.Method, r.Seed, col, x, y)
			}
		}
	}
}

// seq returns the integers from to to, inclusive.
func seq(from, to int) []int {
	var out []int
	for k := from; k <= to; k++ {
		out = append(out, k)
	}
	return out
}
