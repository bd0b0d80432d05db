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
// initialisations and batches, and compares them by step.

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

// AblationFiles are the output file names of the ablation for data tagged tag.
type AblationFiles struct{ Figure, Caption, Steps, TracesDir string }

// AblationFilesFor returns the ablation's paths in dir: the figure
// dir/ablation_cg_stopping_<tag>.{svg,png,pdf}, its caption
// dir/ablation_cg_stopping_<tag>.caption.md, the step curves
// dir/ablation_cg_stopping_<tag>_steps.csv and the traces directory
// dir/traces_ablation_cg_stopping_<tag>, with one subdirectory per rule.
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

// AblationSettings returns the settings of FGN (closed-form Gram) under rule r: the paper's
// (method.Paper) with that stopping rule.
func AblationSettings(r fgn.StoppingRule) fgn.Settings {
	s := method.Paper(method.FGN).GN
	s.CG.StoppingRule = r
	return s
}

// MakeAblation runs a resumable FGN sweep (Sweep) of the profile's seeds on d under each of
// StoppingRules, its traces in a subdirectory of the traces directory named by the rule, then
// writes the step curves (AblationTable), the figure (AblationFigure) and its caption
// (AblationCaption), the last two drawn from the CSV as read back. It returns the paths written
// (not the traces).
func MakeAblation(be compute.Backend, cfg AblationConfig, d *Data) ([]string, error) {
	files := AblationFilesFor(cfg.Out, d.Tag())
	if cfg.TracesDir != "" {
		files.TracesDir = cfg.TracesDir
	}
	p := cfg.Profile
	p.Methods = []method.Method{method.FGN}
	runs := make([][]Run, len(StoppingRules))
	for i, rule := range StoppingRules {
		sc := SweepConfig{Profile: p, Hyper: map[method.Method]method.Hyper{method.FGN: {GN: AblationSettings(rule)}},
			Dir: filepath.Join(files.TracesDir, rule.String()), Command: cfg.Command, Log: cfg.Log}
		if cfg.RunProgress != nil {
			sc.RunProgress = func(k, _ int, m method.Method, seed uint64) func(done, total int) {
				return cfg.RunProgress(i*p.Seeds+k, len(StoppingRules)*p.Seeds, m, seed)
			}
		}
		if cfg.Log != nil {
			fmt.Fprintf(cfg.Log, "CG stopping rule %s: %s (traces: %s)\n", rule, RuleLabel(rule), sc.Dir)
		}
		var err error
		if runs[i], err = Sweep(be, sc, d); err != nil {
			return nil, err
		}
	}
	t, err := AblationTable(runs, d.Title())
	if err != nil {
		return nil, err
	}
	t.Comment("source", d.Source)
	report.Provenance(t, be, p.Name, cfg.Command, time.Now())
	if err := t.Write(files.Steps); err != nil {
		return nil, err
	}
	paths := []string{files.Steps}
	back, err := report.Read(files.Steps)
	if err != nil {
		return paths, err
	}
	figs, err := AblationFigure(back, files.Figure, d.Title())
	paths = append(paths, figs...)
	if err != nil {
		return paths, err
	}
	text, err := AblationCaption(back, d.Title())
	return writeCaption(paths, files.Caption, text, err)
}

// ruleColumn is the ablation table's column of quantity q under rule r.
func ruleColumn(r fgn.StoppingRule, q string) string {
	return strings.ReplaceAll(r.String(), "-", "_") + "_" + q
}

// ablationQuantities are the per-rule columns of the ablation table (ruleColumn).
var ablationQuantities = []string{"acc_mean_pct", "acc_std_pct", "ce_mean", "ce_std", "cg_iterations"}

