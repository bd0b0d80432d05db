package main

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fgn-paper/fgn/experiments/method"
	"github.com/fgn-paper/fgn/experiments/train"
	"github.com/fgn-paper/fgn/features"
	"github.com/fgn-paper/fgn/fgn"
	"github.com/fgn-paper/fgn/fgn/backend"
	"github.com/fgn-paper/fgn/internal/cli"
	"github.com/fgn-paper/fgn/internal/progress"
)

const trainHelp = `usage: fgn train [flags]

Trains Adam, SGN and/or FGN on fixed features with the paper's protocol (static batches from a
one-time shuffle, wrap-around padding, evaluation every --eval-every steps) and writes one trace
CSV per method to --out. Data: a feature cache directory (--data, as written by data/fetch), a pair
of .npy files (--train-features/--train-labels, optionally --eval-features/--eval-labels; without
them a stratified --holdout of the training file is evaluated), or, by default, a synthetic
Gaussian mixture. The number of classes is --classes, or 1 + the largest training label (printed
with the example that holds it); a held-out label outside the classes is an error. A flag that
does not apply to the data or methods chosen (--dim with file data, --holdout with an evaluation
pair, --damping with --method adam, ...) is an error. With --hidden (an MLP, which has no
closed-form row Gram) the default methods train FGN with its matrix-free row operator.

Each epoch's telemetry (mean batch loss, and for SGN and FGN the damping λ, the mean gain ratio ρ,
FGN's mean step length τ with --ggn-step-length, and the steps rejected or skipped) is printed as
the run goes (not with --quiet). A run whose training loss ends above where it started or not
finite, or that took no step (every step skipped or rejected), gets a warning; with
--fail-on-divergence the command then exits with status 1.
`

// setLearningRate sets the step size α of every method.
func setLearningRate(h *method.Hyper, x float64) { h.Adam.LearningRate, h.GN.LearningRate = x, x }

// defaultMethods are --method's default; with --hidden, FGN is its matrix-free variant.
const defaultMethods = "adam,sgn,fgn"

