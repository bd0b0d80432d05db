package zoo

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/ml/train/optimizer"

	"github.com/fgn-paper/fgn/experiments/report"
	"github.com/fgn-paper/fgn/fgn"
)

// Grid is what Sweep runs: every model with every optimizer and seed. The optimizers are FGN
// and SGN with their default settings (FGN().Done(), SGN().Done()), Adam at each of AdamRates
// (GoMLX's Adam otherwise at its defaults), and FGN and SGN at every combination of
// LearningRates (α), Dampings (λ, a policy's initial λ), Policies and CGCaps, their other
// settings those of FGN() and SGN().
type Grid struct {
	Models                  []string
	Seeds                   []uint64
	AdamRates               []float64
	LearningRates, Dampings []float64
	Policies                []fgn.DampingPolicy
	CGCaps                  []int
}

// DefaultGrid is the sweep's grid: every zoo model, three seeds, Adam at GoMLX's default learning
// rate 0.001 and three larger ones, and FGN and SGN at α ∈ {0.1, 0.3, 1}, λ ∈ {0.1, 1, 10}, constant
// and Levenberg-Marquardt damping, at most 5 or 10 CG iterations. BENCHMARKS.md records it on the
// MLPs, and the defaults against Adam on the CNN, whose Gauss-Newton steps cost seconds.
var DefaultGrid = Grid{
	Models:        []string{"relu-mlp", "tanh-mlp", "cnn"},
	Seeds:         []uint64{1, 2, 3},
	AdamRates:     []float64{0.001, 0.003, 0.01, 0.03},
	LearningRates: []float64{0.1, 0.3, 1},
	Dampings:      []float64{0.1, 1, 10},
	Policies:      []fgn.DampingPolicy{fgn.ConstantDamping{}, fgn.LevenbergMarquardt()},
	CGCaps:        []int{5, 10},
}

// Names of the default-settings optimizers in the sweep's tables.
const (
	FGNDefault = "FGN()"
	SGNDefault = "SGN()"
)

// Optimizers returns the grid's optimizers: the two defaults, Adam, then the FGN and SGN grid.
func (g Grid) Optimizers() []Optimizer {
	opts := []Optimizer{
		{FGNDefault, func() optimizer.Interface { return fgn.FGN().Done() }},
		{SGNDefault, func() optimizer.Interface { return fgn.SGN().Done() }},
	}
	for _, lr := range g.AdamRates {
		opts = append(opts, Optimizer{"Adam lr=" + num(lr),
			func() optimizer.Interface { return optimizer.Adam().LearningRate(lr).Done() }})
	}
	for _, method := range []struct {
		name string
		new  func() *fgn.GNConfig
	}{{"FGN", fgn.FGN}, {"SGN", fgn.SGN}} {
		for _, policy := range g.Policies {
			for _, cg := range g.CGCaps {
				for _, lr := range g.LearningRates {
					for _, lambda := range g.Dampings {
						name := fmt.Sprintf("%s α=%s λ=%s %s CG≤%d", method.name, num(lr), num(lambda), policy, cg)
						opts = append(opts, Optimizer{name, func() optimizer.Interface {
							return method.new().LearningRate(lr).Damping(lambda).DampingPolicy(policy).
								CGMaxIterations(cg).Done()
						}})
					}
				}
			}
		}
	}
	return opts
}

