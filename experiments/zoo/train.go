package zoo

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train"
	"github.com/gomlx/gomlx/ml/train/metric"
	"github.com/gomlx/gomlx/ml/train/optimizer"

	"github.com/fgn-paper/fgn/data/digits"
	"github.com/fgn-paper/fgn/fgn"
)

// Optimizer is an optimizer under comparison: its label in tables and a constructor of a fresh
// instance for each run.
type Optimizer struct {
	Name string
	New  func() optimizer.Interface
}

// Config is how long and on what a zoo model trains.
type Config struct {
	Epochs, Batch int
	// Seed selects the held-out split, the initial weights and the batch order.
	Seed uint64
}

// DefaultConfig trains for 10 epochs of 11 batches of 128 examples: the budget in which the
// default settings must match Adam.
var DefaultConfig = Config{Epochs: 10, Batch: 128, Seed: 1}

// Result is the outcome of training one model with one optimizer.
type Result struct {
	Model, Optimizer string
	Seed             uint64
	Steps            int
	// Accuracy and Loss are the held-out accuracy and mean cross-entropy after training.
	Accuracy, Loss float64
	// Diverged is set when train.Loop stopped the run on a batch loss that was not finite; the
	// run then counts with accuracy 0 and loss +Inf, after Steps steps.
	Diverged bool
	// MedianStep is train.Loop's median step time; TrainTime includes compiling the step.
	MedianStep, TrainTime time.Duration
}

// Train trains a fresh m with opt through train.Trainer and train.Loop on data/digits
// (digits.Datasets(cfg.Seed)), with fgn.Loss as the loss whatever the optimizer, and evaluates
// it on the held-out part.
func Train(be compute.Backend, m Model, opt Optimizer, cfg Config) (Result, error) {
	r := Result{Model: m.Name, Optimizer: opt.Name, Seed: cfg.Seed}
	trainDS, heldOutDS, err := digits.Datasets(be, cfg.Batch, cfg.Seed)
	if err != nil {
		return r, err
	}
	trainer := NewTrainer(be, m, opt, cfg.Seed)
	loop := train.NewLoop(trainer)
	start := time.Now()
	_, err = loop.RunEpochs(trainDS, cfg.Epochs)
	r.TrainTime, r.Steps, r.MedianStep = time.Since(start), loop.LoopStep, loop.MedianTrainStepDuration()
	if err != nil && strings.Contains(err.Error(), lossNotFinite) {
		r.Diverged, r.Loss = true, math.Inf(1)
		return r, nil
	}
	if err != nil {
		return r, fmt.Errorf("zoo: %s with %s: %w", m.Name, opt.Name, err)
	}
	metrics, err := trainer.Eval(heldOutDS)
	if err != nil {
		return r, fmt.Errorf("zoo: %s with %s: evaluation: %w", m.Name, opt.Name, err)
	}
	r.Loss = float64(tensors.ToScalar[float32](metrics[0]))
	r.Accuracy = float64(tensors.ToScalar[float32](metrics[1]))
	if math.IsNaN(r.Accuracy) {
		r.Accuracy = 0
	}
	return r, nil
}

// lossNotFinite ends the message of the error by which train.Loop stops on a batch loss that is
// NaN or infinite (gomlx v0.28.16, ml/train/loop.go).
const lossNotFinite = "training interrupted"

// NewTrainer returns the trainer of m with a fresh instance of opt and fgn.Loss, its initial
// weights drawn from seed, and held-out accuracy as its evaluation metric.
func NewTrainer(be compute.Backend, m Model, opt Optimizer, seed uint64) *train.Trainer {
	store := model.NewStore()
	store.SetParam(model.ParamInitialSeed, int64(seed))
	return train.NewTrainer(be, store, m.Fn, fgn.Loss, opt.New(), nil,
		[]metric.Interface{metric.NewSparseCategoricalAccuracy("Accuracy", "#acc")})
}