// runTrain is the "train" subcommand.
func runTrain(args []string, stdout, stderr io.Writer) error {
	c := newCommand("train", trainHelp, stdout)
	methods := c.String("method", defaultMethods, "comma-separated methods, each once: adam, sgn, fgn (closed-form row Gram on an "+
		"affine head), fgn-matrix-free (default with --hidden: adam,sgn,fgn-matrix-free)")
	dataDir := c.String("data", "", "feature cache directory with train_* and test_* .npy files (excludes --train-features)")
	trainX := c.String("train-features", "", "training features .npy (N×D float32/float64)")
	trainY := c.String("train-labels", "", "training labels .npy (N integers)")
	evalX := c.String("eval-features", "", "held-out features .npy (optional)")
	evalY := c.String("eval-labels", "", "held-out labels .npy (optional)")
	holdout := c.positiveFloat("holdout", 0.1, "stratified held-out fraction of the training file when no evaluation split is given")
	standardize := c.Bool("standardize", true, "standardise file features per coordinate with the training mean and std")
	examples := c.intAtLeast("examples", 8192, 2, "synthetic: training examples (the held-out split has half as many)")
	dim := c.intAtLeast("dim", 256, 1, "synthetic: feature dimension")
	classesFlag := c.optionalInt("classes", "32 for the synthetic mixture, else 1 + the largest training label", 2, "number of classes")
	separation := c.positiveFloat("separation", 0.2, "synthetic: standard deviation of the class-mean coordinates")
	hidden := c.intAtLeast("hidden", 0, 0, "hidden width of a two-layer tanh MLP (0: an affine head)")
	batch := c.intAtLeast("batch", 128, 1, "batch size")
	epochs := c.intAtLeast("epochs", 5, 1, "epochs")
	evalEvery := c.intAtLeast("eval-every", 64, 1, "steps between evaluations")
	seed := c.Uint64("seed", 1, "seed of the initialisation and the one-time shuffle")
	adam, paper := method.Paper(method.Adam).Adam, method.Paper(method.FGN).GN
	learningRate := c.optionalPositiveFloat("learning-rate", fmt.Sprintf("%g for adam, %g for sgn and fgn",
		adam.LearningRate, paper.LearningRate), "step size α of every method")
	damping := setting(c, "damping", paper.Damping, formatFloat,
		settingValue[float64]{parseFloat, func(s *fgn.Settings, x float64) { s.Damping = x }},
		"damping λ for SGN/FGN, the initial λ with --damping-policy lm; a `number` > 0")
	dampingPolicy := c.dampingPolicy("damping-policy", "damping policy for SGN/FGN, the paper's constant λ or "+
		"Levenberg-Marquardt on the gain ratio ρ")
	lm := fgn.LevenbergMarquardt()
	noiseFloor := c.Float64("noise-floor", lm.NoiseFloor, "with --damping-policy lm: κ ≥ 0 of the damping's floor "+
		"κ·μ·min(ν, 1)^p, μ the batch's curvature scale and ν its gradient's noise-to-signal ratio "+
		"(fgn.LMDamping.NoiseFloor; 0: no floor)")
	floorExponent := c.positiveFloat("floor-exponent", lm.FloorExponent, "with --damping-policy lm: the floor's "+
		"exponent p (fgn.LMDamping.FloorExponent)")
	wholeVariance := c.Bool("whole-variance", lm.WholeVariance, "with --damping-policy lm: the floor's ν from the "+
		"batch gradient's whole variance, one VJP more per step (fgn.LMDamping.WholeVariance); false: along the "+
		"batch gradient")
	noiseAverage := c.Float64("noise-average", lm.NoiseAverage, "with --damping-policy lm: decay β ∈ [0, 1) of the "+
		"moving averages of --whole-variance's estimates (fgn.LMDamping.NoiseAverage; 0: each batch's own)")
	cgMaxIterations := setting(c, "cg-max-iterations", paper.CG.MaxIterations, strconv.Itoa,
		settingValue[int]{parseInt, func(s *fgn.Settings, x int) { s.CG.MaxIterations = x }},
		"CG iteration cap for SGN/FGN; an `integer` ≥ 1")
	cgTolerance := setting(c, "cg-tolerance", paper.CG.Tolerance, formatFloat,
		settingValue[float64]{parseFloat, func(s *fgn.Settings, x float64) { s.CG.Tolerance = x }},
		"CG relative residual tolerance for SGN/FGN; a `number` ≥ 0")
	cgStoppingRule := paper.CG.StoppingRule
	c.Func("cg-stopping-rule", "FGN's CG stopping rule: parameter (‖(H+λI)d+g‖ ≤ tol·‖g‖) or whitened-row "+
		"(the paper's Algorithm 1) (default "+paper.CG.StoppingRule+")", func(rule string) error {
		cgStoppingRule = rule
		return fgn.CGSettings{MaxIterations: 1, StoppingRule: rule}.Validate()
	})
	stopAtNoise := c.Bool("cg-stop-at-noise", paper.CG.StopAtNoise, "stop SGN/FGN's CG once its parameter residual is "+
		"below the batch gradient's relative noise, FGN's with --cg-stopping-rule parameter (fgn.CGSettings.StopAtNoise; "+
		"the library's default, not the paper's)")
	ggnStepLength := c.Bool("ggn-step-length", paper.GGNStepLength, "step FGN at the GGN's step length along its "+
		"direction (fgn.Settings.GGNStepLength; the library's default, not the paper's)")
	scaledDamping := c.Bool("scaled-damping", paper.ScaledDamping, "damp each parameter tensor of SGN/FGN by λ times "+
		"the square root of its gradient's scale relative to the others' (fgn.Settings.ScaledDamping)")
	perEntry := c.Bool("scaled-damping-per-entry", paper.ScaledDampingPerEntry, "with --scaled-damping, scale each "+
		"parameter entry by its own gradient's scale rather than each tensor (fgn.Settings.ScaledDampingPerEntry)")
	momentum := c.Float64("momentum", paper.Momentum, "β ∈ [0, 1) of the exponential average of SGN/FGN's steps that "+
		"they step along, 0 for none (fgn.Settings.Momentum)")
	out := c.String("out", "results/train", "directory for the trace CSVs (<method>_seed<seed>.csv)")
	backendFlag := c.backendFlag()
	quiet := c.Bool("quiet", false, "no progress display or epoch telemetry")
	failOnDivergence := c.Bool("fail-on-divergence", false, "exit with status 1 when a run's training loss ends above "+
		"where it started or not finite, or no step was taken (for scripts)")
	if err := c.parse(args); err != nil {
		return err
	}
	ms, err := trainMethods(c, *methods, *hidden, stdout)
	if err != nil {
		return err
	}
	files := *trainX != "" || *trainY != "" || *evalX != "" || *evalY != ""
	switch {
	case *dataDir != "" && files:
		return cli.Usagef("train: --data and --train-features/--train-labels/--eval-* exclude each other")
	case files && (*trainX == "" || *trainY == ""):
		return cli.Usagef("train: --train-features and --train-labels go together")
	case (*evalX == "") != (*evalY == ""):
		return cli.Usagef("train: --eval-features and --eval-labels go together")
	case !(*holdout < 1):
		return cli.Usagef("train: --holdout %g: want a fraction in (0, 1)", *holdout)
	}
	if err := trainFlagsApply(c, ms, *dataDir, files, *evalX != "", cgStoppingRule); err != nil {
		return err
	}
	if !*scaledDamping {
		if err := c.notApplicable("it sets --scaled-damping's metric, and --scaled-damping is off",
			"scaled-damping-per-entry"); err != nil {
			return err
		}
	}
	policy := *dampingPolicy
	if lm, ok := policy.(fgn.LMDamping); ok {
		lm.NoiseFloor, lm.FloorExponent, lm.WholeVariance, lm.NoiseAverage = *noiseFloor, *floorExponent, *wholeVariance, *noiseAverage
		policy = lm
	} else if err := c.notApplicable("it sets the Levenberg-Marquardt damping's floor, and --damping-policy is "+
		policy.String(), lmFloorFlags...); err != nil {
		return err
	}
	if err := checkOutDir("out", *out); err != nil {
		return err
	}
	if err := ready(); err != nil {
		return err
	}
	be, err := newBackend(*backendFlag)
	if err != nil {
		return err
	}

	var trainSet, evalSet *features.Set
	var source string
	classes, classesGiven := classesFlag.get()
	classesFrom := "--classes"
	switch {
	case *dataDir != "":
		source = "cache " + *dataDir
		if trainSet, err = features.LoadSplit(*dataDir, "train"); err != nil {
			break
		}
		if !classesGiven {
			classes, classesGiven, classesFrom = trainSet.Classes(), true, largestLabel(trainSet, "the cache's training labels")
		}
		evalSet, err = features.LoadSplit(*dataDir, "test")
	case files:
		source = *trainX
		if trainSet, err = features.Load(*trainX, *trainY); err != nil {
			break
		}
		if !classesGiven { // the class count of the whole file, the part held out included
			classes, classesGiven, classesFrom = trainSet.Classes(), true, largestLabel(trainSet, *trainY)
		}
		if *evalX != "" {
			evalSet, err = features.Load(*evalX, *evalY)
		} else {
			source += fmt.Sprintf(" (stratified %g held out)", *holdout)
			trainSet, evalSet, err = features.StratifiedSplit(trainSet, *holdout, *seed)
		}
	default:
		if !classesGiven {
			classes, classesGiven, classesFrom = 32, true, "the synthetic mixture's default"
		}
		*standardize = false
		for _, m := range ms { // before generating the data, which may not fit either
			cfg := train.Config{Method: m, Model: train.Model{Hidden: *hidden}, BatchSize: *batch}
			if err := train.CheckMemory(cfg, *examples, max(*examples/2, 1), *dim, classes); err != nil {
				return cli.ConfigError{Err: fmt.Errorf("train: %w (C = %d: %s)", err, classes, classesFrom)}
			}
		}
		source = fmt.Sprintf("synthetic Gaussian mixture (n=%d, d=%d, C=%d, separation %g)", *examples, *dim, classes, *separation)
		if trainSet, err = features.GaussianMixture(*seed, 0, *examples, *dim, classes, *separation); err == nil {
			evalSet, err = features.GaussianMixture(*seed, 1, max(*examples/2, 1), *dim, classes, *separation)
		}
	}
	if err != nil {
		return err
	}
	cfgs := make([]train.Config, len(ms))
	for i, m := range ms {
		h := method.Paper(m)
		if a, ok := learningRate.get(); ok {
			setLearningRate(&h, a)
		}
		if m != method.Adam {
			s := &h.GN
			s.Damping, s.CG.MaxIterations, s.CG.Tolerance, s.CG.StoppingRule = *damping, *cgMaxIterations, *cgTolerance, cgStoppingRule
			s.CG.StopAtNoise, s.GGNStepLength, s.ScaledDamping = *stopAtNoise, *ggnStepLength, *scaledDamping
			s.ScaledDampingPerEntry, s.Momentum = *perEntry, *momentum
		}
		cfgs[i] = train.Config{Method: m, Hyper: h, DampingPolicy: policy, Model: train.Model{Hidden: *hidden},
			Classes: classes, BatchSize: *batch, Epochs: *epochs, EvalEvery: *evalEvery, Seed: *seed}
		if _, err := cfgs[i].Validate(trainSet, evalSet); err != nil {
			return fmt.Errorf("train: %w", err)
		}
		if err := train.CheckMemory(cfgs[i], trainSet.N, evalSet.N, trainSet.D, classes); err != nil {
			return cli.ConfigError{Err: fmt.Errorf("train: %w (C = %d: %s)", err, classes, classesFrom)}
		}
	}
	if *standardize {
		if _, _, err := features.Standardize(trainSet, evalSet); err != nil {
			return err
		}
	}

	if w := backend.SIMDWarning(be); w != "" {
		fmt.Fprintln(stderr, w)
	}
	fmt.Fprintf(stdout, "backend: %s\ndata: %s: %d training, %d held-out examples, d=%d, C=%d classes (%s)\n",
		backend.Describe(be), source, trainSet.N, evalSet.N, trainSet.D, classes, classesFrom)
	width := len("method") // of the method column: its longest entry
	for _, m := range ms {
		width = max(width, len(m))
	}
	fmt.Fprintf(stdout, "%-*s %10s %10s %10s %12s %10s %8s %8s %8s %10s\n", width, "method", "train CE", "eval CE", "eval acc",
		"opt seconds", "ms/step", "CG its", "skipped", "rejected", "λ")
	var wrong []string
	for _, cfg := range cfgs {
		m := cfg.Method
		if !*quiet {
			cfg.Progress, cfg.OnEpoch = epochBar(stderr, string(m))
		}
		tr, err := train.Run(be, cfg, trainSet, evalSet)
		if err != nil {
			return fmt.Errorf("%s: %w", m, err)
		}
		tab := tr.Table()
		tab.Comment("data", source)
		path := filepath.Join(*out, fmt.Sprintf("%s_seed%d.csv", m, *seed))
		if err := tab.Write(path); err != nil {
			return err
		}
		last := tr.Points[len(tr.Points)-1]
		fmt.Fprintf(stdout, "%-*s %10.4f %10.4f %10.4f %12.3f %10.2f %8.2f %8d %8d %10.3g   → %s\n", width, m, last.TrainLoss,
			last.EvalLoss, last.EvalAccuracy, last.OptSeconds, 1e3*last.OptSeconds/float64(last.Step),
			last.CGIterations, last.SkippedSteps, last.RejectedSteps, last.NextDamping, path)
		for _, w := range tr.Health().Warnings() {
			fmt.Fprintf(stderr, "fgn: warning: %s: %s\n", m, w)
			wrong = append(wrong, string(m))
		}
	}
	if *failOnDivergence && len(wrong) > 0 {
		return fmt.Errorf("train: %s did not train (--fail-on-divergence)", strings.Join(slices.Compact(wrong), ", "))
	}
	return nil
}

