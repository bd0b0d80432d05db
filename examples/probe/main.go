// Command probe trains a linear probe, a dense softmax head on frozen features, written with
// GoMLX's standard layers, with FGN, SGN and Adam through GoMLX's own train.Trainer and
// train.Loop, and prints each optimizer's held-out accuracy and step time.
//
// The data are the 1797 handwritten digits of data/digits (UCI optdigits, test part; CC BY 4.0):
// 8×8 images of 0-16 pixel counts, standardised, 80 % for training and a stratified 20 % held
// out (digits.Datasets). The frozen backbone is a random tanh layer (64 → 256, layers.DenseWithBias, its variables
// marked not trainable) and the probe a layers.DenseWithBias head (256 → 10). The logits are
// then affine in every trainable variable, z = h W + 1 bᵀ with features h that no trainable
// variable reaches, and FGN and SGN recognise the head in the graph: they step on its exact
// Jacobian products, with nothing recorded by the model; FGN forms its b×b margin Gram in closed
// form (the paper's appendix F.2) where that costs less than the products, which it does not at
// C = 10 classes (fgn.CheaperRowOperator). FGN and SGN end level with Adam or above it, their
// steps costing more than Adam's (BENCHMARKS.md, "The probe example"). The trainer's loss is fgn.Loss (the mean softmax
// cross-entropy, which records the logits and labels the curvature needs); Adam trains on the
// same loss.
//
//	go run ./examples/probe [-epochs 10] [-batch 128] [-hidden 256] [-progress] [-v=1]
//
// With -v=1 the optimizers log (klog) the linearisation each step graph uses.
package main

import (
	"flag"
	"fmt"
	"os"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/layers"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
	"k8s.io/klog/v2"

	"github.com/fgn-paper/fgn/data/digits"
	"github.com/fgn-paper/fgn/examples/internal/compare"
	"github.com/fgn-paper/fgn/fgn"
	"github.com/fgn-paper/fgn/fgn/backend"
)

// defaultConfig trains each optimizer for 10 epochs of 11 batches of 128 examples.
var defaultConfig = compare.Config{Epochs: 10, Batch: 128, Seed: 1}

// defaultHidden is the width of the frozen random tanh layer.
const defaultHidden = 256

// methods are FGN and SGN (fgn's optimizers, on the head's exact products) and GoMLX's Adam,
// with step sizes and damping set by hand, not tuned.
var methods = []compare.Method{
	{Name: "FGN", New: func() optimizer.Interface { return fgn.FGN().LearningRate(1).Damping(0.1).Done() }},
	{Name: "SGN", New: func() optimizer.Interface { return fgn.SGN().LearningRate(1).Damping(0.1).Done() }},
	{Name: "Adam", New: func() optimizer.Interface { return optimizer.Adam().LearningRate(0.01).Done() }},
}

// probe is the model: a linear head over a frozen random tanh layer,
// logits = tanh(x B + c) W + b with B and c not trainable.
func probe(hidden int) compare.Model {
	return func(scope *model.Scope, x *Node) *Node {
		backbone := scope.In("backbone")
		h := Tanh(layers.DenseWithBias(backbone, x, hidden))
		for v := range backbone.IterVariables() {
			v.SetTrainable(false)
		}
		return layers.DenseWithBias(scope.In("head"), h, digits.Classes)
	}
}

func main() {
	cfg := defaultConfig
	cfg.RegisterFlags(flag.CommandLine)
	hidden := flag.Int("hidden", defaultHidden, "width of the frozen random tanh layer")
	klog.InitFlags(nil)
	flag.Parse()
	be, err := backend.New()
	if err == nil {
		var results []compare.Result
		if results, err = compare.Run(be, cfg, probe(*hidden), methods); err == nil {
			compare.Print(os.Stdout, "linear probe on frozen features", results)
			return
		}
	}
	fmt.Fprintln(os.Stderr, "probe:", err)
	os.Exit(1)
}
