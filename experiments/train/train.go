// Package train is the one training loop of the experiments: Adam, SGN or FGN on a classifier
// over fixed features, with the paper's protocol (app. F.2) — static batches from a one-time
// per-seed shuffle, the last batch padded by wrap-around, no reshuffle, periodic evaluation on
// a held-out split — and a wall clock that counts only synchronised optimisation time.
//
// The optimiser step is built in one place, NewStep (step.go), which the loop, Figure 1(a)
// (experiments/mechanism) and the step benchmarks (BenchmarkStep) share. Compilation happens
// once, before the clock starts; every step reuses the compiled graph, and each step's outputs
// are read back to the host (which synchronises the device) inside the timed region.
// Evaluation, logging and I/O are outside it.
package train

import (
	"fmt"
	"math"
	"time"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/support/exceptions"

	"github.com/fgn-paper/fgn/experiments/method"
	"github.com/fgn-paper/fgn/features"
	"github.com/fgn-paper/fgn/fgn"
	"github.com/fgn-paper/fgn/fgn/backend"
	"github.com/fgn-paper/fgn/fgn/paper"
)

// Config configures one training run.
type Config struct {
	Method method.Method
	// Hyper are the method's hyper-parameters (start from method.Paper); the method fixes the
	// row operator.
	Hyper method.Hyper
	// DampingPolicy is SGN's and FGN's damping policy (nil: fgn.ConstantDamping, the paper's);
	// Hyper.GN.Damping is its initial λ.
	DampingPolicy fgn.DampingPolicy
	Model         Model
	// Classes is the number of classes C; 0 infers it from the largest label of both splits.
	Classes int
	// BatchSize, Epochs: the run takes Epochs·⌈N/BatchSize⌉ steps.
	BatchSize, Epochs int
	// EvalEvery is the number of steps between evaluations; there is one at step 0 and one
	// after the last step.
	EvalEvery int
	// Seed sets the model initialisation and the one-time shuffle.
	Seed uint64
	// Progress, when set, is called after every step with the number of steps done and the total.
	Progress func(done, total int)
	// OnEpoch, when set, is called after every epoch with its telemetry.
	OnEpoch func(EpochReport)
	// FailOnDivergence makes Run return an error wrapping ErrNotTrained, with the trace, when
	// the run went wrong (Trace.Health().Warnings(): its loss ended above where it started or
	// not finite, or no step was taken).
	FailOnDivergence bool

	// beforeEval, when set, runs before each evaluation (tests make evaluation slow with it).
	beforeEval func()
}

// Resolved returns c as a run uses it: the row operator fixed by the method, and the constant
// damping policy when none is set. Traces record it.
func (c Config) Resolved() Config {
	s := c.step().resolved()
	c.Hyper, c.DampingPolicy = s.Hyper, s.DampingPolicy
	return c
}

// step returns the configuration of the run's optimiser step.
func (c Config) step() StepConfig {
	return StepConfig{Method: c.Method, Model: c.Model, Hyper: c.Hyper, DampingPolicy: c.DampingPolicy}
}

// Point is one evaluation of a run.
type Point struct {
	Step  int
	Epoch float64
	// OptSeconds is the synchronised optimisation time spent in steps 1..Step, plus, on an
	// affine head, the one-time layouts of the batches' features (hᵀ, and the feature Gram for
	// FGN (closed-form Gram); see NewStep).
	OptSeconds float64
	// TrainLoss is the mean cross-entropy over the whole training split; EvalLoss and
	// EvalAccuracy are over the held-out split.
	TrainLoss, EvalLoss, EvalAccuracy float64
	// CGIterations is the mean number of CG iterations over the steps since the previous point
	// (0 for Adam); CGResidual, MeanPDagger and MeanXi are those of the last step's batch.
	CGIterations, CGResidual, MeanPDagger, MeanXi float64
	// SkippedSteps counts the steps 1..Step whose loss, direction or CG residual was not finite;
	// such a step leaves the model and the optimizer state unchanged.
	SkippedSteps int
	// Damping and NextDamping are the damping λ of the last step and the one it set for the next;
	// Rho, PredictedDecrease and ActualDecrease its gain ratio and the decreases of the batch loss
	// it is the ratio of (fgn.DampingPolicy), NaN unless the damping policy is adaptive;
	// StepAccepted is 1 when the last step was taken, else 0 (all NaN for Adam but StepAccepted).
	Damping, NextDamping, Rho, PredictedDecrease, ActualDecrease, StepAccepted float64
	// RejectedSteps counts the finite steps 1..Step that an adaptive damping policy rejected for
	// increasing the batch loss; such a step changes only λ.
	RejectedSteps int
}

