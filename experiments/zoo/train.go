package zoo

import (
	"fmt"
	"math"
	"time"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/dataset"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train"
	"github.com/gomlx/gomlx/ml/train/metric"
	"github.com/gomlx/gomlx/ml/train/optimizer"
	"github.com/gomlx/gomlx/support/exceptions"

	exptrain "github.com/fgn-paper/fgn/experiments/train"
	"github.com/fgn-paper/fgn/fgn"
)

// Optimizer is an optimizer under comparison: its name in tables and a constructor of a fresh
// instance for each run.
type Optimizer struct {
	Name string
	New  func() optimizer.Interface
}

// Config overrides a model's training budget: Epochs and Batch replace the model's when > 0, and
// Steps, when > 0, ends training after that many steps (in the middle of an epoch, then evaluated).
type Config struct {
	Epochs, Batch, Steps int
	// Seed selects the held-out split, the initial weights and the batch order.
	Seed uint64
}

// Epoch is a run after an epoch; epoch 0 is before the first step.
type Epoch struct {
	Epoch, Steps int
	// Seconds is the training time of steps 1..Steps: each step's train.Trainer.TrainStep until its
	// batch loss is read back to the host, without compiling the step (Run.CompileSeconds),
	// evaluating or reading the telemetry.
	Seconds float64
	// TrainLoss is the mean cross-entropy over the training part; HeldOutLoss and HeldOutAccuracy
	// are over the held-out part.
	TrainLoss, HeldOutLoss, HeldOutAccuracy float64
	// Damping is λ at the end of the epoch and MeanRho the mean of the finite gain ratios of its
	// steps (fgn.Optimizer.Telemetry after each step; NaN for other optimizers, MeanRho also for a
	// constant λ). Rejected and Skipped count the epoch's steps that the damping policy rejected
	// and that were not finite (0 for other optimizers).
	Damping, MeanRho float64
	// MeanStepLength is the mean of FGN's step lengths τ over the epoch's finite steps
	// (fgn.Telemetry.StepLength; NaN for other optimizers).
	MeanStepLength    float64
	Rejected, Skipped int
	// MinDamping is the smallest λ after any step of the epoch (NaN for other optimizers, and for
	// epoch 0).
	MinDamping float64
}

// Run is one training run of a model with an optimizer and a seed.
type Run struct {
	Model, Task, Optimizer string
	Seed                   uint64
	Batch                  int
	// CompileSeconds is the time to compile the training step (the first time: it is compiled
	// again after each evaluation, off the clock too).
	CompileSeconds float64
	// Epochs are the evaluations before training and after each epoch.
	Epochs []Epoch
	// Diverged is set when a batch loss was not finite: train.Loop stops there, and so does Train,
	// after evaluating the model it reached (the last Epoch, at that step).
	Diverged bool
	// Failed is the error of a run whose step could not be built or run (a model the optimizer
	// cannot differentiate yet); such a run has no Epochs past the first evaluation, if any.
	Failed string
}

// Health returns the run's experiments/train Health: the training loss before and after, and
// the steps not taken. A run that diverged ends with a loss of +Inf unless it was measured higher.
func (r *Run) Health() exptrain.Health {
	h := exptrain.Health{InitialLoss: math.NaN(), FinalLoss: math.NaN()}
	if len(r.Epochs) == 0 {
		return h
	}
	h.InitialLoss, h.FinalLoss = r.Epochs[0].TrainLoss, r.Epochs[len(r.Epochs)-1].TrainLoss
	for _, e := range r.Epochs {
		h.Steps = e.Steps
		h.Skipped += e.Skipped
		h.Rejected += e.Rejected
	}
	if r.Diverged && !(h.FinalLoss > h.InitialLoss) {
		h.FinalLoss = math.Inf(1) // stopped on a batch loss that was not finite
	}
	return h
}