// epochBar returns the step-progress callback of a training run labelled description (runBar)
// and a callback that prints each epoch's telemetry on its own line above the bar.
func epochBar(w io.Writer, description string) (func(done, total int), func(train.EpochReport)) {
	var bar *progress.Bar
	steps := func(done, total int) {
		if bar == nil {
			bar = progress.New(w, int64(total), progress.Options{Description: description, Delay: 2 * time.Second, ETA: true})
		}
		bar.Set(int64(done))
	}
	epoch := func(r train.EpochReport) {
		if bar != nil {
			bar.Clear()
		}
		fmt.Fprintf(w, "%s epoch %d/%d: batch CE %.4g", description, r.Epoch, r.Epochs, r.BatchLoss)
		if !math.IsNaN(r.Damping) {
			fmt.Fprintf(w, ", λ %.3g, mean ρ %.3g", r.Damping, r.MeanRho)
		}
		if !math.IsNaN(r.MeanStepLength) {
			fmt.Fprintf(w, ", mean τ %.2f", r.MeanStepLength)
		}
		if !math.IsNaN(r.Damping) {
			fmt.Fprintf(w, ", rejected %d", r.Rejected)
		}
		fmt.Fprintf(w, ", skipped %d\n", r.Skipped)
	}
	return steps, epoch
}

