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
// FGN and SGN run at the library's defaults (α = 1, λ adapted from 1 by Levenberg-Marquardt, at
// most 5 CG iterations), with nothing tuned, and end within a fraction of a point of Adam's
// held-out accuracy at its best learning rate in the same epochs; on a model this small a step
// costs a few of Adam's, so Adam finishes first (BENCHMARKS.md, "The digits example" and "Default settings").
//
//	go run ./examples/digits [-epochs 10] [-batch 128] [-progress]
package main

import (
	"flag"
	"fmt"
	"os"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/layers"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"

	"github.com/fgn-paper/fgn/data/digits"
	"github.com/fgn-paper/fgn/examples/internal/compare"
	"github.com/fgn-paper/fgn/fgn"
	"github.com/fgn-paper/fgn/fgn/backend"
)

// defaultConfig trains each optimizer for 10 epochs of 11 batches of 128 examples.
var defaultConfig = compare.Config{Epochs: 10, Batch: 128, Seed: 1}

// defaultHidden is the MLP's hidden width.
const defaultHidden = 32

// methods are FGN and SGN (fgn's optimizers, matrix-free by autodiff on this MLP) at their
// default settings, and GoMLX's Adam at learning rate 0.01, the best of those swept on the
// model zoo (experiments/zoo; GoMLX's default 0.001 trains far less in 10 epochs).
var methods = []compare.Method{
	{Name: "FGN", New: func() optimizer.Interface { return fgn.FGN().Done() }},
	{Name: "SGN", New: func() optimizer.Interface { return fgn.SGN().Done() }},
	{Name: "Adam", New: func() optimizer.Interface { return optimizer.Adam().LearningRate(0.01).Done() }},
}

// mlp is the model: logits = tanh(x W₁ + b₁) W₂ + b₂.
func mlp(hidden int) compare.Model {
	return func(scope *model.Scope, x *Node) *Node {
		h := Tanh(layers.DenseWithBias(scope.In("hidden"), x, hidden))
		return layers.DenseWithBias(scope.In("logits"), h, digits.Classes)
	}
}

func main() {
	cfg := defaultConfig
	cfg.RegisterFlags(flag.CommandLine)
	hidden := flag.Int("hidden", defaultHidden, "hidden units of the MLP")
	flag.Parse()
	be, err := backend.New()
	if err == nil {
		var results []compare.Result
		if results, err = compare.Run(be, cfg, mlp(*hidden), methods); err == nil {
			compare.Print(os.Stdout, "tanh MLP", results)
			return
		}
	}
	fmt.Fprintln(os.Stderr, "digits:", err)
	os.Exit(1)
}
