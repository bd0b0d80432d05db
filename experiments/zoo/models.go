// Package zoo is a model zoo of small classifiers written with GoMLX's standard layers
// (ml/layers), trained on the handwritten digits of data/digits through train.Trainer with
// fgn.Loss: the models on which FGN's and SGN's default settings are chosen (Sweep), tested
// (zoo_test.go) and costed (BenchmarkModelZoo).
package zoo

import (
	"fmt"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/layers"
	"github.com/gomlx/gomlx/ml/layers/activation"
	"github.com/gomlx/gomlx/ml/model"

	"github.com/fgn-paper/fgn/data/digits"
)

// Model is a classifier of the zoo: Fn maps a batch of images (b×64 standardised pixels) to
// logits (b×10), creating its variables in the scope with GoMLX's layers. It has the model
// function signature that train.NewTrainer takes.
type Model struct {
	Name string
	Fn   func(scope *model.Scope, x *Node) *Node
}

// Models are the zoo's classifiers, each built from layers.DenseWithBias (and layers.Convolution)
// as a GoMLX user writes them:
//   - relu-mlp: 64 → 64 (ReLU) → 10;
//   - tanh-mlp: 64 → 32 (tanh) → 10;
//   - cnn: the image as 8×8×1, two 3×3 convolutions of 16 channels with same padding and ReLU,
//     flattened (1024) → 10.
var Models = []Model{
	{"relu-mlp", func(scope *model.Scope, x *Node) *Node {
		h := activation.Relu(layers.DenseWithBias(scope.In("hidden"), x, 64))
		return layers.DenseWithBias(scope.In("logits"), h, digits.Classes)
	}},
	{"tanh-mlp", func(scope *model.Scope, x *Node) *Node {
		h := Tanh(layers.DenseWithBias(scope.In("hidden"), x, 32))
		return layers.DenseWithBias(scope.In("logits"), h, digits.Classes)
	}},
	{"cnn", CNN},
}

// CNN is the zoo's convolutional classifier.
func CNN(scope *model.Scope, x *Node) *Node {
	h := Reshape(x, x.Shape().Dim(0), 8, 8, 1)
	for k := range 2 {
		h = layers.Convolution(scope.In("conv%d", k+1), h).
			Channels(16).KernelSize(3).PadSame().Done()
		h = activation.Relu(h)
	}
	return layers.DenseWithBias(scope.In("logits"), Reshape(h, h.Shape().Dim(0), -1), digits.Classes)
}

// ModelByName returns the zoo's model called name.
func ModelByName(name string) (Model, error) {
	for _, m := range Models {
		if m.Name == name {
			return m, nil
		}
	}
	names := make([]string, len(Models))
	for k, m := range Models {
		names[k] = m.Name
	}
	return Model{}, fmt.Errorf("zoo: unknown model %q (want one of %v)", name, names)
}