// Train trains a fresh m with opt through train.Trainer with fgn.Loss as the loss whatever the
// optimizer, one step at a time (train.Trainer.TrainStep, the step train.Loop runs), on the
// model's task split by cfg.Seed, and evaluates it before training and after each epoch. An
// error in the data is returned; a model the optimizer cannot step is reported in Run.Failed.
func Train(be compute.Backend, m Model, opt Optimizer, cfg Config) (*Run, error) {
	batch, epochs := m.Batch, m.Epochs
	if cfg.Batch > 0 {
		batch = cfg.Batch
	}
	if cfg.Epochs > 0 {
		epochs = cfg.Epochs
	}
	r := &Run{Model: m.Name, Task: m.Task.Name, Optimizer: opt.Name, Seed: cfg.Seed, Batch: batch}
	trainDS, heldOutDS, err := m.Task.load(be, batch, cfg.Seed)
	if err != nil {
		return nil, fmt.Errorf("zoo: %s: %w", m.Name, err)
	}
	params, err := m.Task.params()
	if err != nil {
		return nil, fmt.Errorf("zoo: %s: %w", m.Name, err)
	}
	trainEvalDS := trainDS.Copy().BatchSize(trainDS.NumExamples(), false)
	inst := opt.New()
	trainer := newTrainer(be, m, inst, cfg.Seed, params)
	// The training step is compiled when it is created, for the batch's shapes, outside the clock.
	var batchShapes []shapes.Shape
	var compileErr error
	compiled := 0.0 // seconds of the compilation in the coming step's call
	trainer.OnExecCreation(func(exec *model.Exec, graphType train.GraphType) {
		if graphType == train.TrainType {
			start := time.Now()
			_, compileErr = exec.Compile(batchShapes...)
			compiled = time.Since(start).Seconds()
			if r.CompileSeconds == 0 {
				r.CompileSeconds = compiled
			}
		}
	})
	telemetry := func() fgn.Telemetry { return telemetryOf(inst, trainer.Store()) }
	evaluate := func(e Epoch) error {
		// A compiled evaluation graph keeps the variables' values of its first call
		// (compatVariablesAsConstants in fgn/compat.go): every evaluation builds the trainer's
		// graphs anew, and the next step compiles the training step again, off the clock.
		trainer.ResetComputationGraphs()
		var err error
		if e.TrainLoss, _, err = eval(trainer, trainEvalDS); err == nil {
			e.HeldOutLoss, e.HeldOutAccuracy, err = eval(trainer, heldOutDS)
		}
		r.Epochs = append(r.Epochs, e)
		return err
	}
	if err := evaluate(Epoch{Damping: math.NaN(), MeanRho: math.NaN(), MinDamping: math.NaN(),
		MeanStepLength: math.NaN()}); err != nil {
		r.Failed = err.Error()
		return r, nil
	}
	steps, seconds := 0, 0.0
	for epoch := 1; epoch <= epochs; epoch++ {
		var rhos, taus []float64
		minDamping := math.NaN()
		before := telemetry()
		for b, err := range trainDS.Iter() {
			if err != nil {
				return nil, fmt.Errorf("zoo: %s: reading the training data: %w", m.Name, err)
			}
			if batchShapes == nil {
				batchShapes = []shapes.Shape{b.Inputs[0].Shape(), b.Labels[0].Shape()}
			}
			start := time.Now()
			var metrics []*tensors.Tensor
			if perr := exceptions.TryCatch[error](func() { metrics, err = trainer.TrainStep(b) }); perr != nil {
				err = perr
			}
			if err == nil && compileErr != nil {
				err = compileErr
			}
			if err != nil {
				r.Failed = err.Error()
				return r, nil
			}
			loss := tensors.ToScalar[float32](metrics[0]) // reading it back synchronises the step
			seconds += time.Since(start).Seconds() - compiled
			compiled = 0
			steps++
			for _, t := range metrics {
				t.MustFinalizeAll()
			}
			tel := telemetry()
			if rho := tel.GainRatio; !math.IsNaN(rho) && !math.IsInf(rho, 0) {
				rhos = append(rhos, rho)
			}
			if tau := tel.StepLength; !math.IsNaN(tau) {
				taus = append(taus, tau)
			}
			if lambda := tel.Damping; !(lambda >= minDamping) { // NaN at first
				minDamping = lambda
			}
			if math.IsNaN(float64(loss)) || math.IsInf(float64(loss), 0) {
				r.Diverged = true
				break
			}
			if steps == cfg.Steps {
				break
			}
		}
		after := telemetry()
		e := Epoch{Epoch: epoch, Steps: steps, Seconds: seconds, Damping: after.Damping, MeanRho: mean(rhos),
			MinDamping: minDamping, MeanStepLength: mean(taus), Rejected: int(after.RejectedSteps - before.RejectedSteps),
			Skipped: int(after.SkippedSteps - before.SkippedSteps)}
		if err := evaluate(e); err != nil {
			r.Failed = err.Error()
			return r, nil
		}
		if r.Diverged || steps == cfg.Steps {
			break
		}
	}
	return r, nil
}

// eval returns the mean cross-entropy and the accuracy of the trainer's model on ds.
func eval(trainer *train.Trainer, ds *dataset.InMemoryDataset) (loss, accuracy float64, err error) {
	var metrics []*tensors.Tensor
	if perr := exceptions.TryCatch[error](func() { metrics, err = trainer.Eval(ds) }); perr != nil {
		err = perr
	}
	if err != nil {
		return 0, 0, err
	}
	loss = float64(tensors.ToScalar[float32](metrics[0]))
	accuracy = float64(tensors.ToScalar[float32](metrics[1]))
	for _, t := range metrics {
		t.MustFinalizeAll()
	}
	return loss, accuracy, nil
}

// mean returns the mean of xs, NaN for none.
func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// NewTrainer returns the trainer of m with a fresh instance of opt and fgn.Loss, its initial
// weights drawn from seed, its task's hyper-parameters and its own set in the store, and held-out
// accuracy as its evaluation metric. It panics if the task's data cannot be loaded (the words'
// dictionaries are missing), as GoMLX's builders panic.
func NewTrainer(be compute.Backend, m Model, opt Optimizer, seed uint64) *train.Trainer {
	params, err := m.Task.params()
	if err != nil {
		panic(fmt.Errorf("zoo: %s: %w", m.Name, err))
	}
	return newTrainer(be, m, opt.New(), seed, params)
}

func newTrainer(be compute.Backend, m Model, opt optimizer.Interface, seed uint64, taskParams map[string]any) *train.Trainer {
	store := model.NewStore()
	store.SetParam(model.ParamInitialSeed, int64(seed))
	store.SetParams(taskParams)
	store.SetParams(m.Params)
	return train.NewTrainer(be, store, m.Fn, fgn.Loss, opt, nil,
		[]metric.Interface{metric.NewSparseCategoricalAccuracy("Accuracy", "#acc")})
}

// telemetryOf returns the telemetry of an fgn optimizer (fgn.Optimizer.Telemetry), or, for
// another optimizer, which keeps none, NaN for λ, ρ and τ and no steps counted.
func telemetryOf(opt optimizer.Interface, store *model.Store) fgn.Telemetry {
	if o, ok := opt.(fgn.Optimizer); ok {
		return o.Telemetry(store)
	}
	return fgn.Telemetry{Damping: math.NaN(), GainRatio: math.NaN(), StepLength: math.NaN()}
}
