package headopt

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"
	"time"

	"github.com/gomlx/compute"

	"github.com/fgn-paper/fgn/experiments/method"
	"github.com/fgn-paper/fgn/experiments/plot"
	"github.com/fgn-paper/fgn/experiments/report"
	"github.com/fgn-paper/fgn/fgn"
)

// The CG stopping-rule ablation trains FGN (closed-form Gram) with the paper's settings under
// each of the two stopping rules of fgn.StoppingRule, the paper's Algorithm 1 (stop once the
// whitened row residual satisfies ‖e‖ ≤ tol·‖r̃‖) and the library's default (stop once the
// parameter-space residual satisfies ‖(H_FGN + λI)d + g‖ ≤ tol·‖g‖), on the same seeds,
// initialisations and batches, and compares them by step. It does so at each CG iteration cap
// of AblationCaps: the paper's, at which both rules usually run CG to the cap and coincide, and
// one at which CG stops by its tolerance, where the rules stop at different iterations.

// StoppingRules are the rules the ablation compares, in table and legend order: the paper's
// Algorithm 1 (the rule of Figure 2 and Table 1, method.Paper), then the library's
// default.
var StoppingRules = []fgn.StoppingRule{fgn.StopWhitenedRowResidual, fgn.StopParameterResidual}

// RuleLabel returns the legend label of FGN (closed-form Gram) under rule r.
func RuleLabel(r fgn.StoppingRule) string {
	switch r {
	case fgn.StopParameterResidual:
		return method.FGN.Label() + ", parameter-residual rule"
	case fgn.StopWhitenedRowResidual:
		return method.FGN.Label() + ", whitened-row rule (Algorithm 1)"
	}
	return method.FGN.Label() + ", " + r.String()
}

// AblationCaps returns the CG iteration caps at which the ablation compares the rules, in table
// and figure order: the paper's N_CG (Figure 2's), then the batch size b of profile p, the
// dimension of FGN's row system, within which CG converges (in exact arithmetic), so that it
// stops by its tolerance; at least N_CG + 1.
func AblationCaps(p Profile) []int {
	paper := method.Paper(method.FGN).GN.CG.MaxIterations
	return []int{paper, max(p.BatchSize, paper+1)}
}

// AblationFiles are the output file names of the ablation for data tagged tag.
type AblationFiles struct{ Figure, Caption, Steps, TracesDir string }

// AblationFilesFor returns the ablation's paths in dir: the figure
// dir/ablation_cg_stopping_<tag>.{svg,png,pdf}, its caption
// dir/ablation_cg_stopping_<tag>.caption.md, the step curves
// dir/ablation_cg_stopping_<tag>_steps.csv and the traces directory
// dir/traces_ablation_cg_stopping_<tag>, with one subdirectory per cap and rule
// (cg<cap>/<rule>).
func AblationFilesFor(dir, tag string) AblationFiles {
	base := "ablation_cg_stopping_" + tag
	return AblationFiles{
		Figure:    filepath.Join(dir, base),
		Caption:   filepath.Join(dir, base+".caption.md"),
		Steps:     filepath.Join(dir, base+"_steps.csv"),
		TracesDir: filepath.Join(dir, "traces_"+base),
	}
}

// AblationConfig configures MakeAblation.
type AblationConfig struct {
	// Profile fixes the runs (its Methods are ignored: the ablation trains FGN only).
	Profile Profile
	// Out is the output directory (AblationFilesFor(Out, d.Tag())); TracesDir, when set,
	// replaces its traces directory.
	Out, TracesDir string
	// Command is recorded in the provenance; RunProgress (numbering the runs of both rules
	// together) and Log are SweepConfig's.
	Command     string
	RunProgress func(k, n int, m method.Method, seed uint64) func(done, total int)
	Log         io.Writer
}

// AblationSettings returns the settings of FGN (closed-form Gram) under rule r with at most
// maxIterations CG iterations: otherwise the paper's (method.Paper).
func AblationSettings(r fgn.StoppingRule, maxIterations int) fgn.Settings {
	s := method.Paper(method.FGN).GN
	s.CG.StoppingRule, s.CG.MaxIterations = r, maxIterations
	return s
}

