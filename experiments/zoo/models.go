// Package zoo is a model zoo of small classifiers written with GoMLX's standard layers as GoMLX's
// own examples write them, on two data sets (the handwritten digits of data/digits, standardised
// or, for GoMLX's KAN models, scaled to [−1, 1], and the word → language task of data/words),
// each trained through train.Trainer with fgn.Loss at the batch size and epoch budget its example
// uses: the bench on which FGN's and SGN's settings are measured against tuned Adam (Sweep),
// tested (zoo_test.go) and costed (BenchmarkModelZoo).
package zoo

import (
	"fmt"
	"maps"
	"slices"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/layers"
	"github.com/gomlx/gomlx/ml/layers/activation"
	"github.com/gomlx/gomlx/ml/layers/attention"
	"github.com/gomlx/gomlx/ml/layers/fnn"
	"github.com/gomlx/gomlx/ml/layers/kan"
	"github.com/gomlx/gomlx/ml/layers/norm"
	"github.com/gomlx/gomlx/ml/model"

	"github.com/fgn-paper/fgn/data/digits"
)

// Model is a classifier of the zoo: Fn maps a batch of its task's inputs to logits (b×classes),
// creating its variables in the scope with GoMLX's layers; it has the model function signature
// train.NewTrainer takes. It trains in batches of Batch for Epochs epochs, with Params set in the
// store first (store.SetParams), as the GoMLX example it follows (Example) configures its layers.
type Model struct {
	Name, Example string
	Task          *Task
	Batch, Epochs int
	Params        map[string]any
	Fn            func(scope *model.Scope, x *Node) *Node
}

// Models are the zoo's classifiers.
//
// On Digits (the image as 64 standardised pixels; 8×8×1 for the convolutions), for 10 epochs of
// 11 steps unless said otherwise:
//   - relu-mlp: layers.DenseWithBias 64 → 64, ReLU, → 10;
//   - tanh-mlp: 64 → 32, tanh, → 10;
//   - cnn: two 3×3 convolutions of 16 channels with same padding and ReLU, flattened (1024) → 10;
//     for 5 epochs, as resnet-cnn (a Gauss-Newton step of either costs a second or more on the
//     pure-Go backend: BenchmarkZooProducts);
//   - resnet-cnn: a 3×3 convolution of 16 channels, LayerNorm over the channels, GELU, 2×2 max
//     pooling, a residual block (the same convolution, LayerNorm and GELU, added to its input),
//     the mean over the 4×4 positions → 10;
//   - linear: softmax regression, layers.DenseWithBias 64 → 10 (GoMLX's mnist linear model, at
//     its batch of 600);
//   - fnn: fnn.New at the configuration of GoMLX's cifar FNN example (8 hidden layers of 128,
//     swish, residual connections, batches of 64).
//
// On Words (a word as 16 character ids, 0 the padding), each with an embedding of the characters
// (layers.Embedding, 32 dimensions, zero at the padding) and the read-out of GoMLX's imdb
// example, fnn.New with 2 hidden layers of 32 units, residual connections and layer
// normalisation, in batches of 32 as imdb trains them, for 5 epochs (625 steps; the text CNN,
// whose convolution's Gauss-Newton step costs most, 2):
//   - transformer: positional embeddings, one attention layer (2 heads of size 8, masked
//     padding, projected back to 32), LayerNorm, a one-hidden-layer FNN with a residual and
//     LayerNorm, the maximum over the sequence of its sum with the embeddings, read-out (imdb's
//     transformer);
//   - text-cnn: a 1-D convolution of kernel 5 and 32 channels over the sequence (no padding, as
//     imdb's), ReLU, the maximum over the sequence, read-out (imdb's CNN, one layer);
//   - bag-of-embeddings: the maximum of the embeddings over the sequence, read-out (imdb's
//     bag-of-words).
var Models = []Model{
	{Name: "relu-mlp", Example: "layers.DenseWithBias", Task: Digits, Batch: 128, Epochs: 10, Fn: reluMLP},
	{Name: "tanh-mlp", Example: "layers.DenseWithBias", Task: Digits, Batch: 128, Epochs: 10, Fn: tanhMLP},
	{Name: "cnn", Example: "layers.Convolution", Task: Digits, Batch: 128, Epochs: 5, Fn: CNN},
	{Name: "resnet-cnn", Example: "layers.Convolution, norm.LayerNorm", Task: Digits, Batch: 128, Epochs: 5, Fn: resNetCNN},
	{Name: "linear", Example: "mnist LinearModelGraph", Task: Digits, Batch: 600, Epochs: 20, Fn: linear},
	{Name: "fnn", Example: "cifar C10PlainModelGraph (fnn.New)", Task: Digits, Batch: 64, Epochs: 10, Fn: plainFNN,
		Params: map[string]any{fnn.ParamNumHiddenLayers: 8, fnn.ParamNumHiddenNodes: 128, fnn.ParamResidual: true,
			activation.ParamActivation: "swish", layers.ParamNormalization: "none"}},
	{Name: "transformer", Example: "imdb TransformerModelGraph", Task: Words, Batch: 32, Epochs: 5, Fn: transformer,
		Params: readOut},
	{Name: "text-cnn", Example: "imdb Conv1DModelGraph", Task: Words, Batch: 32, Epochs: 2, Fn: textCNN,
		Params: readOut},
	{Name: "bag-of-embeddings", Example: "imdb BagOfWordsModelGraph", Task: Words, Batch: 32, Epochs: 5,
		Fn: bagOfEmbeddings, Params: readOut},
}

