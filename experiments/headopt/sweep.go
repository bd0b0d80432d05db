package headopt

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/gomlx/compute"

	"github.com/fgn-paper/fgn/experiments/method"
	"github.com/fgn-paper/fgn/experiments/report"
	"github.com/fgn-paper/fgn/experiments/train"
	"github.com/fgn-paper/fgn/fgn/backend"
)

// SweepConfig configures the final runs.
type SweepConfig struct {
	Profile Profile
	// Hyper holds each method's hyper-parameters (from a selection file); a missing method
	// takes the paper's values (method.Paper).
	Hyper map[method.Method]method.Hyper
	// Dir is the directory of the per-run trace CSVs (TracePath).
	Dir string
	// Command is recorded in the provenance comments.
	Command string
	// RunProgress, when set, returns the step-progress callback of run k of n (1-based); it is
	// called for the runs that are trained, not for those read back.
	RunProgress func(k, n int, m method.Method, seed uint64) func(done, total int)
	// Progress, when set, follows the whole sweep: it is called with the steps done over all
	// (method, seed) runs and their total (methods × seeds × steps per run), after every step of
	// a run that is trained and once for every finished run read back, which counts whole. The
	// count never decreases and its last value is the total.
	Progress func(done, total int)
	// Log, when set, gets one line per run (done, or read back) with the sweep's progress.
	Log io.Writer
}

// TracePath is the trace CSV of one (method, seed) run in dir.
func TracePath(dir string, m method.Method, seed uint64) string {
	return filepath.Join(dir, fmt.Sprintf("%s_seed%d.csv", m, seed))
}

// identityKeys are the trace comments that must match for a finished run to be reused: the
// run's whole configuration, its data and its backend (timings are only comparable on one).
var identityKeys = []string{"method", "model", "learning_rate", "beta1", "beta2", "epsilon", "damping", "damping_policy", "cg_max_iterations",
	"cg_tolerance", "cg_stopping_rule", "row_operator", "warm_start", "classes",
	"batch_size", "epochs", "eval_every", "seed", "backend", "data"}

// Sweep runs every (method, seed) of the profile on the data, standardised with the training
// mean and standard deviation, and returns the runs in (method, seed) order.
//
// Resumption: a run whose trace CSV exists in cfg.Dir is read back instead of run, after
// checking that the configuration recorded in its comments (identityKeys) equals this sweep's;
// a mismatch is an error naming the file and the field (finished results are never silently
// overwritten: move them away or use another directory). Each new run's trace is written
// atomically when the run finishes, so an interrupted sweep loses at most the run in flight;
// temporary files that an interrupted write left behind are removed at the start.
func Sweep(be compute.Backend, cfg SweepConfig, d *Data) ([]Run, error) {
	p := cfg.Profile
	if p.Seeds < 1 || len(p.Methods) == 0 {
		return nil, fmt.Errorf("headopt: a sweep needs ≥ 1 seed and ≥ 1 method, got %d and %d", p.Seeds, len(p.Methods))
	}
	if err := removeStaleTemps(cfg.Dir); err != nil {
		return nil, err
	}
	trainSet, tests, err := standardized(d.Train, d.Test)
	if err != nil {
		return nil, err
	}
	testSet := tests[0]
	steps := p.Epochs * ((trainSet.N + p.BatchSize - 1) / p.BatchSize)
	total := len(p.Methods) * p.Seeds
	sweepSteps := total * steps
	stepsBefore := 0 // steps of the runs before the current one
	start := time.Now()
	var runs []Run
	k := 0
	for _, m := range p.Methods {
		for seed := uint64(1); seed <= uint64(p.Seeds); seed++ {
			k++
			hyper, ok := cfg.Hyper[m]
			if !ok {
				hyper = method.Paper(m)
			}
			rc := train.Config{Method: m, Hyper: hyper, Classes: d.Classes, BatchSize: p.BatchSize,
				Epochs: p.Epochs, EvalEvery: p.EvalEvery, Seed: seed}
			want := (&train.Trace{Config: rc.Resolved(), Backend: backend.Describe(be), Classes: d.Classes}).Table()
			want.Comment("data", d.Source)
			path := TracePath(cfg.Dir, m, seed)
			run, found, err := readFinished(path, want, steps)
			if err != nil {
				return nil, err
			}
			status := "read back"
			if !found {
				rc.Progress = sweepProgress(cfg, k, total, m, seed, stepsBefore, sweepSteps)
				loadBefore := report.LoadAverage()
				tr, err := train.Run(be, rc, trainSet, testSet)
				if err != nil {
					return nil, fmt.Errorf("headopt: %s seed %d: %w", m, seed, err)
				}
				tab := tr.Table()
				tab.Comment("data", d.Source)
				// Other jobs on the host inflate the wall times: say how busy it was.
				tab.Comment("host_load", fmt.Sprintf("1/5/15-min load averages %s before, %s after the run", loadBefore, report.LoadAverage()))
				addProvenance(tab, be, p.Name, cfg.Command)
				if err := tab.Write(path); err != nil {
					return nil, err
				}
				run = Run{Method: m, Seed: seed, Points: tr.Points}
				status = "done"
			}
			stepsBefore += steps
			if found && cfg.Progress != nil {
				cfg.Progress(stepsBefore, sweepSteps)
			}
			runs = append(runs, run)
			if cfg.Log != nil {
				fmt.Fprintf(cfg.Log, "run %d/%d %-4s seed %-2d %-9s final test acc %6.2f%%, %8.3f s optimisation  (sweep %s)\n",
					k, total, m, seed, status, 100*run.Points[len(run.Points)-1].EvalAccuracy, run.FinalSeconds(),
					time.Since(start).Round(time.Second))
			}
		}
	}
	return runs, nil
}