// MakeAblation runs a resumable FGN sweep (Sweep) of the profile's seeds on d under each of
// StoppingRules at each of AblationCaps, its traces in a subdirectory cg<cap>/<rule> of the
// traces directory, then writes the step curves (AblationTable), the figure (AblationFigure)
// and its caption (AblationCaption), the last two drawn from the CSV as read back. It returns
// the paths written (not the traces).
func MakeAblation(be compute.Backend, cfg AblationConfig, d *Data) ([]string, error) {
	files := AblationFilesFor(cfg.Out, d.Tag())
	if cfg.TracesDir != "" {
		files.TracesDir = cfg.TracesDir
	}
	p := cfg.Profile
	p.Methods = []method.Method{method.FGN}
	caps := AblationCaps(p)
	runs := make([][][]Run, len(caps))
	for c, cap := range caps {
		runs[c] = make([][]Run, len(StoppingRules))
		for i, rule := range StoppingRules {
			sc := SweepConfig{Profile: p, Hyper: map[method.Method]method.Hyper{method.FGN: {GN: AblationSettings(rule, cap)}},
				Dir: filepath.Join(files.TracesDir, fmt.Sprintf("cg%d", cap), rule.String()), Command: cfg.Command, Log: cfg.Log}
			if cfg.RunProgress != nil {
				first, total := (c*len(StoppingRules)+i)*p.Seeds, len(caps)*len(StoppingRules)*p.Seeds
				sc.RunProgress = func(k, _ int, m method.Method, seed uint64) func(done, total int) {
					return cfg.RunProgress(first+k, total, m, seed)
				}
			}
			if cfg.Log != nil {
				fmt.Fprintf(cfg.Log, "CG stopping rule %s, at most %d CG iterations: %s (traces: %s)\n", rule, cap, RuleLabel(rule), sc.Dir)
			}
			var err error
			if runs[c][i], err = Sweep(be, sc, d); err != nil {
				return nil, err
			}
		}
	}
	t, err := AblationTable(caps, runs, d.Title())
	if err != nil {
		return nil, err
	}
	t.Comment("source", d.Source)
	report.Provenance(t, be, p.Name, cfg.Command, time.Now())
	if err := t.Write(files.Steps); err != nil {
		return nil, err
	}
	drawn, err := RedrawAblation(files, d.Title())
	return append([]string{files.Steps}, drawn...), err
}

// RedrawAblation draws the ablation's figure (AblationFigure) and caption (AblationCaption) from
// its CSV file in files, for data titled title, and returns the paths written. MakeAblation
// calls it once the CSV file is written; redrawn from the same file, the outputs have the same
// bytes.
func RedrawAblation(files AblationFiles, title string) ([]string, error) {
	t, err := report.Read(files.Steps)
	if err != nil {
		return nil, err
	}
	paths, err := AblationFigure(t, files.Figure, title)
	if err != nil {
		return paths, err
	}
	text, err := AblationCaption(t, title)
	return writeCaption(paths, files.Caption, text, err)
}

// ruleColumn is the ablation table's column of quantity q under rule r.
func ruleColumn(r fgn.StoppingRule, q string) string {
	return strings.ReplaceAll(r.String(), "-", "_") + "_" + q
}

// ablationQuantities are the per-rule columns of the ablation table (ruleColumn).
var ablationQuantities = []string{"acc_mean_pct", "acc_std_pct", "ce_mean", "ce_std", "cg_iterations"}