// KANModels are GoMLX's Kolmogorov-Arnold networks (kan.New) at the configuration of its cifar
// example's KAN model (cifar/demo: 4 hidden layers of 64, residual connections, the mean over
// the inputs, 10 control points, swish, B-spline degree 2 with an L1 term of 1e-5 on its
// magnitudes, batches of 64), on the digits with the pixels scaled to [−1, 1] as that example
// scales its images (DigitsUnitRange), for 5 epochs of 22 steps:
//   - kan-bspline: B-spline functions (kan.New's default);
//   - kan-rational: GR-KAN's rational functions (kan.ParamRational);
//   - kan-piecewise-linear: piecewise-linear functions with trainable split points
//     (kan.ParamPiecewiseLinear);
//   - kan-rational-standardised: kan-rational on the standardised pixels of Digits, as the
//     other digits models take them: a pixel that few digits reach lies many standard
//     deviations from its mean, and the rational functions raise it to powers up to 5.
//
// They are not among Models, whose sweep chooses the defaults: Sweep trains them when named
// (SelectModels).
var KANModels = []Model{
	{Name: "kan-bspline", Example: "cifar C10PlainModelGraph (kan.New)", Task: DigitsUnitRange, Batch: 64, Epochs: 5,
		Fn: kanModel, Params: kanParams(nil)},
	{Name: "kan-rational", Example: "cifar C10PlainModelGraph (kan.New, GR-KAN)", Task: DigitsUnitRange, Batch: 64,
		Epochs: 5, Fn: kanModel, Params: kanParams(map[string]any{kan.ParamRational: true})},
	{Name: "kan-piecewise-linear", Example: "cifar C10PlainModelGraph (kan.New, PWL-KAN)", Task: DigitsUnitRange,
		Batch: 64, Epochs: 5, Fn: kanModel, Params: kanParams(map[string]any{kan.ParamPiecewiseLinear: true})},
	{Name: "kan-rational-standardised", Example: "cifar C10PlainModelGraph (kan.New, GR-KAN)", Task: Digits,
		Batch: 64, Epochs: 5, Fn: kanModel, Params: kanParams(map[string]any{kan.ParamRational: true})},
}

// kanParams returns the hyper-parameters of GoMLX's cifar KAN example with variant's added.
func kanParams(variant map[string]any) map[string]any {
	p := map[string]any{kan.ParamNumHiddenLayers: 4, kan.ParamNumHiddenNodes: 64, kan.ParamResidual: true,
		kan.ParamMean: true, kan.ParamNumControlPoints: 10, kan.ParamBSplineDegree: 2,
		kan.ParamBSplineMagnitudeL1: 1e-5, activation.ParamActivation: "swish", layers.ParamNormalization: "none"}
	maps.Copy(p, variant)
	return p
}

// kanModel is GoMLX's cifar KAN model on the digits: kan.New configured by the scope's
// hyper-parameters (KANModels).
func kanModel(scope *model.Scope, x *Node) *Node {
	return kan.New(scope, x, digits.Classes).Done()
}

// readOut is the configuration of fnn.New with which GoMLX's imdb example reads out its models.
var readOut = map[string]any{fnn.ParamNumHiddenLayers: 2, fnn.ParamNumHiddenNodes: 32, fnn.ParamResidual: true,
	layers.ParamNormalization: "layer"}

// embeddingSize is the dimension of the word models' character embeddings (imdb's default).
const embeddingSize = 32

