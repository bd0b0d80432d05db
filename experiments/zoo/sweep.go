package zoo

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/gomlx/compute"

	"github.com/fgn-paper/fgn/experiments/report"
)

// runColumns are the columns of the sweep's runs table: one row per run and evaluation (Epoch),
// the run's fields repeated on each of its rows.
var runColumns = []string{"model", "task", "optimizer", "seed", "batch", "compile_seconds", "diverged", "failed",
	"epoch", "steps", "seconds", "train_loss", "held_out_loss", "held_out_accuracy", "damping", "mean_rho",
	"min_damping", "rejected_steps", "skipped_steps", "mean_step_length"}

// optionalRunColumns are the columns of runColumns that tables written before them lack: such a
// table's runs read NaN there (RunsFromTable), and CompleteRunsTable adds them to it.
var optionalRunColumns = []string{"mean_step_length"}

// CompleteRunsTable adds to a runs table t the optionalRunColumns it lacks, NaN in every row, so
// that tables written before those columns concatenate with newer ones. A table without every
// other column of runColumns is not a runs table and is left as it is.
func CompleteRunsTable(t *report.Table) {
	for _, name := range runColumns {
		if _, err := t.Column(name); err != nil && !slices.Contains(optionalRunColumns, name) {
			return
		}
	}
	for _, name := range optionalRunColumns {
		if _, err := t.Column(name); err == nil {
			continue
		}
		t.Header = append(t.Header, name)
		for k := range t.Rows {
			t.Rows[k] = append(t.Rows[k], "NaN")
		}
	}
}

// Sweep trains every model with every optimizer and seed (Train, cfg.Seed replaced by each seed)
// and returns the runs, in that order. A run of finished with the same model, optimizer and seed
// is taken as it is instead of training it again (a resumed sweep). progress, if not nil, is
// called after each run trained.
func Sweep(be compute.Backend, models []Model, opts []Optimizer, seeds []uint64, cfg Config, finished []*Run,
	progress func(done, total int, r *Run)) ([]*Run, error) {
	kept := map[runKey]*Run{}
	for _, r := range finished {
		kept[runKey{r.Model, r.Optimizer, r.Seed}] = r
	}
	var runs []*Run
	total := len(models) * len(opts) * len(seeds)
	for _, m := range models {
		for _, opt := range opts {
			for _, seed := range seeds {
				if r := kept[runKey{m.Name, opt.Name, seed}]; r != nil {
					runs = append(runs, r)
					continue
				}
				c := cfg
				c.Seed = seed
				r, err := Train(be, m, opt, c)
				if err != nil {
					return runs, err
				}
				runs = append(runs, r)
				if progress != nil {
					progress(len(runs), total, r)
				}
			}
		}
	}
	return runs, nil
}

// runKey identifies a run of a sweep.
type runKey struct {
	model, optimizer string
	seed             uint64
}

// Table returns the runs as the sweep's runs table (runColumns), the failures' errors cut to their
// first line.
func Table(runs []*Run) *report.Table {
	t := report.NewTable(runColumns...)
	for _, r := range runs {
		failed, _, _ := strings.Cut(r.Failed, "\n")
		epochs := r.Epochs
		if len(epochs) == 0 { // a run that failed before its first evaluation
			epochs = []Epoch{{HeldOutLoss: math.NaN(), TrainLoss: math.NaN(), HeldOutAccuracy: math.NaN(),
				Damping: math.NaN(), MeanRho: math.NaN(), MinDamping: math.NaN(), MeanStepLength: math.NaN()}}
		}
		for _, e := range epochs {
			t.Add(r.Model, r.Task, r.Optimizer, r.Seed, r.Batch, r.CompileSeconds, r.Diverged, failed,
				e.Epoch, e.Steps, e.Seconds, e.TrainLoss, e.HeldOutLoss, e.HeldOutAccuracy, e.Damping, e.MeanRho,
				e.MinDamping, e.Rejected, e.Skipped, e.MeanStepLength)
		}
	}
	return t
}

// RunsFromTable parses a runs table written by Table (or several concatenated), in row order; an
// optional column it lacks (optionalRunColumns) reads NaN.
func RunsFromTable(t *report.Table) ([]*Run, error) {
	col := map[string]int{}
	for _, name := range runColumns {
		c, err := t.Column(name)
		if err != nil && !slices.Contains(optionalRunColumns, name) {
			return nil, err
		}
		if err == nil {
			col[name] = c
		}
	}
	var runs []*Run
	index := map[[3]string]*Run{}
	for k, row := range t.Rows {
		get := func(name string) string {
			c, ok := col[name]
			if !ok {
				return "NaN"
			}
			return row[c]
		}
		var ferr error
		float := func(name string) float64 {
			x, err := strconv.ParseFloat(get(name), 64)
			if err != nil && ferr == nil {
				ferr = fmt.Errorf("zoo: runs table row %d, column %s: %w", k+1, name, err)
			}
			return x
		}
		integer := func(name string) int { return int(float(name)) }
		key := [3]string{get("model"), get("optimizer"), get("seed")}
		r := index[key]
		if r == nil {
			seed, err := strconv.ParseUint(get("seed"), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("zoo: runs table row %d: seed: %w", k+1, err)
			}
			r = &Run{Model: key[0], Task: get("task"), Optimizer: key[1], Seed: seed, Batch: integer("batch"),
				CompileSeconds: float("compile_seconds"), Diverged: get("diverged") == "true", Failed: get("failed")}
			index[key] = r
			runs = append(runs, r)
		}
		e := Epoch{Epoch: integer("epoch"), Steps: integer("steps"), Seconds: float("seconds"),
			TrainLoss: float("train_loss"), HeldOutLoss: float("held_out_loss"),
			HeldOutAccuracy: float("held_out_accuracy"), Damping: float("damping"), MeanRho: float("mean_rho"),
			MinDamping: float("min_damping"), Rejected: integer("rejected_steps"), Skipped: integer("skipped_steps"),
			MeanStepLength: float("mean_step_length")}
		if ferr != nil {
			return nil, ferr
		}
		if !(r.Failed != "" && len(r.Epochs) == 0 && math.IsNaN(e.HeldOutAccuracy)) {
			r.Epochs = append(r.Epochs, e)
		}
	}
	return runs, nil
}