// AblationTable returns the ablation's step curves, one row per cap of caps and evaluation step:
// for each rule of StoppingRules (runs[c][i] are FGN's runs with at most caps[c] CG iterations
// under StoppingRules[i], the same seeds in the same order), the mean and population std over
// seeds of the test accuracy (percent) and cross-entropy, and the mean over seeds of the CG
// iterations per step since the previous evaluation (StepCurve); then the largest difference in
// test accuracy (percentage points) between the two rules over the seeds, each seed against
// itself. The comments record the settings shared by every run.
func AblationTable(caps []int, runs [][][]Run, title string) (*report.Table, error) {
	if len(runs) != len(caps) || len(caps) == 0 {
		return nil, fmt.Errorf("headopt: the ablation has %d caps and the runs of %d", len(caps), len(runs))
	}
	cols := []string{"cg_max_iterations", "step", "epoch"}
	for _, r := range StoppingRules {
		for _, q := range ablationQuantities {
			cols = append(cols, ruleColumn(r, q))
		}
	}
	t := report.NewTable(append(cols, "acc_max_abs_seed_diff_pct")...)
	seeds := 0
	for c, cap := range caps {
		if len(runs[c]) != len(StoppingRules) {
			return nil, fmt.Errorf("headopt: the ablation needs the runs of %d rules at cap %d, got %d", len(StoppingRules), cap, len(runs[c]))
		}
		curves := make([]StepCurve, len(runs[c]))
		for i, rr := range runs[c] {
			sc, err := StepCurves(rr, []method.Method{method.FGN})
			if err != nil {
				return nil, fmt.Errorf("headopt: cap %d, rule %s: %w", cap, StoppingRules[i], err)
			}
			curves[i] = sc[0]
		}
		a, b := runs[c][0], runs[c][1]
		if len(a) != len(b) || (c > 0 && len(a) != seeds) {
			return nil, fmt.Errorf("headopt: the ablation has %d and %d runs at cap %d, %d at cap %d", len(a), len(b), cap, seeds, caps[0])
		}
		seeds = len(a)
		steps := curves[0].Steps
		diff := make([]float64, len(steps))
		for s := range a {
			if a[s].Seed != b[s].Seed || len(a[s].Points) != len(steps) || len(b[s].Points) != len(steps) {
				return nil, fmt.Errorf("headopt: the ablation's run %d at cap %d is seed %d (%d points) under %s and seed %d (%d points) under %s",
					s, cap, a[s].Seed, len(a[s].Points), StoppingRules[0], b[s].Seed, len(b[s].Points), StoppingRules[1])
			}
			for k := range steps {
				if a[s].Points[k].Step != b[s].Points[k].Step {
					return nil, fmt.Errorf("headopt: seed %d is evaluated at step %d under %s and %d under %s", a[s].Seed,
						a[s].Points[k].Step, StoppingRules[0], b[s].Points[k].Step, StoppingRules[1])
				}
				diff[k] = math.Max(diff[k], 100*math.Abs(a[s].Points[k].EvalAccuracy-b[s].Points[k].EvalAccuracy))
			}
		}
		for k, step := range steps {
			row := []any{cap, step, curves[0].Epochs[k]}
			for _, c := range curves {
				row = append(row, 100*c.AccMean[k], 100*c.AccStd[k], c.CEMean[k], c.CEStd[k], c.CGIterations[k])
			}
			t.Add(append(row, diff[k])...)
		}
	}
	t.Comment("data", title)
	s := method.Paper(method.FGN).GN
	t.Comment("method", method.FGN.Label())
	t.Comment("settings", fmt.Sprintf("learning_rate %g, damping %g, cg_tolerance %g", s.LearningRate, s.Damping, s.CG.Tolerance))
	t.Comment("cg_max_iterations", fmt.Sprintf("%d (the paper's), %d (the batch size: CG stops by its tolerance)", caps[0], caps[len(caps)-1]))
	t.Comment("seeds", fmt.Sprint(seeds))
	t.Comment("aggregation", "per cg_max_iterations, mean and population std over seeds at each evaluation step; cg_iterations: mean over seeds of the mean CG iterations per step since the previous evaluation; acc_max_abs_seed_diff_pct: max over seeds of |accuracy under "+
		StoppingRules[0].String()+" − accuracy under "+StoppingRules[1].String()+"| of the same seed (same initialisation and batches); no clock is involved")
	return t, nil
}

// ablationData is the ablation table read back: per cap, its steps and, per rule, its columns.
type ablationData struct {
	cap         int
	steps, diff []float64
	by          []map[string][]float64 // by[i][q] is quantity q under StoppingRules[i]
}

