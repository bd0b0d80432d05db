// Package reproduce regenerates every figure and table of the paper into one directory, in one
// profile, skipping the targets that are up to date.
//
// A target is one experiment (Figure 1; Figure 2 with Table 1; the CG stopping-rule ablation) with its exact output file names
// and a function that builds them. Run goes through the targets in order, printing the overall
// progress (target k of n, why it is built or skipped) around the experiments' own progress
// bars and per-run lines.
//
// # Up to date
//
// After a target's outputs are written, Run writes a stamp, dir/.reproduce/<target>.json,
// atomically and last. A target is skipped when every declared output exists and its stamp
// records the same
//
//   - profile and target configuration (the JSON of the plan's settings for that target, so a
//     changed profile definition counts as a change, not only a changed name);
//   - inputs: for the Cars196 feature cache, the size and modification time of its four .npy
//     files and the sha256 sums its manifest lists; for the synthetic stand-in, the generator's
//     settings (part of the configuration);
//   - code: buildinfo.Code, the hash of the module's compiled source (non-test Go files, go.mod,
//     go.sum) when its source tree is on this machine, with the toolchain and build settings
//     (GOEXPERIMENT=simd among them). "go run" and "go build" of one tree agree, and edits
//     outside the compiled code (documentation, notebooks) rebuild nothing;
//   - backend (its description): timings made on one backend do not stand for another.
//
// Before a target is built its stamp is removed, so a target interrupted half-way is built
// again by the next run. Force rebuilds every target from scratch.
//
// Intermediate results (the head-optimisation sweep's per-run traces) go to a work directory
// Out/.reproduce/<target>-<hash of the stamp's identity fields>: a build interrupted and then
// restarted with the same identity reads back the runs it finished (headopt.Sweep), while a
// build of another identity (profile, settings, inputs, code or backend changed) starts afresh
// and removes the work directories of the others.
package reproduce

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/gomlx/compute"

	"github.com/fgn-paper/fgn/experiments/headopt"
	"github.com/fgn-paper/fgn/experiments/mechanism"
	"github.com/fgn-paper/fgn/experiments/method"
	"github.com/fgn-paper/fgn/experiments/plot"
	"github.com/fgn-paper/fgn/experiments/profile"
	"github.com/fgn-paper/fgn/features"
	"github.com/fgn-paper/fgn/fgn/backend"
	"github.com/fgn-paper/fgn/internal/atomicfile"
	"github.com/fgn-paper/fgn/internal/buildinfo"
)

// Config configures Run.
type Config struct {
	// Plan is the profile's configuration of every target (profile.Named).
	Plan profile.Plan
	// Out is the output directory; the stamps go to Out/.reproduce.
	Out string
	// Features is the Cars196 feature cache directory (features.CachePaths). When it holds no
	// cache (or is ""), Figure 2 and Table 1 are made on the synthetic stand-in, whose outputs
	// say so; a cache with some of its files missing is an error.
	Features string
	// Force rebuilds every target, up to date or not.
	Force bool
	// Backend runs the experiments.
	Backend compute.Backend
	// Command is recorded in the outputs' provenance.
	Command string
	// Log, when set, gets the overall progress and the experiments' per-panel and per-run lines.
	Log io.Writer
	// Progress, when set, gets Figure 1 panel (a)'s progress bar; RunBar, when set, returns the
	// step-progress callback of a head-optimisation run with the given description.
	Progress io.Writer
	RunBar   func(description string) func(done, total int)
}

// Target is one experiment: the outputs it declares and how it builds them.
type Target struct {
	// Name identifies the target (its stamp is Out/.reproduce/Name.json); Title describes it.
	Name, Title string
	// Outputs are the files the target writes, relative to Out.
	Outputs []string
	// Settings are the target's configuration and Inputs its input fingerprint, as recorded in
	// the stamp.
	Settings any
	Inputs   map[string]string
	// build writes the outputs.
	build func(cfg Config, b build) error
}

// build is what Run tells a target's build: its number k of n (for progress labels) and its
// work directory for intermediate files.
type build struct {
	k, n int
	work string
}

// StampDir is the directory of the stamps inside the output directory.
const StampDir = ".reproduce"

// CacheFiles returns the four files of a feature cache in dir (training and test features and
// labels, features.CachePaths).
func CacheFiles(dir string) []string {
	var out []string
	for _, split := range []string{"train", "test"} {
		x, y := features.CachePaths(dir, split)
		out = append(out, x, y)
	}
	return append(out, filepath.Join(dir, features.ManifestName))
}