// EpochReport is the telemetry of one epoch of a run (Config.OnEpoch).
type EpochReport struct {
	Epoch, Epochs int
	// BatchLoss is the mean over the epoch's steps of the batch loss before each step.
	BatchLoss float64
	// Damping is the damping λ set for the step after the epoch; MeanRho is the mean gain ratio
	// of the epoch's steps whose ratio is finite (Point); both NaN for Adam, MeanRho also for a
	// constant damping policy or when no ratio was finite.
	Damping, MeanRho float64
	// MeanStepLength is the mean of FGN's step lengths τ over the epoch's finite steps
	// (StepResult.StepLength); NaN where no step has one.
	MeanStepLength float64
	// Skipped and Rejected count the epoch's steps that were not finite and that the damping
	// policy rejected.
	Skipped, Rejected int
}

// Trace is the result of a run.
type Trace struct {
	Config  Config // with the row operator and damping policy the run used
	Backend string // backend and device (backend.Describe)
	Classes int
	Points  []Point
}

// Validate checks the configuration and the data of a run (as Run does before any
// computation) and returns the number of classes the run uses.
func (c Config) Validate(trainSet, evalSet *features.Set) (classes int, err error) {
	if err := c.step().Validate(); err != nil {
		return 0, err
	}
	switch {
	case c.Epochs < 1:
		return 0, fmt.Errorf("epochs must be ≥ 1, got %d", c.Epochs)
	case c.EvalEvery < 1:
		return 0, fmt.Errorf("evaluation interval must be ≥ 1 step, got %d", c.EvalEvery)
	case trainSet == nil || evalSet == nil:
		return 0, fmt.Errorf("a training and an evaluation split are required")
	case trainSet.D != evalSet.D:
		return 0, fmt.Errorf("training features have dimension %d, evaluation features %d", trainSet.D, evalSet.D)
	}
	classes = c.Classes
	if classes == 0 {
		classes = max(trainSet.Classes(), evalSet.Classes(), 2)
	}
	if classes < 2 {
		return 0, fmt.Errorf("need at least 2 classes, got %d", classes)
	}
	if err := trainSet.Validate("training split", classes); err != nil {
		return 0, err
	}
	if err := evalSet.Validate("evaluation split", classes); err != nil {
		return 0, err
	}
	if _, err := StaticBatches(trainSet.N, c.BatchSize, c.Seed); err != nil {
		return 0, err
	}
	return classes, nil
}

// Run trains a freshly initialised model on trainSet and evaluates it on evalSet, on backend be.
// Errors in the configuration or the data, and a run whose estimated memory exceeds the
// machine's (CheckMemory), are returned before any computation. A run that went wrong
// (Trace.Health().Warnings()) returns its trace, and with Config.FailOnDivergence an error.
func Run(be compute.Backend, cfg Config, trainSet, evalSet *features.Set) (*Trace, error) {
	classes, err := cfg.Validate(trainSet, evalSet)
	if err != nil {
		return nil, err
	}
	if err := CheckMemory(cfg, trainSet.N, evalSet.N, trainSet.D, classes); err != nil {
		return nil, err
	}
	var trace *Trace
	var runErr error
	if err := exceptions.TryCatch[error](func() { trace, runErr = run(be, cfg, classes, trainSet, evalSet) }); err != nil {
		return nil, err
	}
	if runErr == nil && cfg.FailOnDivergence {
		runErr = notTrained(trace.Health().Warnings())
	}
	return trace, runErr
}