// readAblation returns the table's rows per cap, in the table's order.
func readAblation(t *report.Table) ([]*ablationData, error) {
	caps, err := t.Floats("cg_max_iterations")
	if err != nil {
		return nil, err
	}
	if len(caps) == 0 {
		return nil, fmt.Errorf("headopt: the ablation table has no rows")
	}
	col := func(name string) ([]float64, error) { return t.Floats(name) }
	steps, err := col("step")
	if err != nil {
		return nil, err
	}
	diff, err := col("acc_max_abs_seed_diff_pct")
	if err != nil {
		return nil, err
	}
	ruleCols := make([]map[string][]float64, len(StoppingRules))
	for i, r := range StoppingRules {
		ruleCols[i] = map[string][]float64{}
		for _, q := range ablationQuantities {
			if ruleCols[i][q], err = col(ruleColumn(r, q)); err != nil {
				return nil, err
			}
		}
	}
	var out []*ablationData
	for k := range caps {
		if k == 0 || caps[k] != caps[k-1] {
			d := &ablationData{cap: int(caps[k])}
			for range StoppingRules {
				d.by = append(d.by, map[string][]float64{})
			}
			out = append(out, d)
		}
		d := out[len(out)-1]
		d.steps, d.diff = append(d.steps, steps[k]), append(d.diff, diff[k])
		for i := range StoppingRules {
			for _, q := range ablationQuantities {
				d.by[i][q] = append(d.by[i][q], ruleCols[i][q][k])
			}
		}
	}
	return out, nil
}

// meanCGPerStep is the mean number of CG iterations per step over the whole run under rule i:
// the per-interval means weighted by the steps of their intervals.
func (d *ablationData) meanCGPerStep(i int) float64 {
	var sum float64
	for k := 1; k < len(d.steps); k++ {
		sum += d.by[i]["cg_iterations"][k] * (d.steps[k] - d.steps[k-1])
	}
	return sum / d.steps[len(d.steps)-1]
}

// ablationStyle is the style of rule i: FGN's for the paper's rule (Figure 2's curve), a dashed
// series style for the other, drawn on top so that coinciding curves stay visible.
func ablationStyle(i int) plot.Style {
	if i == 0 {
		st, _ := plot.MethodStyle(method.FGN)
		return st
	}
	return plot.Series(1)
}

// AblationFigure draws the ablation (AblationPanels) and writes it as base.{svg,png,pdf}.
func AblationFigure(t *report.Table, base, title string) ([]string, error) {
	rows, err := AblationPanels(t, title)
	if err != nil {
		return nil, err
	}
	return plot.SaveGrid(rows, Figure2Width, Figure2Height, base)
}

// AblationPanels returns the ablation's panels from its table (AblationTable, read back from its
// CSV), one row per CG cap: mean test accuracy against optimisation step under each rule with
// ± 1 std bands, and the mean CG iterations per step since the previous evaluation.
func AblationPanels(t *report.Table, title string) ([][]*plot.Plot, error) {
	ds, err := readAblation(t)
	if err != nil {
		return nil, err
	}
	var rows [][]*plot.Plot
	for c, d := range ds {
		which := "the batch size"
		if c == 0 {
			which = "the paper's"
		}
		acc := plot.New(fmt.Sprintf("(%c) %s; CG cap %d (%s)", 'a'+2*c, title, d.cap, which), "optimisation step", "test accuracy (%)")
		cg := plot.New(fmt.Sprintf("(%c) CG iterations, cap %d", 'b'+2*c, d.cap), "optimisation step", "mean CG iterations per step")
		for i, r := range StoppingRules {
			st := ablationStyle(i)
			st.Glyph = nil // dense curves: lines only
			by := d.by[i]
			lo, hi := make([]float64, len(d.steps)), make([]float64, len(d.steps))
			for k := range d.steps {
				lo[k], hi[k] = by["acc_mean_pct"][k]-by["acc_std_pct"][k], by["acc_mean_pct"][k]+by["acc_std_pct"][k]
			}
			if err := plot.AddBand(acc, "", st.Color, d.steps, lo, hi); err != nil {
				return nil, err
			}
			if err := plot.AddSeries(acc, RuleLabel(r), st, d.steps, by["acc_mean_pct"]); err != nil {
				return nil, err
			}
			// Step 0 is the initial evaluation, which no step precedes. The styles are those of
			// the accuracy panel's legend.
			if err := plot.AddSeries(cg, "", st, d.steps[1:], by["cg_iterations"][1:]); err != nil {
				return nil, err
			}
		}
		rows = append(rows, []*plot.Plot{acc, cg})
	}
	return rows, nil
}