// AblationTable returns the ablation's step curves, one row per evaluation step: for each rule
// of StoppingRules (runs[i] are FGN's runs under StoppingRules[i], the same seeds in the same
// order), the mean and population std over seeds of the test accuracy (percent) and
// cross-entropy, and the mean over seeds of the CG iterations per step since the previous
// evaluation (StepCurve); then the largest difference in test accuracy (percentage points)
// between the two rules over the seeds, each seed against itself. The comments record the
// settings shared by both rules.
func AblationTable(runs [][]Run, title string) (*report.Table, error) {
	if len(runs) != len(StoppingRules) {
		return nil, fmt.Errorf("headopt: the ablation needs the runs of %d rules, got %d", len(StoppingRules), len(runs))
	}
	curves := make([]StepCurve, len(runs))
	for i, rr := range runs {
		sc, err := StepCurves(rr, []method.Method{method.FGN})
		if err != nil {
			return nil, fmt.Errorf("headopt: rule %s: %w", StoppingRules[i], err)
		}
		curves[i] = sc[0]
	}
	a, b := runs[0], runs[1]
	if len(a) != len(b) {
		return nil, fmt.Errorf("headopt: the ablation's rules have %d and %d runs", len(a), len(b))
	}
	steps := curves[0].Steps
	diff := make([]float64, len(steps))
	for s := range a {
		if a[s].Seed != b[s].Seed || len(a[s].Points) != len(steps) || len(b[s].Points) != len(steps) {
			return nil, fmt.Errorf("headopt: the ablation's run %d is seed %d (%d points) under %s and seed %d (%d points) under %s",
				s, a[s].Seed, len(a[s].Points), StoppingRules[0], b[s].Seed, len(b[s].Points), StoppingRules[1])
		}
		for k := range steps {
			if a[s].Points[k].Step != b[s].Points[k].Step {
				return nil, fmt.Errorf("headopt: seed %d is evaluated at step %d under %s and %d under %s", a[s].Seed,
					a[s].Points[k].Step, StoppingRules[0], b[s].Points[k].Step, StoppingRules[1])
			}
			diff[k] = math.Max(diff[k], 100*math.Abs(a[s].Points[k].EvalAccuracy-b[s].Points[k].EvalAccuracy))
		}
	}
	cols := []string{"step", "epoch"}
	for _, r := range StoppingRules {
		for _, q := range ablationQuantities {
			cols = append(cols, ruleColumn(r, q))
		}
	}
	t := report.NewTable(append(cols, "acc_max_abs_seed_diff_pct")...)
	t.Comment("data", title)
	s := AblationSettings(StoppingRules[0])
	t.Comment("method", method.FGN.Label())
	t.Comment("settings", fmt.Sprintf("learning_rate %g, damping %g, cg_max_iterations %d, cg_tolerance %g",
		s.LearningRate, s.Damping, s.CG.MaxIterations, s.CG.Tolerance))
	t.Comment("cg_max_iterations", fmt.Sprint(s.CG.MaxIterations))
	t.Comment("seeds", fmt.Sprint(len(a)))
	t.Comment("aggregation", "mean and population std over seeds at each evaluation step; cg_iterations: mean over seeds of the mean CG iterations per step since the previous evaluation; acc_max_abs_seed_diff_pct: max over seeds of |accuracy under "+
		StoppingRules[0].String()+" − accuracy under "+StoppingRules[1].String()+"| of the same seed (same initialisation and batches); no clock is involved")
	for k, step := range steps {
		row := []any{step, curves[0].Epochs[k]}
		for _, c := range curves {
			row = append(row, 100*c.AccMean[k], 100*c.AccStd[k], c.CEMean[k], c.CEStd[k], c.CGIterations[k])
		}
		t.Add(append(row, diff[k])...)
	}
	return t, nil
}

// ablationData is the ablation table read back: steps and, per rule, its columns.
type ablationData struct {
	steps, diff []float64
	by          []map[string][]float64 // by[i][q] is quantity q under StoppingRules[i]
}

func readAblation(t *report.Table) (*ablationData, error) {
	d := &ablationData{}
	var err error
	if d.steps, err = t.Floats("step"); err != nil {
		return nil, err
	}
	if len(d.steps) == 0 {
		return nil, fmt.Errorf("headopt: the ablation table has no rows")
	}
	if d.diff, err = t.Floats("acc_max_abs_seed_diff_pct"); err != nil {
		return nil, err
	}
	for _, r := range StoppingRules {
		cols := map[string][]float64{}
		for _, q := range ablationQuantities {
			if cols[q], err = t.Floats(ruleColumn(r, q)); err != nil {
				return nil, err
			}
		}
		d.by = append(d.by, cols)
	}
	return d, nil
}

// meanCGPerStep is the mean number of CG iterations per step over the whole run: the
// per-interval means weighted by the steps of their intervals.
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

