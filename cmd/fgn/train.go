package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/gomlx/compute"
	"github.com/schollz/progressbar/v3"

	"github.com/fgn-paper/fgn/experiments/train"
	"github.com/fgn-paper/fgn/features"
	"github.com/fgn-paper/fgn/fgn"
	"github.com/fgn-paper/fgn/fgn/backend"
)

const trainUsage = `usage: fgn train [flags]

Trains Adam, SGN and/or FGN on fixed features with the paper's protocol (static batches from a
one-time shuffle, wrap-around padding, evaluation every --eval-every steps) and writes one trace
CSV per method to --out. Data: a feature cache directory (--data, as written by data/fetch), a pair
of .npy files (--train-features/--train-labels, optionally --eval-features/--eval-labels; without
them a stratified --holdout of the training file is evaluated), or, by default, a synthetic
Gaussian mixture.

flags:
`

// runTrain is the "train" subcommand.
func runTrain(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("train", stderr)
	fs.Usage = func() { fmt.Fprint(stderr, trainUsage); fs.PrintDefaults() }
	methods := fs.String("method", "adam,sgn,fgn", "comma-separated methods: adam, sgn, fgn (closed-form row Gram on an affine head), fgn-matrix-free")
	dataDir := fs.String("data", "", "feature cache directory with train_* and test_* .npy files")
	trainX := fs.String("train-features", "", "training features .npy (N×D float32/float64)")
	trainY := fs.String("train-labels", "", "training labels .npy (N integers)")
	evalX := fs.String("eval-features", "", "held-out features .npy (optional)")
	evalY := fs.String("eval-labels", "", "held-out labels .npy (optional)")
	holdout := fs.Float64("holdout", 0.1, "stratified held-out fraction of the training file when no evaluation split is given")
	standardize := fs.Bool("standardize", true, "standardise file features per coordinate with the training mean and std")
	examples := fs.Int("examples", 8192, "synthetic: training examples (the held-out split has half as many)")
	dim := fs.Int("dim", 256, "synthetic: feature dimension")
	classesFlag := fs.Int("classes", 0, "number of classes (0: 1 + largest label; synthetic default 32)")
	separation := fs.Float64("separation", 0.2, "synthetic: standard deviation of the class-mean coordinates")
	hidden := fs.Int("hidden", 0, "hidden width of a two-layer tanh MLP (0: affine head)")
	batch := fs.Int("batch", 128, "batch size")
	epochs := fs.Int("epochs", 5, "epochs")
	evalEvery := fs.Int("eval-every", 64, "steps between evaluations")
	seed := fs.Uint64("seed", 1, "seed of the initialisation and the one-time shuffle")
	alpha := fs.Float64("alpha", 0, "step size α (0: 3e-4 for Adam, 0.1 for SGN/FGN)")
	lambda := fs.Float64("lambda", 0, "damping λ for SGN/FGN, the initial λ with --damping lm (0: 1)")
	damping := fs.String("damping", "constant", "damping policy for SGN/FGN: constant (the paper) or lm (Levenberg-Marquardt on the gain ratio ρ)")
	cgIters := fs.Int("cg-iters", 0, "CG iteration cap for SGN/FGN (0: 5)")
	cgTol := fs.Float64("cg-tol", 0, "CG relative tolerance for SGN/FGN (0: 1e-5)")
	out := fs.String("out", "runs/train", "directory for the trace CSVs (<method>_seed<seed>.csv)")
	backendFlag := fs.String("backend", "", "backend, as GOMLX_BACKEND (default: $GOMLX_BACKEND, else pure Go)")
	quiet := fs.Bool("quiet", false, "no progress bar")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("train: unexpected argument %q", fs.Arg(0))
	}
	policy, err := fgn.ParseDampingPolicy(*damping)
	if err != nil {
		return fmt.Errorf("--damping: %w", err)
	}
	var ms []train.Method
	for _, name := range strings.Split(*methods, ",") {
		m, err := train.ParseMethod(strings.TrimSpace(name))
		if err != nil {
			return fmt.Errorf("--method: %w", err)
		}
		ms = append(ms, m)
	}

	var trainSet, evalSet *features.Set
	var source string
	switch {
	case *dataDir != "":
		source = "cache " + *dataDir
		if trainSet, err = features.LoadSplit(*dataDir, "train"); err == nil {
			evalSet, err = features.LoadSplit(*dataDir, "test")
		}
	case *trainX != "" || *trainY != "":
		if *trainX == "" || *trainY == "" {
			return fmt.Errorf("--train-features and --train-labels go together")
		}
		if (*evalX == "") != (*evalY == "") {
			return fmt.Errorf("--eval-features and --eval-labels go together")
		}
		source = *trainX
		if trainSet, err = features.Load(*trainX, *trainY); err != nil {
			break
		}
		if *evalX != "" {
			evalSet, err = features.Load(*evalX, *evalY)
		} else {
			source += fmt.Sprintf(" (stratified %g held out)", *holdout)
			trainSet, evalSet, err = features.StratifiedSplit(trainSet, *holdout, *seed)
		}
	default:
		c := *classesFlag
		if c == 0 {
			c = 32
		}
		*classesFlag = c
		*standardize = false
		source = fmt.Sprintf("synthetic Gaussian mixture (n=%d, d=%d, C=%d, separation %g)", *examples, *dim, c, *separation)
		if trainSet, err = train.GaussianMixture(*seed, 0, *examples, *dim, c, *separation); err == nil {
			evalSet, err = train.GaussianMixture(*seed, 1, max(*examples/2, 1), *dim, c, *separation)
		}
	}
	if err != nil {
		return err
	}
	if *standardize {
		if _, _, err := features.Standardize(trainSet, evalSet); err != nil {
			return err
		}
	}

	be, err := newBackend(*backendFlag)
	if err != nil {
		return err
	}
	if w := backend.SIMDWarning(be); w != "" {
		fmt.Fprintln(stderr, w)
	}
	fmt.Fprintf(stdout, "backend: %s\ndata: %s: %d training, %d held-out examples, d=%d\n",
		backend.Describe(be), source, trainSet.N, evalSet.N, trainSet.D)
	fmt.Fprintf(stdout, "%-12s %10s %10s %10s %12s %10s %8s %8s %8s %10s\n", "method", "train CE", "eval CE", "eval acc",
		"opt seconds", "ms/step", "CG its", "skipped", "rejected", "λ")
	for _, m := range ms {
		cfg := train.Config{Method: m, Model: train.Model{Hidden: *hidden}, Classes: *classesFlag,
			BatchSize: *batch, Epochs: *epochs, EvalEvery: *evalEvery, Seed: *seed,
			Hyper: train.Hyper{Alpha: *alpha, Lambda: *lambda, CGMaxIter: *cgIters, CGTol: *cgTol, Damping: policy}}
		if !*quiet {
			cfg.Progress = progress(stderr, string(m))
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
		fmt.Fprintf(stdout, "%-12s %10.4f %10.4f %10.4f %12.3f %10.2f %8.2f %8d %8d %10.3g   → %s\n", m, last.TrainLoss,
			last.EvalLoss, last.EvalAccuracy, last.OptSeconds, 1e3*last.OptSeconds/float64(last.Step),
			last.CGIterations, last.SkippedSteps, last.RejectedSteps, last.NextLambda, path)
	}
	return nil
}

// progress returns a train.Config.Progress callback that shows a progress bar on w once a run
// has taken more than two seconds.
func progress(w io.Writer, description string) func(done, total int) {
	var bar *progressbar.ProgressBar
	start := time.Now()
	return func(done, total int) {
		if bar == nil {
			if time.Since(start) < 2*time.Second {
				return
			}
			bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(w),
				progressbar.OptionSetDescription(description), progressbar.OptionShowCount(),
				progressbar.OptionSetPredictTime(true), progressbar.OptionThrottle(250*time.Millisecond),
				progressbar.OptionClearOnFinish())
		}
		_ = bar.Set(done)
	}
}

// newBackend returns the backend named by the --backend flag, or by GOMLX_BACKEND when it is empty.
func newBackend(flagValue string) (compute.Backend, error) {
	if flagValue != "" {
		return backend.NewWithConfig(flagValue)
	}
	return backend.New()
}