// AblationCaption returns the ablation's caption from its table (AblationTable with its
// provenance, read back from its CSV): what the panels show, where it was run, and what the
// numbers say at each cap — whether and where the rules stop at different iterations (the mean
// CG iterations per step between evaluations), the largest accuracy differences at matched
// steps and the final accuracies. Every statement about the outcome is computed from the table.
func AblationCaption(t *report.Table, title string) (string, error) {
	ds, err := readAblation(t)
	if err != nil {
		return "", err
	}
	get := func(key string) string { return report.Recorded(t, key) }
	b := report.NewCaption("CG stopping-rule ablation on "+title, "fgn reproduce")
	fmt.Fprintf(b, "%s trained with each of two CG stopping rules, otherwise the settings of Figure 2 (%s), %s seeds "+
		"with the same initialisations and batches under both: the whitened-row rule of the paper's Algorithm 1, "+
		"‖e‖ ≤ tol·‖r̃‖ in the whitened row space (Figure 2 and Table 1 use it), and the parameter-residual rule, "+
		"‖(H\\_FGN + λI)d + g‖ ≤ tol·‖g‖ (the library's default), each at two CG iteration caps: %s. "+
		"Left: mean test accuracy (± 1 std shaded) against optimisation step. Right: mean CG iterations per step "+
		"between evaluations, in the same styles.\n", get("method"), report.RecordedCode(t, "settings"), get("seeds"), get("cg_max_iterations"))
	fmt.Fprintf(b, "Run on %s, profile %s. No clock is involved: rerunning a seed on the same backend, build and CPU vector width gives the same numbers.\n",
		report.MeasuredOn(t), get("profile"))
	for c, d := range ds {
		fmt.Fprintf(b, "\n(%c, %c) At most %d CG iterations: ", 'a'+2*c, 'b'+2*c, d.cap)
		differ := 0
		for k := 1; k < len(d.steps); k++ {
			if d.by[0]["cg_iterations"][k] != d.by[1]["cg_iterations"][k] {
				differ++
			}
		}
		var parts []string
		for i, r := range StoppingRules {
			parts = append(parts, fmt.Sprintf("%s %.4g", RuleLabel(r), d.meanCGPerStep(i)))
		}
		if differ == 0 {
			fmt.Fprintf(b, "the rules stop CG after the same mean number of iterations in each of the %d intervals between evaluations", len(d.steps)-1)
		} else {
			fmt.Fprintf(b, "the rules stop CG after different mean numbers of iterations in %d of the %d intervals between evaluations", differ, len(d.steps)-1)
		}
		fmt.Fprintf(b, " (mean CG iterations per step over all steps and seeds: %s).", strings.Join(parts, ", "))
		maxMean, atMean, maxSeed, atSeed := 0.0, d.steps[0], 0.0, d.steps[0]
		for k := range d.steps {
			if v := math.Abs(d.by[0]["acc_mean_pct"][k] - d.by[1]["acc_mean_pct"][k]); v > maxMean {
				maxMean, atMean = v, d.steps[k]
			}
			if d.diff[k] > maxSeed {
				maxSeed, atSeed = d.diff[k], d.steps[k]
			}
		}
		if maxSeed == 0 {
			fmt.Fprintf(b, " The accuracy curves do not differ: every seed has the same test accuracy under both rules at each of the %d evaluation steps.",
				len(d.steps))
		} else {
			fmt.Fprintf(b, " The accuracy curves differ: at matched evaluation steps the mean test accuracies differ by at most %.3g percentage points "+
				"(step %.0f), and one seed's accuracy under the two rules by at most %.3g points (step %.0f).", maxMean, atMean, maxSeed, atSeed)
		}
		last := len(d.steps) - 1
		parts = parts[:0]
		for i, r := range StoppingRules {
			by := d.by[i]
			parts = append(parts, fmt.Sprintf("%s %.2f ± %.2f %% (CE %.4f)", RuleLabel(r), by["acc_mean_pct"][last], by["acc_std_pct"][last], by["ce_mean"][last]))
		}
		fmt.Fprintf(b, " After %.0f steps the mean test accuracy is %s.\n", d.steps[last], strings.Join(parts, ", "))
	}
	return b.String(), nil
}
