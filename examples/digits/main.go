// Command digits trains a small GoMLX model on real data with FGN, SGN and Adam through GoMLX's
// own train.Trainer and train.Loop, and prints each optimizer's held-out accuracy and training
// time.
//
// The data are the 1797 handwritten digits of data/digits (UCI optdigits, test part; CC BY 4.0):
// 8×8 images of 0-16 pixel counts, standardised, 80 % for training and a stratified 20 % held
// out. The model is a one-hidden-layer tanh MLP (64 → 32 → 10) trained for a few epochs in
// static batches. FGN and SGN need the batch's logits and labels, so the trainer's loss is
// fgn.Loss (the mean softmax cross-entropy, which records them); Adam trains on the same loss.
//
//	go run ./examples/digits [-epochs 10] [-batch 128] [-progress]
package main

import (
	"flag"
	"fmt"
	"math/rand"
	"os"
	"time"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/dataset"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train"
	"github.com/gomlx/gomlx/ml/train/metric"
	"github.com/gomlx/gomlx/ml/train/optimizer"
	"github.com/gomlx/gomlx/ui/commandline"

	"github.com/fgn-paper/fgn/data/digits"
	"github.com/fgn-paper/fgn/features"
	"github.com/fgn-paper/fgn/fgn"
	"github.com/fgn-paper/fgn/fgn/backend"
)

// config holds the example's settings.
type config struct {
	Epochs, Batch, Hidden int
	Seed                  int64
	Progress              bool // attach GoMLX's command-line progress bar to each loop
}

// defaultConfig trains each optimizer for 10 epochs of 11 batches of 128 examples.
var defaultConfig = config{Epochs: 10, Batch: 128, Hidden: 32, Seed: 1}

// method is an optimizer under comparison.
type method struct {
	Name string
	New  func() optimizer.Interface
}

// methods are FGN and SGN (fgn's optimizers, matrix-free by autodiff on this MLP) and GoMLX's
// Adam, with step sizes and damping set by hand, not tuned.
var methods = []method{
	{"FGN", func() optimizer.Interface { return fgn.FGN().LearningRate(1).Damping(0.1).Done() }},
	{"SGN", func() optimizer.Interface { return fgn.SGN().LearningRate(1).Damping(0.1).Done() }},
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
		h := Tanh(affine(scope.In("hidden"), x, hidden))
		return affine(scope.In("logits"), h, digits.Classes)
	}
}

// affine is the layer x W + b with variables W and b of scope, as layers.DenseWithBias
// initialises them, built from MatMul and Add: layers.Dense builds GoMLX's fused Dense op on
// backends that have it, whose gradient FGN's autodiff linearisation cannot differentiate
// again (see fgn.Linearize, and see compat.go: compatFusedDenseVJPNoGradient in package fgn).
func affine(scope *model.Scope, x *Node, outputs int) *Node {
	g := x.Graph()
	w := scope.VariableWithShape("weights", shapes.Make(x.DType(), x.Shape().Dim(-1), outputs)).NodeValue(g)
	b := scope.VariableWithShape("biases", shapes.Make(x.DType(), outputs)).NodeValue(g)
	return Add(MatMul(x, w), ExpandAxes(b, 0))
}

// run trains a fresh model with every method on the same split and initial weights.
func run(be compute.Backend, cfg config) ([]result, error) {
	all, err := digits.Load()
	if err != nil {
		return nil, err
	}
	trainSet, heldOut, err := features.StratifiedSplit(all, 0.2, uint64(cfg.Seed))
	if err != nil {
		return nil, err
	}
	if _, _, err := features.Standardize(trainSet, heldOut); err != nil {
		return nil, err
	}
	results := make([]result, len(methods))
	for k, m := range methods {
		if results[k], err = trainOne(be, cfg, m, trainSet, heldOut); err != nil {
			return nil, fmt.Errorf("%s: %w", m.Name, err)
		}
	}
	return results, nil
}

// trainOne trains the model with one method through train.Trainer and train.Loop and evaluates
// it on the held-out split.
func trainOne(be compute.Backend, cfg config, m method, trainSet, heldOut *features.Set) (result, error) {
	trainDS, err := inMemory(be, "train", trainSet)
	if err != nil {
		return result{}, err
	}
	trainDS.BatchSize(cfg.Batch, true).Shuffle().WithRand(rand.New(rand.NewSource(cfg.Seed)))
	evalDS, err := inMemory(be, "held-out", heldOut)
	if err != nil {
		return result{}, err
	}
	evalDS.BatchSize(heldOut.N, false)

	store := model.NewStore()
	store.SetParam(model.ParamInitialSeed, cfg.Seed) // the same initial weights for every method
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
	metrics, err := trainer.Eval(evalDS)
	if err != nil {
		return result{}, err
	}
	r.HeldOutLoss = float64(tensors.ToScalar[float32](metrics[0]))
	r.Accuracy = float64(tensors.ToScalar[float32](metrics[1]))
	return r, nil
}

// inMemory returns a GoMLX in-memory dataset of the features (N×D float32) and labels (N×1 int32).
func inMemory(be compute.Backend, name string, s *features.Set) (*dataset.InMemoryDataset, error) {
	x := tensors.FromFlatDataAndDimensions(s.X, s.N, s.D)
	y := tensors.FromFlatDataAndDimensions(s.Y, s.N, 1)
	return dataset.InMemoryFromData(be, name, []any{x}, []any{y})
}

func main() {
	cfg := defaultConfig
	flag.IntVar(&cfg.Epochs, "epochs", cfg.Epochs, "training epochs per optimizer")
	flag.IntVar(&cfg.Batch, "batch", cfg.Batch, "batch size")
	flag.IntVar(&cfg.Hidden, "hidden", cfg.Hidden, "hidden units of the MLP")
	flag.Int64Var(&cfg.Seed, "seed", cfg.Seed, "seed of the split, the initial weights and the batch order")
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
