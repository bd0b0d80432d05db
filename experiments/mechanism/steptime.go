package mechanism

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"

	"github.com/fgn-paper/fgn/experiments/method"
	"github.com/fgn-paper/fgn/experiments/report"
	"github.com/fgn-paper/fgn/experiments/train"
	"github.com/fgn-paper/fgn/fgn"
	"github.com/fgn-paper/fgn/internal/progress"
)

// StepTimeConfig configures panel (a): steady-state optimiser steps of a linear softmax head
// z = W ᵀx + b on fixed Gaussian features (appendix G.1).
type StepTimeConfig struct {
	// Profile names the configuration in the CSV provenance.
	Profile string
	// Dim is the feature dimension d, Batch the batch size b, Examples the number of synthetic
	// examples (a multiple of Batch). Steps cycle over the Examples/Batch static batches.
	Dim, Batch, Examples int
	// Classes are the numbers of classes C swept.
	Classes []int
	// Warmup and Steps are the untimed and timed steps per (C, method). Points with
	// C ≥ LargeC (when LargeC > 0) use LargeWarmup and LargeSteps instead.
	Warmup, Steps                   int
	LargeC, LargeWarmup, LargeSteps int
	// Methods are the methods timed, in order.
	Methods []method.Method
	// Settings are SGN's and FGN's settings (the method fixes the row operator and SGN's warm
	// start); Adam are Adam's.
	Settings fgn.Settings
	Adam     method.AdamSettings
	// Seed seeds the features and labels.
	Seed uint64
}

var paperClasses = []int{2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096}

// PaperStepTime returns panel (a) with the paper's protocol (appendix G.1): d = 2048, b = 512,
// 32768 examples, C from 2 to 4096, 128 warm-up and 640 timed steps per (C, method), every
// method; SGN and FGN with α = 1, λ = 1 and a CG budget of 5 with tolerance 10⁻⁵, FGN stopping
// CG by the paper's whitened row residual (fgn.PaperSettings, as every reproduction does);
// Adam with GoMLX's defaults and step size 10⁻³. Package profile shrinks it for its smaller profiles.
func PaperStepTime() StepTimeConfig {
	s := fgn.PaperSettings()
	s.LearningRate = 1
	return StepTimeConfig{Dim: 2048, Batch: 512, Examples: 32768, Classes: slices.Clone(paperClasses),
		Warmup: 128, Steps: 640, Methods: slices.Clone(method.Methods), Settings: s, Adam: method.GoMLXAdam(1e-3), Seed: 1}
}

// stepsAt returns the warm-up and timed steps at C classes.
func (c StepTimeConfig) stepsAt(numClasses int) (warmup, steps int) {
	if c.LargeC > 0 && numClasses >= c.LargeC {
		return c.LargeWarmup, c.LargeSteps
	}
	return c.Warmup, c.Steps
}

func (c StepTimeConfig) validate() error {
	switch {
	case c.Dim < 1 || c.Batch < 1 || c.Examples < c.Batch || c.Examples%c.Batch != 0:
		return fmt.Errorf("mechanism: need d ≥ 1, b ≥ 1 and a positive multiple of b examples; got d=%d b=%d examples=%d",
			c.Dim, c.Batch, c.Examples)
	case len(c.Classes) == 0 || len(c.Methods) == 0:
		return fmt.Errorf("mechanism: step time needs classes and methods")
	case c.Warmup < 0 || c.Steps < 1 || (c.LargeC > 0 && (c.LargeWarmup < 0 || c.LargeSteps < 1)):
		return fmt.Errorf("mechanism: need ≥ 0 warm-up and ≥ 1 timed steps per point")
	case c.Settings.Validate() != nil:
		return fmt.Errorf("mechanism: %w", c.Settings.Validate())
	case c.Adam.Validate() != nil:
		return fmt.Errorf("mechanism: %w", c.Adam.Validate())
	}
	for _, n := range c.Classes {
		if n < 2 {
			return fmt.Errorf("mechanism: C must be ≥ 2, got %d", n)
		}
	}
	for _, m := range c.Methods {
		if !slices.Contains(method.Methods, m) {
			return fmt.Errorf("mechanism: unknown method %q (want one of %v)", m, method.Methods)
		}
	}
	return nil
}

// StepSampleColumns are the columns of the panel (a) samples: one row per timed step with its
// (C, method), its index after the warm-up and its duration in milliseconds.
var StepSampleColumns = []string{"classes", "method", "step", "ms"}