// run is Run after validation; GoMLX graph-building errors surface as panics, caught by Run.
func run(be compute.Backend, cfg Config, classes int, trainSet, evalSet *features.Set) (*Trace, error) {
	cfg = cfg.Resolved()
	batches, _ := StaticBatches(trainSet.N, cfg.BatchSize, cfg.Seed)
	store := model.NewStore()
	vars := cfg.Model.initialize(store.RootScope().In("model"), trainSet.D, classes, cfg.Seed)

	xs, ys := make([]*tensors.Tensor, len(batches)), make([]*tensors.Tensor, len(batches))
	for k, idx := range batches {
		xs[k], ys[k] = gather(trainSet, idx)
	}
	step, err := NewStep(be, store, vars, cfg.step(), xs, ys)
	if err != nil {
		return nil, err
	}
	defer step.Finalize()
	optSeconds := step.LayoutSeconds()
	eval := newEvaluator(be, vars, cfg.Model, trainSet, evalSet)

	trace := &Trace{Config: cfg, Backend: backend.Describe(be), Classes: classes}
	record := func(stepNum, skipped, rejected int, its float64, last *StepResult) error {
		if cfg.beforeEval != nil {
			cfg.beforeEval()
		}
		nan := math.NaN()
		p := Point{Step: stepNum, Epoch: float64(stepNum) / float64(len(batches)), OptSeconds: optSeconds,
			CGIterations: its, CGResidual: nan, MeanPDagger: nan, MeanXi: nan, SkippedSteps: skipped,
			Damping: nan, NextDamping: nan, Rho: nan, PredictedDecrease: nan, ActualDecrease: nan, StepAccepted: nan,
			RejectedSteps: rejected}
		if last != nil {
			p.CGResidual, p.MeanPDagger, p.MeanXi = last.CGResidual, last.MeanPDagger, last.MeanXi
			p.Damping, p.NextDamping, p.PredictedDecrease, p.ActualDecrease, p.Rho = last.Damping, last.NextDamping,
				last.PredictedDecrease, last.ActualDecrease, last.Rho
			p.StepAccepted = 0
			if last.Accepted {
				p.StepAccepted = 1
			}
		}
		var err error
		if p.TrainLoss, p.EvalLoss, p.EvalAccuracy, err = eval.evaluate(); err != nil {
			return err
		}
		trace.Points = append(trace.Points, p)
		return nil
	}
	if err := record(0, 0, 0, 0, nil); err != nil {
		return nil, err
	}
	total := cfg.Epochs * len(batches)
	var itsSum float64
	var itsCount, skipped, rejected int
	var epoch epochTelemetry
	for s := 1; s <= total; s++ {
		start := time.Now()
		r, err := step.Run((s - 1) % len(batches))
		if err != nil {
			return nil, fmt.Errorf("step %d: %w", s, err)
		}
		optSeconds += time.Since(start).Seconds()
		switch {
		case !r.Finite:
			skipped++
		case !r.Accepted:
			rejected++
		}
		epoch.add(r)
		itsSum += r.CGIterations
		itsCount++
		if s%cfg.EvalEvery == 0 || s == total {
			if err := record(s, skipped, rejected, itsSum/float64(itsCount), &r); err != nil {
				return nil, err
			}
			itsSum, itsCount = 0, 0
		}
		if cfg.OnEpoch != nil && s%len(batches) == 0 {
			cfg.OnEpoch(epoch.report(s/len(batches), cfg.Epochs, r.NextDamping))
			epoch = epochTelemetry{}
		}
		if cfg.Progress != nil {
			cfg.Progress(s, total)
		}
	}
	return trace, nil
}

// epochTelemetry accumulates the steps of an epoch for its EpochReport.
type epochTelemetry struct {
	steps, rhos, taus       int
	lossSum, rhoSum, tauSum float64
	skipped, rejected       int
}

func (e *epochTelemetry) add(r StepResult) {
	e.steps++
	e.lossSum += r.Loss
	if !math.IsNaN(r.Rho) && !math.IsInf(r.Rho, 0) {
		e.rhos++
		e.rhoSum += r.Rho
	}
	if r.Finite && !math.IsNaN(r.StepLength) {
		e.taus++
		e.tauSum += r.StepLength
	}
	switch {
	case !r.Finite:
		e.skipped++
	case !r.Accepted:
		e.rejected++
	}
}

