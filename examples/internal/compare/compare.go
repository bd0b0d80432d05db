// Package compare trains one model on the shipped handwritten digits (data/digits) with several
// optimizers through GoMLX's own train.Trainer and train.Loop, as the examples do, and prints
// each optimizer's held-out accuracy and step time. Each example keeps its model and its
// optimizers; this package is the training and reporting they share.
package compare

import (
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/gomlx/compute"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train"
	"github.com/gomlx/gomlx/ml/train/metric"
	"github.com/gomlx/gomlx/ml/train/optimizer"
	"github.com/gomlx/gomlx/ui/commandline"

	"github.com/fgn-paper/fgn/data/digits"
	"github.com/fgn-paper/fgn/fgn"
)

// Model builds the logits (b×C) of a batch of images x (b×64). It is an alias, not a defined
// type: train.NewTrainer selects the model function by its type.
type Model = func(scope *model.Scope, x *Node) *Node

// Method is an optimizer under comparison: New returns a fresh one for each training run.
type Method struct {
	Name string
	New  func() optimizer.Interface
}

// Config is how each optimizer trains.
type Config struct {
	Epochs, Batch int
	// Seed seeds the split, the initial weights and the batch order: every method starts from
	// the same weights and sees the same batches.
	Seed     uint64
	Progress bool // attach GoMLX's command-line progress bar to each loop
}

// RegisterFlags registers -epochs, -batch, -seed and -progress on fs, with c's values as defaults.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.IntVar(&c.Epochs, "epochs", c.Epochs, "training epochs per optimizer")
	fs.IntVar(&c.Batch, "batch", c.Batch, "batch size")
	fs.Uint64Var(&c.Seed, "seed", c.Seed, "seed of the split, the initial weights and the batch order")
	fs.BoolVar(&c.Progress, "progress", c.Progress, "show GoMLX's progress bar while training")
}

// Result is one optimizer's outcome.
type Result struct {
	Method                string
	Steps                 int
	HeldOutLoss, Accuracy float64
	// TrainTime includes compiling the step; MedianStep is the loop's median step time.
	TrainTime, MedianStep time.Duration
	// Telemetry is an fgn optimizer's at the end of training (fgn.Optimizer.Telemetry: λ, the last
	// step's ρ and τ, rejected and skipped steps); nil for other optimizers.
	Telemetry *fgn.Telemetry
}

// Run trains a fresh model with every method, in order.
func Run(be compute.Backend, cfg Config, m Model, methods []Method) ([]Result, error) {
	results := make([]Result, len(methods))
	for k, method := range methods {
		var err error
		if results[k], err = TrainOne(be, cfg, m, method); err != nil {
			return nil, fmt.Errorf("%s: %w", method.Name, err)
		}
	}
	return results, nil
}

// TrainOne trains a fresh model with one method through train.Trainer and train.Loop, with
// fgn.Loss as the loss (the mean softmax cross-entropy, which records the logits and labels FGN
// and SGN need; any other optimizer trains on it as on any loss), and evaluates it on the
// held-out split.
func TrainOne(be compute.Backend, cfg Config, m Model, method Method) (Result, error) {
	trainDS, heldOutDS, err := digits.Datasets(be, cfg.Batch, cfg.Seed)
	if err != nil {
		return Result{}, err
	}
	store := model.NewStore()
	store.SetParam(model.ParamInitialSeed, int64(cfg.Seed)) // the same initial weights for every method
	opt := method.New()
	trainer := train.NewTrainer(be, store, m, fgn.Loss, opt, nil,
		[]metric.Interface{metric.NewSparseCategoricalAccuracy("Accuracy", "#acc")})
	loop := train.NewLoop(trainer)
	if cfg.Progress {
		commandline.AttachProgressBar(loop)
	}
	start := time.Now()
	if _, err := loop.RunEpochs(trainDS, cfg.Epochs); err != nil {
		return Result{}, err
	}
	r := Result{Method: method.Name, Steps: loop.LoopStep, TrainTime: time.Since(start),
		MedianStep: loop.MedianTrainStepDuration()}
	if o, ok := opt.(fgn.Optimizer); ok {
		tel := o.Telemetry(store)
		r.Telemetry = &tel
	}
	metrics, err := trainer.Eval(heldOutDS)
	if err != nil {
		return Result{}, err
	}
	r.HeldOutLoss = float64(tensors.ToScalar[float32](metrics[0]))
	r.Accuracy = float64(tensors.ToScalar[float32](metrics[1]))
	return r, nil
}

// Print writes the title, one line per method and the fgn optimizers' telemetry at the end of
// training.
func Print(w io.Writer, title string, results []Result) {
	fmt.Fprintln(w, title+": held-out accuracy and cross-entropy; training time includes compiling the step")
	fmt.Fprintf(w, "%-5s %6s %10s %10s %11s %12s\n", "", "steps", "accuracy", "loss", "train time", "median step")
	for _, r := range results {
		fmt.Fprintf(w, "%-5s %6d %9.1f%% %10.4f %11s %12s\n", r.Method, r.Steps, 100*r.Accuracy, r.HeldOutLoss,
			r.TrainTime.Round(time.Millisecond), r.MedianStep.Round(time.Microsecond))
	}
	for _, r := range results {
		if r.Telemetry != nil {
			fmt.Fprintf(w, "%s after its last step: %s\n", r.Method, r.Telemetry)
		}
	}
}