// AblationFigure draws the ablation from its table (AblationTable, read back from its CSV) as
// base.{svg,png,pdf}: (a) mean test accuracy against optimisation step under each rule with
// ± 1 std bands; (b) the mean CG iterations per step since the previous evaluation.
func AblationFigure(t *report.Table, base, title string) ([]string, error) {
	d, err := readAblation(t)
	if err != nil {
		return nil, err
	}
	seeds, _ := t.Lookup("seeds")
	a := plot.New(fmt.Sprintf("(a) %s, %s seeds", title, seeds), "optimisation step", "test accuracy (%)")
	b := plot.New("(b) CG iterations per step", "optimisation step", "mean CG iterations")
	for _, p := range []*plot.Plot{a, b} {
		p.Legend.Top, p.Legend.Left = false, false
	}
	for i, r := range StoppingRules {
		st := ablationStyle(i)
		st.Glyph = nil // dense curves: lines only
		c := d.by[i]
		lo, hi := make([]float64, len(d.steps)), make([]float64, len(d.steps))
		for k := range d.steps {
			lo[k], hi[k] = c["acc_mean_pct"][k]-c["acc_std_pct"][k], c["acc_mean_pct"][k]+c["acc_std_pct"][k]
		}
		if err := plot.AddBand(a, "", st.Color, d.steps, lo, hi); err != nil {
			return nil, err
		}
		if err := plot.AddSeries(a, RuleLabel(r), st, d.steps, c["acc_mean_pct"]); err != nil {
			return nil, err
		}
		// Step 0 is the initial evaluation, which no step precedes.
		if err := plot.AddSeries(b, RuleLabel(r), st, d.steps[1:], c["cg_iterations"][1:]); err != nil {
			return nil, err
		}
	}
	// Headroom above the largest mean: it is often the CG budget, which the frame would hide.
	b.Y.Min, b.Y.Max = 0, 1.1*b.Y.Max
	return plot.SaveRow([]*plot.Plot{a, b}, 1.5*plot.PanelWidth, 1.2*plot.PanelHeight, base)
}

// AblationCaption returns the ablation's caption from its table (AblationTable with its
// provenance, read back from its CSV): what the panels show, where it was run, and what the
// numbers say — the largest accuracy differences at matched steps, the mean CG iterations per
// step under each rule and the final accuracies. Every statement about the outcome is computed
// from the table.
func AblationCaption(t *report.Table, title string) (string, error) {
	d, err := readAblation(t)
	if err != nil {
		return "", err
	}
	get := func(key string) string { return report.Recorded(t, key) }
	b := report.NewCaption("CG stopping-rule ablation on "+title, "fgn reproduce")
	fmt.Fprintf(b, "%s trained with each of two CG stopping rules, otherwise the settings of Figure 2 (%s), %s seeds "+
		"with the same initialisations and batches under both: the whitened-row rule of the paper's Algorithm 1, "+
		"‖e‖ ≤ tol·‖r̃‖ in the whitened row space (Figure 2 and Table 1 use it), and the parameter-residual rule, "+
		"‖(H\\_FGN + λI)d + g‖ ≤ tol·‖g‖ (the library's default). (a) Mean test accuracy (± 1 std shaded) against "+
		"optimisation step. (b) Mean CG iterations per step between evaluations.\n", get("method"), report.RecordedCode(t, "settings"), get("seeds"))
	fmt.Fprintf(b, "Run on %s, profile %s. No clock is involved: rerunning a seed on the same backend gives the same numbers.\n\n",
		report.MeasuredOn(t), get("profile"))

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
		fmt.Fprintf(b, "The curves do not differ: every seed has the same test accuracy under both rules at each of the %d evaluation steps.",
			len(d.steps))
	} else {
		fmt.Fprintf(b, "The curves differ: at matched evaluation steps the mean test accuracies differ by at most %.3g percentage points "+
			"(step %.0f), and one seed's accuracy under the two rules by at most %.3g points (step %.0f).", maxMean, atMean, maxSeed, atSeed)
	}
	var parts []string
	for i, r := range StoppingRules {
		parts = append(parts, fmt.Sprintf("%s %.3g", RuleLabel(r), d.meanCGPerStep(i)))
	}
	fmt.Fprintf(b, " Mean CG iterations per step over all steps and seeds (at most %s): %s.", get("cg_max_iterations"), strings.Join(parts, ", "))
	last := len(d.steps) - 1
	parts = parts[:0]
	for i, r := range StoppingRules {
		c := d.by[i]
		parts = append(parts, fmt.Sprintf("%s %.2f ± %.2f %% (CE %.4f)", RuleLabel(r), c["acc_mean_pct"][last], c["acc_std_pct"][last], c["ce_mean"][last]))
	}
	fmt.Fprintf(b, " After %.0f steps the mean test accuracy is %s.\n", d.steps[last], strings.Join(parts, ", "))
	return b.String(), nil
}