// num formats a setting in names: the shortest form that round-trips.
func num(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

// Columns of the sweep's runs table.
var runColumns = []string{"model", "optimizer", "seed", "steps", "diverged", "accuracy", "loss", "median_step_ms", "train_s"}

// Sweep trains every model of the grid with every optimizer and seed for cfg.Epochs epochs of
// cfg.Batch examples (cfg.Seed is replaced by each seed) and returns one row per run. progress,
// if not nil, is called after each run.
func Sweep(be compute.Backend, g Grid, cfg Config, progress func(done, total int, r Result)) (*report.Table, error) {
	t := report.NewTable(runColumns...)
	opts := g.Optimizers()
	total, done := len(g.Models)*len(opts)*len(g.Seeds), 0
	for _, name := range g.Models {
		m, err := ModelByName(name)
		if err != nil {
			return nil, err
		}
		for _, opt := range opts {
			for _, seed := range g.Seeds {
				c := cfg
				c.Seed = seed
				r, err := Train(be, m, opt, c)
				if err != nil {
					return nil, err
				}
				t.Add(r.Model, r.Optimizer, r.Seed, r.Steps, r.Diverged, r.Accuracy, r.Loss,
					float64(r.MedianStep.Microseconds())/1e3, r.TrainTime.Seconds())
				if done++; progress != nil {
					progress(done, total, r)
				}
			}
		}
	}
	return t, nil
}

// DivergedAccuracy is the held-out accuracy below which Summary counts a run as diverged (or
// not trained), whether or not train.Loop stopped it: half of what every zoo model reaches,
// five times chance.
const DivergedAccuracy = 0.5

// outcome is one optimizer's runs on one model.
type outcome struct {
	mean, min float64
	runs      int
	diverged  int
}

// Summary writes the runs table of Sweep as Markdown: for each optimizer and model the mean
// held-out accuracy over the seeds, the worst seed, and the runs that diverged; then, per
// optimizer, the worst gap over the models between its mean and the best Adam's mean (of the
// learning rates swept, per model). The defaults and Adam come first, then the grid from the
// smallest worst gap to the largest.
func Summary(t *report.Table, w io.Writer) error {
	col := map[string]int{}
	for _, name := range []string{"model", "optimizer", "accuracy"} {
		c, err := t.Column(name)
		if err != nil {
			return err
		}
		col[name] = c
	}
	var models, opts []string
	acc := map[[2]string][]float64{}
	for k, row := range t.Rows {
		m, o := row[col["model"]], row[col["optimizer"]]
		a, err := strconv.ParseFloat(row[col["accuracy"]], 64)
		if err != nil {
			return fmt.Errorf("zoo: runs table row %d: %w", k+1, err)
		}
		if !slices.Contains(models, m) {
			models = append(models, m)
		}
		if !slices.Contains(opts, o) {
			opts = append(opts, o)
		}
		acc[[2]string{m, o}] = append(acc[[2]string{m, o}], a)
	}
	res := map[[2]string]outcome{}
	bestAdam := map[string]float64{}
	for key, as := range acc {
		o := outcome{min: math.Inf(1), runs: len(as)}
		for _, a := range as {
			o.mean += a / float64(len(as))
			o.min = min(o.min, a)
			if a < DivergedAccuracy {
				o.diverged++
			}
		}
		res[key] = o
		if strings.HasPrefix(key[1], "Adam") {
			bestAdam[key[0]] = max(bestAdam[key[0]], o.mean)
		}
	}
	gap := map[string]float64{}
	for _, o := range opts {
		gap[o] = math.Inf(1)
		for _, m := range models {
			gap[o] = min(gap[o], res[[2]string{m, o}].mean-bestAdam[m])
		}
	}
	// The defaults first, then Adam, then the grid by decreasing worst gap; the run order within each.
	rank := func(o string) int {
		switch {
		case o == FGNDefault || o == SGNDefault:
			return 0
		case strings.HasPrefix(o, "Adam"):
			return 1
		}
		return 2
	}
	slices.SortStableFunc(opts, func(a, b string) int {
		if ra, rb := rank(a), rank(b); ra != rb || ra < 2 {
			return cmp.Compare(ra, rb)
		}
		return cmp.Compare(gap[b], gap[a])
	})
	fmt.Fprintf(w, "| optimizer |")
	for _, m := range models {
		fmt.Fprintf(w, " %s: mean (worst) %% |", m)
	}
	fmt.Fprintf(w, " diverged | worst gap to best Adam (points) |\n|---|")
	for range models {
		fmt.Fprintf(w, "---|")
	}
	fmt.Fprintf(w, "---|---|\n")
	for _, o := range opts {
		fmt.Fprintf(w, "| %s |", o)
		diverged, runs := 0, 0
		for _, m := range models {
			r := res[[2]string{m, o}]
			fmt.Fprintf(w, " %.1f (%.1f) |", 100*r.mean, 100*r.min)
			diverged += r.diverged
			runs += r.runs
		}
		_, err := fmt.Fprintf(w, " %d/%d | %+.1f |\n", diverged, runs, 100*gap[o])
		if err != nil {
			return err
		}
	}
	return nil
}