// RunLabel names run k of n, a method and seed, in progress displays.
func RunLabel(k, n int, m method.Method, seed uint64) string {
	return fmt.Sprintf("run %d/%d %s seed %d", k, n, m, seed)
}

// sweepProgress returns the step callback of run k of n: the run's own (cfg.RunProgress) and
// the sweep's (cfg.Progress, offset by the stepsBefore steps of the earlier runs), or nil when
// neither is set.
func sweepProgress(cfg SweepConfig, k, n int, m method.Method, seed uint64, stepsBefore, sweepSteps int) func(done, total int) {
	var run func(done, total int)
	if cfg.RunProgress != nil {
		run = cfg.RunProgress(k, n, m, seed)
	}
	if cfg.Progress == nil {
		return run
	}
	return func(done, total int) {
		if run != nil {
			run(done, total)
		}
		cfg.Progress(stepsBefore+done, sweepSteps)
	}
}

// readFinished reads the finished run at path, if any, checking it against the expected
// configuration comments and number of steps.
func readFinished(path string, want *report.Table, steps int) (Run, bool, error) {
	if _, err := os.Stat(path); os.IsNotExist(err) {
		return Run{}, false, nil
	}
	tab, err := report.Read(path)
	if err != nil {
		return Run{}, false, fmt.Errorf("headopt: reading finished run: %w", err)
	}
	for _, key := range identityKeys {
		w, inWant := want.Lookup(key)
		g, inGot := tab.Lookup(key)
		if inWant != inGot || w != g {
			return Run{}, false, fmt.Errorf("headopt: %s was written with %s = %q, but this sweep has %q; "+
				"finished runs are never overwritten: move the file away or use another output directory", path, key, g, w)
		}
	}
	points, err := train.PointsFromTable(tab)
	if err != nil {
		return Run{}, false, fmt.Errorf("headopt: %s: %w", path, err)
	}
	if len(points) == 0 || points[len(points)-1].Step != steps {
		return Run{}, false, fmt.Errorf("headopt: %s does not end at step %d (a finished run of this sweep does)", path, steps)
	}
	m, _ := want.Lookup("method")
	var seed uint64
	s, _ := want.Lookup("seed")
	if _, err := fmt.Sscan(s, &seed); err != nil {
		return Run{}, false, fmt.Errorf("headopt: %s: seed %q: %w", path, s, err)
	}
	return Run{Method: method.Method(m), Seed: seed, Points: points}, true, nil
}

// removeStaleTemps deletes the temporary files (atomicfile's ".<name>.tmp-*") that a sweep
// killed while writing a trace left in dir. Only one sweep may use a directory at a time.
func removeStaleTemps(dir string) error {
	stale, err := filepath.Glob(filepath.Join(dir, ".*.csv.tmp-*"))
	if err != nil {
		return err
	}
	for _, f := range stale {
		if err := os.Remove(f); err != nil {
			return fmt.Errorf("headopt: removing an interrupted write: %w", err)
		}
	}
	return nil
}

// addProvenance adds report.Provenance's comments (backend, device, build, profile, command,
// date) that t does not have yet.
func addProvenance(t *report.Table, be compute.Backend, profile, command string) {
	p := report.NewTable()
	report.Provenance(p, be, profile, command, time.Now())
	for _, kv := range p.Comments {
		if _, ok := t.Lookup(kv[0]); !ok {
			t.Comment(kv[0], kv[1])
		}
	}
}
