// Command digits trains a small GoMLX model on real data with FGN, SGN and Adam through GoMLX's
// own train.Trainer and train.Loop, and prints each optimizer's held-out accuracy and training
// time.
//
// The data are the 1797 handwritten digits of data/digits (UCI optdigits, test part; CC BY 4.0):
// 8×8 images of 0-16 pixel counts, standardised, 80 % for training and a stratified 20 % held
// out (digits.Datasets). The model is a one-hidden-layer tanh MLP (64 → 32 → 10) of GoMLX's
// layers.DenseWithBias, trained for a few epochs in static batches. FGN and SGN need the batch's
// logits and labels, so the trainer's loss is fgn.Loss (the mean softmax cross-entropy, which
// records them); Adam trains on the same loss.
//
//	go run ./examples/digits [-epochs 10] [-batch 128] [-progress]
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/gomlx/compute"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/layers"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train"
	"github.com/gomlx/gomlx/ml/train/metric"
	"github.com/gomlx/gomlx/ml/train/optimizer"
	"github.com/gomlx/gomlx/ui/commandline"

	"github.com/fgn-paper/fgn/data/digits"
	"github.com/fgn-paper/fgn/fgn"
	"github.com/fgn-paper/fgn/fgn/backend"
)

// config holds the example's settings.
type config struct {
	Epochs, Batch, Hidden int
	Seed                  uint64
	Progress              bool // attach GoMLX's command-line progress bar to each loop
}

// defaultConfig trains each optimizer for 10 epochs of 11 batches of 128 examples.
var defaultConfig = config{Epochs: 10, Batch: 128, Hidden: 32, Seed: 1}

// method is an optimizer under comparison.
type method struct {
	Name string
	New  func() optimizer.Interface
}

// methods are FGN and SGN (fgn's optimizers, matrix-free by autodiff on this MLP) at their
// default settings, and GoMLX's Adam at learning rate 0.01, the best of those swept on the
// model zoo (experiments/zoo; GoMLX's default 0.001 trains far less in 10 epochs).
var methods = []method{
	{"FGN", func() optimizer.Interface { return fgn.FGN().Done() }},
	{"SGN", func() optimizer.Interface { return fgn.SGN().Done() }},
	{"Adam", func() optimizer.Interface { return optimizer.Adam().LearningRate(0.01).Done() }},
}

// result is one optimizer's outcome.
type result struct {
	Method                string
	Steps                 int
	HeldOutLoss, Accuracy float64
	TrainTime, MedianStep time.Duration
}

// mlp is the model: logits = tanh(x W₁ + b₁) W₂ + b₂.
func mlp(hidden int) func(scope *model.Scope, x *Node) *Node {
	return func(scope *model.Scope, x *Node) *Node {
		h := Tanh(layers.DenseWithBias(scope.In("hidden"), x, hidden))
		return layers.DenseWithBias(scope.In("logits"), h, digits.Classes)
	}
}

// run trains a fresh model with every method on the same split, batches and initial weights.
func run(be compute.Backend, cfg config) ([]result, error) {
	results := make([]result, len(methods))
	for k, m := range methods {
		var err error
		if results[k], err = trainOne(be, cfg, m); err != nil {
			return nil, fmt.Errorf("%s: %w", m.Name, err)
		}
	}
	return results, nil
}

// trainOne trains the model with one method through train.Trainer and train.Loop and evaluates
// it on the held-out split.
func trainOne(be compute.Backend, cfg config, m method) (result, error) {
	trainDS, heldOutDS, err := digits.Datasets(be, cfg.Batch, cfg.Seed)
	if err != nil {
		return result{}, err
	}
	store := model.NewStore()
	store.SetParam(model.ParamInitialSeed, int64(cfg.Seed)) // the same initial weights for every method
	trainer := train.NewTrainer(be, store, mlp(cfg.Hidden), fgn.Loss, m.New(), nil,
		[]metric.Interface{metric.NewSparseCategoricalAccuracy("Accuracy", "#acc")})
	loop := train.NewLoop(trainer)
	if cfg.Progress {
		commandline.AttachProgressBar(loop)
	}
	start := time.Now()
	if _, err := loop.RunEpochs(trainDS, cfg.Epochs); err != nil {
		return result{}, err
	}
	r := result{Method: m.Name, Steps: loop.LoopStep, TrainTime: time.Since(start), MedianStep: loop.MedianTrainStepDuration()}
	metrics, err := trainer.Eval(heldOutDS)
	if err != nil {
		return result{}, err
	}
	r.HeldOutLoss = float64(tensors.ToScalar[float32](metrics[0]))
	r.Accuracy = float64(tensors.ToScalar[float32](metrics[1]))
	return r, nil
}

func main() {
	cfg := defaultConfig
	flag.IntVar(&cfg.Epochs, "epochs", cfg.Epochs, "training epochs per optimizer")
	flag.IntVar(&cfg.Batch, "batch", cfg.Batch, "batch size")
	flag.IntVar(&cfg.Hidden, "hidden", cfg.Hidden, "hidden units of the MLP")
	flag.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "seed of the split, the initial weights and the batch order")
	flag.BoolVar(&cfg.Progress, "progress", false, "show GoMLX's progress bar while training")
	flag.Parse()
	be, err := backend.New()
	if err == nil {
		var results []result
		if results, err = run(be, cfg); err == nil {
			printResults(results)
			return
		}
	}
	fmt.Fprintln(os.Stderr, "digits:", err)
	os.Exit(1)
}

// printResults prints one line per method.
func printResults(results []result) {
	fmt.Println("held-out accuracy and cross-entropy; training time includes compiling the step")
	fmt.Printf("%-5s %6s %10s %10s %11s %12s\n", "", "steps", "accuracy", "loss", "train time", "median step")
	for _, r := range results {
		fmt.Printf("%-5s %6d %9.1f%% %10.4f %11s %12s\n", r.Method, r.Steps, 100*r.Accuracy, r.HeldOutLoss,
			r.TrainTime.Round(time.Millisecond), r.MedianStep.Round(time.Microsecond))
	}
}