// trainMethods parses --method. With --hidden (an MLP, which has no closed-form row Gram) the
// default methods train FGN with its matrix-free row operator, saying so; FGN named explicitly
// is a usage error naming the variant that applies.
func trainMethods(c *command, list string, hidden int, stdout io.Writer) ([]method.Method, error) {
	ms, err := parseMethods(list)
	if err != nil || hidden == 0 {
		return ms, err
	}
	i := slices.Index(ms, method.FGN)
	switch {
	case i < 0:
		return ms, nil
	case c.set("method"):
		return nil, cli.Usagef("train: --method fgn needs an affine head's closed-form row Gram, which an MLP (--hidden %d) has not: "+
			"use fgn-matrix-free in --method, or --hidden 0", hidden)
	case slices.Contains(ms, method.FGNMatrixFree):
		return slices.Delete(ms, i, i+1), nil
	}
	ms[i] = method.FGNMatrixFree
	fmt.Fprintf(stdout, "methods: %s (an MLP, --hidden %d, has no closed-form row Gram: FGN applies its row operator matrix-free)\n",
		strings.Join(methodNames(ms), ","), hidden)
	return ms, nil
}

func methodNames(ms []method.Method) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = string(m)
	}
	return out
}

// trainFlagsApply returns a usage error for a flag given on the command line that does not apply
// to the data or the methods: the synthetic mixture's flags with file or cache data,
// --standardize with the synthetic mixture (which is not standardised), --holdout unless a
// training file is split, and SGN/FGN's flags without SGN or FGN (--cg-stopping-rule: without
// FGN, since SGN's CG has one rule; --cg-stop-at-noise with FGN alone on the whitened-row rule,
// which keeps its tolerance).
func trainFlagsApply(c *command, ms []method.Method, dataDir string, files, evalPair bool, stoppingRule string) error {
	synthetic := []string{"examples", "dim", "separation"}
	var err error
	switch {
	case dataDir != "":
		err = c.notApplicable("the data come from --data", append(synthetic, "holdout")...)
	case files:
		if err = c.notApplicable("the data come from --train-features", synthetic...); err == nil && evalPair {
			err = c.notApplicable("--eval-features and --eval-labels are evaluated", "holdout")
		}
	default:
		err = c.notApplicable("it applies to file and cache data; the synthetic mixture is not standardised, nor split",
			"standardize", "holdout")
	}
	if err != nil {
		return err
	}
	gn := slices.ContainsFunc(ms, func(m method.Method) bool { return m != method.Adam })
	if !gn {
		gnFlags := append([]string{"damping", "damping-policy", "cg-max-iterations", "cg-tolerance", "cg-stopping-rule",
			"cg-stop-at-noise", "ggn-step-length", "scaled-damping", "scaled-damping-per-entry", "momentum"}, lmFloorFlags...)
		if err := c.notApplicable("it sets SGN and FGN, and --method has neither", gnFlags...); err != nil {
			return err
		}
	}
	if !slices.Contains(ms, method.SGN) && stoppingRule == fgn.StopWhitenedRowResidual {
		if err := c.notApplicable("FGN's CG stops at the gradient's noise only on --cg-stopping-rule parameter "+
			"(the whitened-row rule keeps --cg-tolerance), and --method has no SGN", "cg-stop-at-noise"); err != nil {
			return err
		}
	}
	if !slices.Contains(ms, method.FGN) && !slices.Contains(ms, method.FGNMatrixFree) {
		if err := c.notApplicable("it sets FGN's CG, and --method has no FGN (SGN's parameter-space CG has one rule)",
			"cg-stopping-rule"); err != nil {
			return err
		}
		return c.notApplicable("it sets FGN's step, and --method has no FGN (SGN's CG step minimises its model along itself)",
			"ggn-step-length")
	}
	return nil
}

// lmFloorFlags are the flags of the Levenberg-Marquardt damping's floor (fgn.LMDamping).
var lmFloorFlags = []string{"noise-floor", "floor-exponent", "whole-variance", "noise-average"}

// largestLabel describes a class count of 1 + the largest of the training labels: the label and
// the first example holding it, in the labels' file.
func largestLabel(s *features.Set, file string) string {
	if s.N == 0 {
		return "1 + the largest training label"
	}
	at := 0
	for i, y := range s.Y {
		if y > s.Y[at] {
			at = i
		}
	}
	return fmt.Sprintf("1 + the largest training label, %d, of example %d in %s; --classes sets it", s.Y[at], at, file)
}

// runBar returns the step-progress callback of a training run labelled description, shown
// once the run has taken two seconds.
func runBar(w io.Writer, description string) func(done, total int) {
	return progress.Steps(w, progress.Options{Description: description, Delay: 2 * time.Second, ETA: true})
}
