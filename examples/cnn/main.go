// Command cnn trains a small convolutional network, written with GoMLX's standard layers, on
// real data with FGN, SGN and Adam through GoMLX's own train.Trainer and train.Loop, and prints
// each optimizer's held-out accuracy and step time.
//
// The data are the 1797 handwritten digits of data/digits (UCI optdigits, test part; CC BY 4.0):
// 8×8 images, standardised, 80 % for training and a stratified 20 % held out
// (digits.Datasets). The model takes each image as 8×8×1 through two layers.Convolution (3×3
// kernels, 16 channels, same padding), each followed by a ReLU, and a layers.DenseWithBias head
// on the flattened 8×8×16 features. FGN and SGN, at their default settings, linearise it by
// autodiff; they need the batch's logits and labels, so the trainer's loss is fgn.Loss (the mean
// softmax cross-entropy, which records them); Adam trains on the same loss.
//
// At the library's defaults, with nothing tuned, FGN and SGN end the 2 epochs above Adam at its
// best learning rate. fgn computes the convolutions of its products as matrix products; a step
// costs a few of Adam's, whose reverse mode runs GoMLX's direct convolution (BENCHMARKS.md, "The
// CNN example" and "Default settings").
//
//	go run ./examples/cnn [-epochs 2] [-batch 128] [-progress]
package main

import (
	"flag"
	"fmt"
	"os"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/layers"
	"github.com/gomlx/gomlx/ml/layers/activation"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"

	"github.com/fgn-paper/fgn/data/digits"
	"github.com/fgn-paper/fgn/examples/internal/compare"
	"github.com/fgn-paper/fgn/fgn"
	"github.com/fgn-paper/fgn/fgn/backend"
)

// defaultConfig trains each optimizer for 2 epochs of 11 batches of 128 examples.
var defaultConfig = compare.Config{Epochs: 2, Batch: 128, Seed: 1}

// methods are FGN and SGN at their default settings and GoMLX's Adam at learning rate 0.01, the
// best of those swept on the model zoo (experiments/zoo).
var methods = []compare.Method{
	{Name: "FGN", New: func() optimizer.Interface { return fgn.FGN().Done() }},
	{Name: "SGN", New: func() optimizer.Interface { return fgn.SGN().Done() }},
	{Name: "Adam", New: func() optimizer.Interface { return optimizer.Adam().LearningRate(0.01).Done() }},
}

// cnn is the model: two 3×3 convolutions of 16 channels with ReLU, then a dense head.
func cnn(scope *model.Scope, x *Node) *Node {
	h := Reshape(x, x.Shape().Dim(0), 8, 8, 1) // batch, height, width, channels
	h = activation.Relu(layers.Convolution(scope.In("conv1"), h).Channels(16).KernelSize(3).PadSame().Done())
	h = activation.Relu(layers.Convolution(scope.In("conv2"), h).Channels(16).KernelSize(3).PadSame().Done())
	return layers.DenseWithBias(scope.In("logits"), Reshape(h, h.Shape().Dim(0), -1), digits.Classes)
}

func main() {
	cfg := defaultConfig
	cfg.RegisterFlags(flag.CommandLine)
	flag.Parse()
	be, err := backend.New()
	if err == nil {
		var results []compare.Result
		if results, err = compare.Run(be, cfg, cnn, methods); err == nil {
			compare.Print(os.Stdout, "CNN", results)
			return
		}
	}
	fmt.Fprintln(os.Stderr, "cnn:", err)
	os.Exit(1)
}