func reluMLP(scope *model.Scope, x *Node) *Node {
	h := activation.Relu(layers.DenseWithBias(scope.In("hidden"), x, 64))
	return layers.DenseWithBias(scope.In("logits"), h, digits.Classes)
}

func tanhMLP(scope *model.Scope, x *Node) *Node {
	h := Tanh(layers.DenseWithBias(scope.In("hidden"), x, 32))
	return layers.DenseWithBias(scope.In("logits"), h, digits.Classes)
}

// CNN is the zoo's convolutional classifier of the digits.
func CNN(scope *model.Scope, x *Node) *Node {
	h := Reshape(x, x.Shape().Dim(0), 8, 8, 1)
	for k := range 2 {
		h = layers.Convolution(scope.In("conv%d", k+1), h).
			Channels(16).KernelSize(3).PadSame().Done()
		h = activation.Relu(h)
	}
	return layers.DenseWithBias(scope.In("logits"), Reshape(h, h.Shape().Dim(0), -1), digits.Classes)
}

func resNetCNN(scope *model.Scope, x *Node) *Node {
	block := func(scope *model.Scope, h *Node) *Node {
		h = layers.Convolution(scope, h).Channels(16).KernelSize(3).PadSame().Done()
		return activation.Gelu(norm.LayerNorm(scope, h, -1).Done())
	}
	h := block(scope.In("stem"), Reshape(x, x.Shape().Dim(0), 8, 8, 1))
	h = MaxPool(h).Window(2).Done()
	h = Add(h, block(scope.In("residual"), h))
	return layers.DenseWithBias(scope.In("logits"), ReduceMean(h, 1, 2), digits.Classes)
}

func linear(scope *model.Scope, x *Node) *Node {
	return layers.DenseWithBias(scope.In("logits"), x, digits.Classes)
}

func plainFNN(scope *model.Scope, x *Node) *Node {
	return fnn.New(scope.In("fnn"), x, digits.Classes).Done()
}

// embed returns the character embeddings of ids (b×L×embeddingSize, zero at the padding) and
// the mask of the characters (b×L), as imdb's EmbedTokensGraph.
func embed(scope *model.Scope, ids *Node) (embedded, mask *Node) {
	mask = NotEqual(ids, ZerosLike(ids))
	vocabulary := model.GetParamOr(scope, ParamVocabulary, 0)
	embedded = layers.Embedding(scope.In("characters"), ids, dtypes.Float32, vocabulary, embeddingSize)
	return Where(BroadcastToShape(mask, embedded.Shape()), embedded, ZerosLike(embedded)), mask
}

// readOutLogits reads out a pooled b×embeddingSize representation with fnn.New (readOut).
func readOutLogits(scope *model.Scope, pooled *Node) *Node {
	return fnn.New(scope.In("read-out"), pooled, Words.Classes).Done()
}

func transformer(scope *model.Scope, ids *Node) *Node {
	e, mask := embed(scope, ids)
	positional := scope.VariableWithShape("positional", shapes.Make(e.DType(), 1, e.Shape().Dim(1), embeddingSize)).
		NodeValue(e.Graph())
	h := Add(e, positional)
	h = attention.MultiHeadAttention(scope.In("attention"), h, h, h, 2, 8).WithKeyMask(mask).WithQueryMask(mask).
		WithOutputDim(embeddingSize).Done()
	h = norm.LayerNorm(scope.In("norm1"), h, -1).Done()
	h = Add(h, fnn.New(scope.In("fnn"), h, embeddingSize).NumHiddenLayers(1, embeddingSize).Normalization("none").Done())
	h = norm.LayerNorm(scope.In("norm2"), h, -1).Done()
	return readOutLogits(scope, ReduceMax(Add(e, h), 1))
}

func textCNN(scope *model.Scope, ids *Node) *Node {
	e, _ := embed(scope, ids)
	h := activation.Relu(layers.Convolution(scope.In("conv"), e).KernelSize(5).Channels(embeddingSize).Done())
	return readOutLogits(scope, ReduceMax(h, 1))
}

func bagOfEmbeddings(scope *model.Scope, ids *Node) *Node {
	e, _ := embed(scope, ids)
	return readOutLogits(scope, ReduceMax(e, 1))
}

// ModelByName returns the zoo's model called name, one of Models or KANModels.
func ModelByName(name string) (Model, error) {
	all := slices.Concat(Models, KANModels)
	for _, m := range all {
		if m.Name == name {
			return m, nil
		}
	}
	names := make([]string, len(all))
	for k, m := range all {
		names[k] = m.Name
	}
	return Model{}, fmt.Errorf("zoo: unknown model %q (want one of %v)", name, names)
}