func (e *epochTelemetry) report(epoch, epochs int, damping float64) EpochReport {
	meanRho := math.NaN()
	if e.rhos > 0 {
		meanRho = e.rhoSum / float64(e.rhos)
	}
	meanTau := math.NaN()
	if e.taus > 0 {
		meanTau = e.tauSum / float64(e.taus)
	}
	return EpochReport{Epoch: epoch, Epochs: epochs, BatchLoss: e.lossSum / float64(e.steps), Damping: damping,
		MeanRho: meanRho, MeanStepLength: meanTau, Skipped: e.skipped, Rejected: e.rejected}
}

// evaluator computes the mean cross-entropy on both splits and the accuracy on the held-out one
// for the current values of the model's parameters. It takes them as inputs of a plain graph:
// a non-training graph embeds the variables it reads as constants (see compat.go:
// compatVariablesAsConstants in package fgn), which would go stale as soon as the steps change them.
type evaluator struct {
	exec         *Exec
	vars         []*model.Variable
	trainX, evlX *tensors.Tensor
	trainY, evlY *tensors.Tensor
}

func newEvaluator(be compute.Backend, vars []*model.Variable, m Model, trainSet, evalSet *features.Set) *evaluator {
	e := &evaluator{vars: vars}
	e.trainX, e.trainY = gather(trainSet, nil)
	e.evlX, e.evlY = gather(evalSet, nil)
	e.exec = MustNewExec(be, func(in []*Node) []*Node {
		x, y := in[0], in[1]
		logits := m.logits(x, fgn.Vec(in[2:]))
		loss := ReduceAllMean(paper.NewMargin(logits, y).Loss)
		correct := ConvertDType(Equal(ConvertDType(ArgMax(logits, -1), dtypes.Int32), y), loss.DType())
		return []*Node{loss, ReduceAllMean(correct)}
	})
	return e
}

func (e *evaluator) evaluate() (trainLoss, evalLoss, evalAcc float64, err error) {
	out, err := e.call(e.trainX, e.trainY)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("evaluating on the training split: %w", err)
	}
	trainLoss = scalars(out)[0]
	if out, err = e.call(e.evlX, e.evlY); err != nil {
		return 0, 0, 0, fmt.Errorf("evaluating on the held-out split: %w", err)
	}
	v := scalars(out)
	return trainLoss, v[0], v[1], nil
}

// call runs the evaluation graph on x, y and the parameters' current values.
func (e *evaluator) call(x, y *tensors.Tensor) ([]*tensors.Tensor, error) {
	args := []any{x, y}
	for _, v := range e.vars {
		value, err := v.Value()
		if err != nil {
			return nil, err
		}
		args = append(args, value)
	}
	return e.exec.Call(args...)
}

// gather returns the features and labels of the given examples (all when idx is nil) as
// float32 and int32 tensors.
func gather(s *features.Set, idx []int) (x, y *tensors.Tensor) {
	if idx == nil {
		return tensors.FromFlatDataAndDimensions(s.X, s.N, s.D), tensors.FromFlatDataAndDimensions(s.Y, s.N)
	}
	xd, yd := make([]float32, 0, len(idx)*s.D), make([]int32, len(idx))
	for j, i := range idx {
		xd = append(xd, s.Example(i)...)
		yd[j] = s.Y[i]
	}
	return tensors.FromFlatDataAndDimensions(xd, len(idx), s.D), tensors.FromFlatDataAndDimensions(yd, len(idx))
}

// scalars reads scalar float outputs to the host and frees them.
func scalars(outs []*tensors.Tensor) []float64 {
	v := make([]float64, len(outs))
	for i, t := range outs {
		switch x := t.Value().(type) {
		case float32:
			v[i] = float64(x)
		case float64:
			v[i] = x
		default:
			exceptions.Panicf("train: unexpected output %s", t.Shape())
		}
		_ = t.FinalizeAll()
	}
	return v
}