// StepTimeColumns are the columns of the panel (a) table: one row per (C, method) with the
// warm-up and timed step counts, the median, quartiles and extremes of the timed step
// durations in milliseconds, and the batch loss returned by the last step (a sanity check that
// the steps did not diverge).
var StepTimeColumns = []string{"classes", "method", "warmup", "steps", "median_ms", "q1_ms", "q3_ms", "min_ms", "max_ms", "last_loss"}

// StepConfig returns the step of method m that panel (a) times (train.NewStep, the training
// loop's step): the profile's settings, with SGN warm-started and FGN's row operator fixed by the
// method (method.Paper), and the profile's Adam, on an affine head with its exact products.
func (c StepTimeConfig) StepConfig(m method.Method) train.StepConfig {
	s := c.Settings
	s.WarmStart = method.Paper(m).GN.WarmStart
	return train.StepConfig{Method: m, Hyper: method.Hyper{Adam: c.Adam, GN: s}}
}

// gaussianBatches returns the features x_i ~ N(0, I_d), float32, split into static batches and
// transferred to the device, so timed steps never generate or copy data.
func gaussianBatches(backend compute.Backend, c StepTimeConfig) ([]*tensors.Tensor, error) {
	rng := rand.New(rand.NewPCG(c.Seed, 0x5eed))
	out := make([]*tensors.Tensor, c.Examples/c.Batch)
	for k := range out {
		x := make([]float32, c.Batch*c.Dim)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		out[k] = tensors.FromFlatDataAndDimensions(x, c.Batch, c.Dim)
		if err := out[k].ToDevice(backend, 0); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// uniformLabels returns labels drawn uniformly from [0, C) per static batch, on the device.
func uniformLabels(backend compute.Backend, c StepTimeConfig, numClasses, numBatches int) ([]*tensors.Tensor, error) {
	rng := rand.New(rand.NewPCG(c.Seed, uint64(numClasses)))
	out := make([]*tensors.Tensor, numBatches)
	for k := range out {
		y := make([]int32, c.Batch)
		for i := range y {
			y[i] = int32(rng.IntN(numClasses))
		}
		out[k] = tensors.FromValue(y)
		if err := out[k].ToDevice(backend, 0); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// StepTime runs panel (a): for every C and method it builds the training loop's step
// (StepConfig, train.NewStep: logits, direction and parameter update in one graph, parameters as
// model variables that stay on the device), runs the warm-up steps, then times each of the timed
// steps from the call until its outputs (the loss and the step's diagnostics) are on the host.
// Steps cycle over the static batches, one batch per step. Feature generation, transfers, the
// per-batch layouts of the frozen features (hᵀ, and the feature Gram for FGN (closed-form Gram)),
// compilation and warm-up are not timed. progressW receives the progress display (io.Discard for
// none).
//
// It returns the summary (StepTimeColumns: quantiles of the step times per (C, method)) and the
// samples (StepSampleColumns: every timed step), from which timing claims are judged with their
// noise; both carry the same comments.
func StepTime(backend compute.Backend, c StepTimeConfig, progressW io.Writer) (summary, samples *report.Table, err error) {
	if err := c.validate(); err != nil {
		return nil, nil, err
	}
	features, err := gaussianBatches(backend, c)
	if err != nil {
		return nil, nil, err
	}
	defer finalizeAll(features)
	total := 0
	for _, n := range c.Classes {
		warmup, steps := c.stepsAt(n)
		total += len(c.Methods) * (warmup + steps)
	}
	bar := progress.New(progressW, int64(total), progress.Options{Description: "panel (a)"})

	t, samples := report.NewTable(StepTimeColumns...), report.NewTable(StepSampleColumns...)
	t.Comment("panel", "(a) steady-state optimiser step time, linear softmax head on fixed Gaussian features")
	t.Comment("parameters", fmt.Sprintf("d=%d batch=%d examples=%d (%d static batches, one per step, cycling) damping=%g cg_max_iterations=%d cg_tolerance=%g cg_stopping_rule=%s adam_learning_rate=%g learning_rate=%g seed=%d float32",
		c.Dim, c.Batch, c.Examples, c.Examples/c.Batch, c.Settings.Damping, c.Settings.CG.MaxIterations, c.Settings.CG.Tolerance, c.Settings.CG.StoppingRule, c.Adam.LearningRate, c.Settings.LearningRate, c.Seed))
	warmLarge := ""
	if c.LargeC > 0 {
		warmLarge = fmt.Sprintf("; C>=%d: %d warm-up, %d timed", c.LargeC, c.LargeWarmup, c.LargeSteps)
	}
	t.Comment("steps", fmt.Sprintf("%d warm-up, %d timed per (C, method)%s; a step is timed from the call until its outputs (loss and diagnostics) are on the host", c.Warmup, c.Steps, warmLarge))
	t.Comment("data", "x_i ~ N(0, I_d) float32, labels uniform on [0, C); features generated and moved to the device before timing")
	t.Comment("methods", "the training loop's step (train.NewStep) over fgn.AffineHead, with h^T and, for fgn, the feature Gram h h^T + 1 laid out once per static batch before timing; "+
		"adam: Adam with gomlx optimizer.Adam's defaults, updating in place, on the head's closed-form gradient (paper.LossGradient, one VJP), skipping non-finite steps; sgn: fgn.SGN (parameter-space CG on the head's JVP/VJP, warm start); "+
		"fgn: fgn.FGN (row-space CG on the closed-form affine row Gram); fgn-matrix-free: fgn.FGN with MatrixFree (row-space CG, one head VJP and JVP per iteration)")

	loadBefore := report.LoadAverage()
	for _, numClasses := range c.Classes {
		labels, err := uniformLabels(backend, c, numClasses, len(features))
		if err != nil {
			return nil, nil, err
		}
		for _, m := range c.Methods {
			bar.Describe(fmt.Sprintf("panel (a) C=%-4d %-17s", numClasses, m))
			times, loss, err := timeMethod(backend, c, m, numClasses, features, labels, bar)
			if err != nil {
				finalizeAll(labels)
				return nil, nil, fmt.Errorf("mechanism: C=%d %s: %w", numClasses, m, err)
			}
			warmup, steps := c.stepsAt(numClasses)
			q := report.Quantiles(times, 0, 0.25, 0.5, 0.75, 1)
			t.Add(numClasses, string(m), warmup, steps, q[2], q[1], q[3], q[0], q[4], loss)
			for k, ms := range times {
				samples.Add(numClasses, string(m), k+1, ms)
			}
		}
		finalizeAll(labels)
	}
	t.Comment("host load", fmt.Sprintf("1/5/15-min load averages %s before, %s after the sweep", loadBefore, report.LoadAverage()))
	samples.Comments = slices.Clone(t.Comments)
	samples.Comment("rows", "one row per timed step: its index after the warm-up and its time in milliseconds")
	return t, samples, nil
}

// timeMethod builds the step of method m at C classes (StepConfig) on the static batches it
// uses, with the head's parameters zero, and returns the durations of the timed steps in
// milliseconds and the loss of the last step. The per-batch layouts of the features are computed
// when the step is built, before any step runs.
func timeMethod(backend compute.Backend, c StepTimeConfig, m method.Method, numClasses int,
	features, labels []*tensors.Tensor, bar *progress.Bar) ([]float64, float64, error) {
	warmup, steps := c.stepsAt(numClasses)
	used := min(len(features), warmup+steps) // steps k use batch k mod used
	store := model.NewStore()
	defer store.Finalize()
	scope := store.RootScope()
	vars := []*model.Variable{
		scope.VariableWithValue("W", tensors.FromShape(shapes.Make(dtypes.Float32, c.Dim, numClasses))),
		scope.VariableWithValue("bias", tensors.FromShape(shapes.Make(dtypes.Float32, numClasses))),
	}
	step, err := train.NewStep(backend, store, vars, c.StepConfig(m), features[:used], labels[:used])
	if err != nil {
		return nil, 0, err
	}
	defer step.Finalize()
	times := make([]float64, 0, steps)
	loss := math.NaN()
	for k := range warmup + steps {
		start := time.Now()
		r, err := step.Run(k % used)
		if err != nil {
			return nil, 0, err
		}
		elapsed := time.Since(start)
		loss = r.Loss
		if k >= warmup {
			times = append(times, float64(elapsed.Nanoseconds())/1e6)
		}
		bar.Add(1)
	}
	return times, loss, nil
}

func finalizeAll(ts []*tensors.Tensor) {
	for _, t := range ts {
		t.FinalizeAll()
	}
}