// HasCache reports whether dir holds a feature cache: false when none of its files exist (dir
// absent included), true when all do, and an error naming the missing files otherwise.
func HasCache(dir string) (bool, error) {
	if dir == "" {
		return false, nil
	}
	var missing []string
	files := CacheFiles(dir)
	for _, f := range files {
		if _, err := os.Stat(f); errors.Is(err, fs.ErrNotExist) {
			missing = append(missing, filepath.Base(f))
		} else if err != nil {
			return false, fmt.Errorf("reproduce: feature cache: %w", err)
		}
	}
	switch len(missing) {
	case 0:
		return true, nil
	case len(files):
		return false, nil
	}
	return false, fmt.Errorf("reproduce: feature cache %s is incomplete: %v missing (fetch it again with data/fetch)", dir, missing)
}

// cacheFingerprint returns the size and modification time of every cache file and the sha256
// sums its manifest lists (when it has one).
func cacheFingerprint(dir string) (map[string]string, error) {
	fp := map[string]string{"cache": dir}
	for _, f := range CacheFiles(dir) {
		st, err := os.Stat(f)
		if err != nil {
			return nil, fmt.Errorf("reproduce: feature cache: %w", err)
		}
		fp[filepath.Base(f)] = fmt.Sprintf("%d bytes, modified %s", st.Size(), st.ModTime().UTC().Format(time.RFC3339Nano))
	}
	if m, err := features.ReadManifest(dir); err == nil {
		for name, sum := range m.Files {
			fp["manifest "+name] = "sha256 " + sum
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("reproduce: %w", err)
	}
	return fp, nil
}

// Targets returns the targets of cfg, in build order: Figure 1, then Figure 2 and Table 1, then
// the CG stopping-rule ablation (headopt.MakeAblation), both on the Cars196 cache in
// cfg.Features if there is one, else on the synthetic stand-in.
func Targets(cfg Config) ([]Target, error) {
	p := cfg.Plan
	fig1 := Target{Name: "figure1", Title: "Figure 1 (mechanism)",
		Outputs:  []string{mechanism.StepTimeFile, mechanism.StepSamplesFile, mechanism.TraceFile, mechanism.AgreementFile, mechanism.CaptionFile},
		Settings: map[string]any{"step_time": p.StepTime, "trace": p.Trace, "agreement": p.Agreement},
		Inputs:   map[string]string{"data": "generated from the settings' seeds"},
		build: func(cfg Config, _ build) error {
			_, err := mechanism.Make(cfg.Backend, mechanism.MakeConfig{StepTime: p.StepTime, Trace: p.Trace,
				Agreement: p.Agreement, Panels: []string{"a", "b", "c"}, Command: cfg.Command,
				Log: cfg.Log, Progress: cfg.Progress}, cfg.Out)
			return err
		}}
	for _, ext := range plot.Formats {
		fig1.Outputs = append(fig1.Outputs, mechanism.FigureBase+"."+ext)
	}

	cars, err := HasCache(cfg.Features)
	if err != nil {
		return nil, err
	}
	tag, on := "synthetic_standin", " (synthetic stand-in, NOT Cars196)"
	inputs := map[string]string{"data": "synthetic Gaussian mixture of the settings (headopt.Synthetic)"}
	if cars {
		var name string
		if tag, name, err = headopt.CacheNames(cfg.Features); err != nil {
			return nil, err
		}
		on = " (" + name + ")"
		if inputs, err = cacheFingerprint(cfg.Features); err != nil {
			return nil, err
		}
	}
	load := func() (*headopt.Data, error) {
		if cars {
			return headopt.LoadCache(cfg.Features)
		}
		return headopt.Synthetic(p.Headopt)
	}
	// onData completes a target that runs on the head-optimisation data: it loads the data, runs
	// run on it, and writes the figure in every format besides the target's other outputs.
	onData := func(t Target, figure string, run func(cfg Config, b build, d *headopt.Data) error) Target {
		for _, ext := range plot.Formats {
			t.Outputs = append(t.Outputs, figure+"."+ext)
		}
		t.Inputs = inputs
		t.build = func(cfg Config, b build) error {
			d, err := load()
			if err != nil {
				return err
			}
			return run(cfg, b, d)
		}
		return t
	}
	files := headopt.FilesFor("", tag)
	fig2 := onData(Target{Name: "headopt_" + tag, Title: "Figure 2 and Table 1" + on,
		Outputs: []string{files.Curves, files.Steps, files.Seeds, files.Caption},
		Settings: map[string]any{"profile": p.Headopt, "hyper_parameters": headopt.PaperHypers,
			"grid_points": headopt.DefaultGridPoints}},
		files.Figure, func(cfg Config, b build, d *headopt.Data) error {
			_, err := headopt.Make(cfg.Backend, headopt.MakeConfig{Profile: p.Headopt, Out: cfg.Out,
				TracesDir: filepath.Join(b.work, "traces"), Command: cfg.Command, Log: cfg.Log,
				RunProgress: runBar(cfg, b)}, d)
			return err
		})
	for _, ext := range []string{"csv", "md", "tex"} {
		fig2.Outputs = append(fig2.Outputs, files.Table+"."+ext)
	}

	afiles := headopt.AblationFilesFor("", tag)
	ablation := onData(Target{Name: "cg_stopping_" + tag, Title: "CG stopping-rule ablation" + on,
		Outputs: []string{afiles.Steps, afiles.Caption},
		Settings: map[string]any{"profile": p.Headopt, "rules": headopt.StoppingRules, "cg_max_iterations": headopt.AblationCaps(p.Headopt),
			"hyper_parameters": headopt.PaperHypers}},
		afiles.Figure, func(cfg Config, b build, d *headopt.Data) error {
			_, err := headopt.MakeAblation(cfg.Backend, headopt.AblationConfig{Profile: p.Headopt, Out: cfg.Out,
				TracesDir: filepath.Join(b.work, "traces"), Command: cfg.Command, Log: cfg.Log,
				RunProgress: runBar(cfg, b)}, d)
			return err
		})
	return []Target{fig1, fig2, ablation}, nil
}

// runBar returns the step-progress callback of head-optimisation run i of runs for build b
// (cfg.RunBar with a description naming the target, the run and its seed), or nil without
// cfg.RunBar.
func runBar(cfg Config, b build) func(i, runs int, m method.Method, seed uint64) func(done, total int) {
	if cfg.RunBar == nil {
		return nil
	}
	return func(i, runs int, m method.Method, seed uint64) func(done, total int) {
		return cfg.RunBar(fmt.Sprintf("[%d/%d] %s", b.k, b.n, headopt.RunLabel(i, runs, m, seed)))
	}
}

// Stamp records what a target was built from (see the package documentation). Built and
// Seconds are informative; the other fields decide whether the target is up to date.
type Stamp struct {
	Target   string            `json:"target"`
	Profile  string            `json:"profile"`
	Settings json.RawMessage   `json:"settings"`
	Inputs   map[string]string `json:"inputs"`
	Code     string            `json:"code"`
	Backend  string            `json:"backend"`
	Outputs  []string          `json:"outputs"`
	Built    string            `json:"built,omitempty"`
	Seconds  float64           `json:"seconds,omitempty"`
}

// stale returns why the stamp on disk (nil: none) does not vouch for want, or "".
func (want *Stamp) stale(got *Stamp) string {
	switch {
	case got == nil:
		return "no stamp: never built, or interrupted"
	case got.Profile != want.Profile:
		return fmt.Sprintf("profile changed (%s → %s)", got.Profile, want.Profile)
	case !sameJSON(got.Settings, want.Settings):
		return "settings changed"
	case !maps.Equal(got.Inputs, want.Inputs):
		return "inputs changed"
	case got.Code != want.Code:
		return "code changed"
	case got.Backend != want.Backend:
		return fmt.Sprintf("backend changed (%s → %s)", got.Backend, want.Backend)
	case !slices.Equal(got.Outputs, want.Outputs):
		return "declared outputs changed"
	}
	return ""
}

// sameJSON reports whether a and b are the same JSON text up to insignificant white space.
func sameJSON(a, b json.RawMessage) bool {
	var ca, cb bytes.Buffer
	return json.Compact(&ca, a) == nil && json.Compact(&cb, b) == nil && bytes.Equal(ca.Bytes(), cb.Bytes())
}

// key returns the target's name and a short hash of the fields that decide whether it is up to
// date: the name of its work directory, so that intermediate results are only ever reused by a
// build of the same identity.
func (s *Stamp) key() (string, error) {
	id, err := json.Marshal(Stamp{Target: s.Target, Profile: s.Profile, Settings: s.Settings, Inputs: s.Inputs,
		Code: s.Code, Backend: s.Backend, Outputs: s.Outputs})
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(id)
	return s.Target + "-" + hex.EncodeToString(sum[:6]), nil
}

// prepareWork returns the work directory of the build identified by key in out, after
// removing the target's work directories of other identities (and, when fresh, this one's).
// Only an interrupted build of the same identity finds its intermediate results again.
func prepareWork(out, target, key string, fresh bool) (string, error) {
	work := filepath.Join(out, StampDir, key)
	old, err := filepath.Glob(filepath.Join(out, StampDir, target+"-*"))
	if err != nil {
		return "", err
	}
	for _, dir := range old {
		if dir != work || fresh {
			if err := os.RemoveAll(dir); err != nil {
				return "", fmt.Errorf("reproduce: removing an outdated work directory: %w", err)
			}
		}
	}
	return work, nil
}

func stampPath(out, target string) string { return filepath.Join(out, StampDir, target+".json") }

// readStamp returns the stamp at path, or nil when there is none or it cannot be parsed (the
// target is then rebuilt).
func readStamp(path string) *Stamp {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var s Stamp
	if err := json.Unmarshal(b, &s); err != nil {
		return nil
	}
	return &s
}

// Result says what Run did with each target, in order.
type Result struct {
	Built, Skipped []string
}

// Run builds every target of cfg that is not up to date (all of them with cfg.Force), writing
// each target's stamp after its outputs, and returns which were built and which skipped.
func Run(cfg Config) (*Result, error) {
	if cfg.Out == "" {
		return nil, fmt.Errorf("reproduce: no output directory")
	}
	if cfg.Backend == nil {
		return nil, fmt.Errorf("reproduce: no backend")
	}
	log := cfg.Log
	if log == nil {
		log = io.Discard
	}
	targets, err := Targets(cfg)
	if err != nil {
		return nil, err
	}
	code, err := buildinfo.Code()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	fmt.Fprintf(log, "reproduce: profile %s, %d targets, output %s, backend %s\n", cfg.Plan.Profile, len(targets), cfg.Out,
		backend.Describe(cfg.Backend))
	res := &Result{}
	for i, t := range targets {
		k, n := i+1, len(targets)
		settings, err := json.Marshal(t.Settings)
		if err != nil {
			return res, fmt.Errorf("reproduce: %s settings: %w", t.Name, err)
		}
		want := &Stamp{Target: t.Name, Profile: cfg.Plan.Profile, Settings: settings, Inputs: t.Inputs, Code: code,
			Backend: backend.Describe(cfg.Backend), Outputs: t.Outputs}
		path := stampPath(cfg.Out, t.Name)
		why := want.stale(readStamp(path))
		for _, f := range t.Outputs {
			if why != "" {
				break
			}
			if st, err := os.Stat(filepath.Join(cfg.Out, f)); err != nil || !st.Mode().IsRegular() {
				why = "output " + f + " missing"
			}
		}
		if why == "" && cfg.Force {
			why = "forced"
		}
		if why == "" {
			fmt.Fprintf(log, "[%d/%d] %s: up to date, skipped\n", k, n, t.Title)
			res.Skipped = append(res.Skipped, t.Name)
			continue
		}
		fmt.Fprintf(log, "[%d/%d] %s: building (%s)\n", k, n, t.Title, why)
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return res, fmt.Errorf("reproduce: %w", err)
		}
		key, err := want.key()
		if err != nil {
			return res, err
		}
		work, err := prepareWork(cfg.Out, t.Name, key, cfg.Force)
		if err != nil {
			return res, err
		}
		began := time.Now()
		if err := t.build(cfg, build{k: k, n: n, work: work}); err != nil {
			return res, fmt.Errorf("reproduce: %s: %w", t.Title, err)
		}
		for _, f := range t.Outputs {
			if _, err := os.Stat(filepath.Join(cfg.Out, f)); err != nil {
				return res, fmt.Errorf("reproduce: %s did not write its declared output %s", t.Title, f)
			}
		}
		want.Built, want.Seconds = time.Now().UTC().Format(time.RFC3339), time.Since(began).Seconds()
		if err := writeStamp(path, want); err != nil {
			return res, err
		}
		res.Built = append(res.Built, t.Name)
		fmt.Fprintf(log, "[%d/%d] %s: done in %s (%d outputs)\n", k, n, t.Title, time.Since(began).Round(time.Second), len(t.Outputs))
	}
	fmt.Fprintf(log, "reproduce: %d built, %d up to date, %s; outputs in %s\n", len(res.Built), len(res.Skipped),
		time.Since(start).Round(time.Second), cfg.Out)
	return res, nil
}

func writeStamp(path string, s *Stamp) error {
	return atomicfile.Write(path, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(s)
	})
}
