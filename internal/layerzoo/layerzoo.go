// Package layerzoo is a zoo of small GoMLX classifiers, one for each layer a classifier commonly
// uses, with the host-side helpers that check derivatives on them: central differences of the
// logits at the variables' values. It is the test bed of package jvp's forward mode (every layer's
// J v and adjoint) and of fgn's steps on it.
package layerzoo

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/layers"
	"github.com/gomlx/gomlx/ml/layers/activation"
	"github.com/gomlx/gomlx/ml/layers/attention"
	"github.com/gomlx/gomlx/ml/layers/kan"
	layernorm "github.com/gomlx/gomlx/ml/layers/norm"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/nn"

	"github.com/fgn-paper/fgn/internal/graphrun"
	"github.com/fgn-paper/fgn/internal/ref"
)

// Case is a small classifier built from GoMLX's layers: Build returns the logits (b×Classes) of
// a batch x of the given shape.
type Case struct {
	Name  string
	Input []int // batch shape; int32 token ids when Vocab > 0
	Vocab int
	Op    NodeType // the op the case is about, which the graph must contain
	Build func(scope *model.Scope, x *Node) *Node
}

// Classes is the number of classes of every case.
const Classes = 3

// Head is the DenseWithBias classifier head on the flattened features.
func Head(scope *model.Scope, x *Node) *Node {
	return layers.DenseWithBias(scope.In("head"), Reshape(x, x.Shape().Dim(0), -1), Classes)
}

// denseByHand is the dense layer built from MatMul and Add: GoMLX's decomposed Dense.
func denseByHand(scope *model.Scope, x *Node, out int) *Node {
	scope = scope.In("hand")
	w := scope.VariableWithShape("weights", shapes.Make(x.DType(), x.Shape().Dim(-1), out)).NodeValue(x.Graph())
	b := scope.VariableWithShape("biases", shapes.Make(x.DType(), out)).NodeValue(x.Graph())
	return Add(MatMul(x, w), ExpandAxes(b, 0))
}

func act(fn func(*Node) *Node) func(scope *model.Scope, x *Node) *Node {
	return func(scope *model.Scope, x *Node) *Node {
		return Head(scope, fn(layers.DenseWithBias(scope.In("hidden"), x, 6)))
	}
}

func conv(edit func(*layers.ConvBuilder) *layers.ConvBuilder) func(scope *model.Scope, x *Node) *Node {
	return func(scope *model.Scope, x *Node) *Node {
		return Head(scope, activation.Relu(edit(layers.Convolution(scope.In("conv"), x).Filters(4).KernelSize(3)).Done()))
	}
}

// Cases lists every layer a GoMLX classifier commonly uses, each in a small model. On the pure-Go
// backend layers.Dense builds a fused Dense and the activations fused activations; the "by hand"
// cases are the decomposed graphs GoMLX builds when it does not fuse.
var Cases = []Case{
	{"Dense fused", []int{6, 5}, 0, NodeTypeFusedDense, func(scope *model.Scope, x *Node) *Node {
		return Head(scope, layers.Dense(scope.In("hidden"), x, false, 6))
	}},
	{"Dense by hand", []int{6, 5}, 0, NodeTypeDotGeneral, func(scope *model.Scope, x *Node) *Node {
		return Head(scope, Tanh(denseByHand(scope, x, 6)))
	}},
	{"nn.Dense with fused ReLU", []int{6, 5}, 0, NodeTypeFusedDense, func(scope *model.Scope, x *Node) *Node {
		w := scope.VariableWithShape("w", shapes.Make(dtypes.Float64, 5, 6)).NodeValue(x.Graph())
		b := scope.VariableWithShape("b", shapes.Make(dtypes.Float64, 6)).NodeValue(x.Graph())
		return Head(scope, nn.Dense(x, w, b, compute.DenseLayoutInputOutputs, activation.TypeRelu))
	}},
	{"ReLU fused", []int{6, 5}, 0, NodeTypeFusedActivation, act(activation.Relu)},
	{"ReLU by hand", []int{6, 5}, 0, NodeTypeMax, act(func(x *Node) *Node { return Max(x, ZerosLike(x)) })},
	{"leaky ReLU fused", []int{6, 5}, 0, NodeTypeFusedActivation, act(activation.LeakyRelu)},
	{"leaky ReLU by hand", []int{6, 5}, 0, NodeTypeWhere, act(func(x *Node) *Node {
		return Where(GreaterThan(x, ZerosLike(x)), x, MulScalar(x, 0.01))
	})},
	{"GELU fused", []int{6, 5}, 0, NodeTypeFusedActivation, act(activation.Gelu)},
	{"GELU by hand", []int{6, 5}, 0, NodeTypeErf, act(func(x *Node) *Node {
		return Mul(MulScalar(x, 0.5), OnePlus(Erf(MulScalar(x, 1/math.Sqrt2))))
	})},
	{"tanh", []int{6, 5}, 0, NodeTypeFusedActivation, act(func(x *Node) *Node { return activation.Apply(activation.TypeTanh, x) })},
	{"sigmoid fused", []int{6, 5}, 0, NodeTypeFusedActivation, act(func(x *Node) *Node { return activation.Apply(activation.TypeSigmoid, x) })},
	{"sigmoid by hand", []int{6, 5}, 0, NodeTypeLogistic, act(Logistic)},
	{"swish fused", []int{6, 5}, 0, NodeTypeFusedActivation, act(activation.Swish)},
	{"swish by hand", []int{6, 5}, 0, NodeTypeLogistic, act(func(x *Node) *Node { return Mul(x, Logistic(x)) })},
	{"residual", []int{6, 5}, 0, NodeTypeAdd, func(scope *model.Scope, x *Node) *Node {
		h := layers.DenseWithBias(scope.In("in"), x, 6)
		r := layers.DenseWithBias(scope.In("res"), activation.Relu(h), 6)
		return Head(scope, Add(h, r))
	}},
	{"dropout (inference)", []int{6, 5}, 0, NodeTypeFusedActivation, func(scope *model.Scope, x *Node) *Node {
		return Head(scope, layers.DropoutStatic(scope, activation.Relu(layers.DenseWithBias(scope.In("in"), x, 6)), 0.3))
	}},
	{"LayerNorm", []int{6, 5}, 0, NodeTypeFusedLayerNorm, func(scope *model.Scope, x *Node) *Node {
		return Head(scope, layernorm.LayerNorm(scope.In("ln"), layers.DenseWithBias(scope.In("in"), x, 6), -1).Done())
	}},
	// BatchNorm normalises by its moving averages: in an inference graph, and with frozen
	// averages in a training graph (else by the batch's statistics, under StopGradient).
	{"BatchNorm (inference)", []int{6, 5}, 0, NodeTypeDiv, func(scope *model.Scope, x *Node) *Node {
		return Head(scope, layernorm.BatchNorm(scope.In("bn"), layers.DenseWithBias(scope.In("in"), x, 6), -1).
			FrozenAverages(true).UseBackendInference(false).Done())
	}},
	{"Embedding", []int{6, 4}, 7, NodeTypeGather, func(scope *model.Scope, x *Node) *Node {
		e := layers.Embedding(scope.In("emb"), x, dtypes.Float64, 7, 3)
		return Head(scope, Tanh(e))
	}},
	{"Conv2D same", []int{6, 5, 5, 2}, 0, NodeTypeConvGeneral, conv(func(c *layers.ConvBuilder) *layers.ConvBuilder { return c.PadSame() })},
	{"Conv2D strides", []int{6, 6, 6, 2}, 0, NodeTypeConvGeneral, conv(func(c *layers.ConvBuilder) *layers.ConvBuilder { return c.Strides(2).PadSame() })},
	{"Conv2D dilation", []int{6, 7, 7, 2}, 0, NodeTypeConvGeneral, conv(func(c *layers.ConvBuilder) *layers.ConvBuilder { return c.Dilations(2).NoPadding() })},
	// layers.Convolution's ChannelGroupCount makes a kernel with all the input channels (GoMLX
	// v0.28.16), which ConvGeneral rejects: the grouped convolution is built with graph.Convolve.
	{"Conv2D groups", []int{6, 5, 5, 4}, 0, NodeTypeConvGeneral, func(scope *model.Scope, x *Node) *Node {
		k := scope.VariableWithShape("kernel", shapes.Make(dtypes.Float64, 3, 3, 2, 4)).NodeValue(x.Graph())
		return Head(scope, Tanh(Convolve(x, k).ChannelGroupCount(2).PadSame().Done()))
	}},
	{"Conv1D", []int{6, 8, 2}, 0, NodeTypeConvGeneral, conv(func(c *layers.ConvBuilder) *layers.ConvBuilder { return c.Strides(2) })},
	{"max pooling", []int{6, 6, 6, 2}, 0, NodeTypeReduceWindow, func(scope *model.Scope, x *Node) *Node {
		c := layers.Convolution(scope.In("conv"), x).Filters(3).KernelSize(3).PadSame().Done()
		return Head(scope, MaxPool(c).Window(2).Done())
	}},
	{"overlapping max pooling", []int{6, 7, 7, 2}, 0, NodeTypeReduceWindow, func(scope *model.Scope, x *Node) *Node {
		c := layers.Convolution(scope.In("conv"), x).Filters(3).KernelSize(3).PadSame().Done()
		return Head(scope, MaxPool(activation.Relu(c)).Window(3).Strides(2).PadSame().Done())
	}},
	{"mean pooling", []int{6, 6, 6, 2}, 0, NodeTypeReduceWindow, func(scope *model.Scope, x *Node) *Node {
		c := layers.Convolution(scope.In("conv"), x).Filters(3).KernelSize(3).PadSame().Done()
		return Head(scope, MeanPool(Tanh(c)).Window(2).Done())
	}},
	{"multi-head attention, masked", []int{6, 5, 4}, 0, NodeTypeFusedScaledDotProductAttention, func(scope *model.Scope, x *Node) *Node {
		mask := GreaterThan(ReduceSum(x, -1), ScalarZero(x.Graph(), x.DType())) // b×L
		mask = LogicalOr(mask, Equal(Iota(x.Graph(), shapes.Make(dtypes.Int32, x.Shape().Dim(0), x.Shape().Dim(1)), 1),
			ScalarZero(x.Graph(), dtypes.Int32))) // every query attends to at least one key
		h := attention.MultiHeadAttention(scope.In("attention"), x, x, x, 2, 3).WithKeyMask(mask).WithQueryMask(mask).
			WithOutputDim(4).Done()
		return Head(scope, ReduceMean(h, 1))
	}},
	// A bag of embeddings max-pooled over the sequence: 8 tokens from a vocabulary of 3 repeat,
	// and a repeated token's rows tie in the max.
	{"Embedding max over a sequence, ties", []int{6, 8}, 3, NodeTypeReduceMax, func(scope *model.Scope, x *Node) *Node {
		e := layers.Embedding(scope.In("emb"), x, dtypes.Float64, 3, 4)
		return Head(scope, ReduceMax(e, 1))
	}},
	// The same max read out through a layer normalisation, as GoMLX's imdb models read out: the
	// VJP differentiates a clone of the fused LayerNorm downstream of the max.
	{"Embedding max over a sequence, ties, then LayerNorm", []int{6, 8}, 3, NodeTypeFusedLayerNorm, func(scope *model.Scope, x *Node) *Node {
		e := layers.Embedding(scope.In("emb"), x, dtypes.Float64, 3, 4)
		return Head(scope, layernorm.LayerNorm(scope.In("norm"), ReduceMax(e, 1), -1).Done())
	}},
	// GoMLX's KAN layers (kan.New), with one hidden layer: B-spline bases selected per interval
	// (Where), GR-KAN's rational functions with the safe denominator 1 + |Q| (Abs), and the
	// piecewise-linear variant's clamped segments (Min).
	{"KAN b-spline", []int{6, 5}, 0, NodeTypeWhere, func(scope *model.Scope, x *Node) *Node {
		return Head(scope, kan.New(scope.In("kan"), x, 4).NumHiddenLayers(1, 3).Done())
	}},
	{"KAN rational", []int{6, 5}, 0, NodeTypeAbs, func(scope *model.Scope, x *Node) *Node {
		scope.SetParam(kan.ParamRational, true)
		return Head(scope, kan.New(scope.In("kan"), x, 4).NumHiddenLayers(1, 3).Done())
	}},
	{"KAN piecewise-linear", []int{6, 5}, 0, NodeTypeMin, func(scope *model.Scope, x *Node) *Node {
		scope.SetParam(kan.ParamPiecewiseLinear, true)
		return Head(scope, kan.New(scope.In("kan"), x, 4).NumHiddenLayers(1, 3).Done())
	}},
}

// Model is a case's variables (float64, random) and batch, on a backend.
type Model struct {
	Case    Case
	Store   *model.Store
	Vars    []*model.Variable // trainable, sorted by path as the optimizers sort them
	X       *tensors.Tensor
	Labels  []int32
	Rng     *rand.Rand // seeded by New, for the caller's random vectors
	backend compute.Backend
	// Training marks the graphs as training graphs (a step's: the variables are inputs).
	Training bool
}

// New returns the model of tc: its batch and the values of its trainable variables drawn from
// a generator seeded with seed.
func New(t testing.TB, backend compute.Backend, tc Case, seed uint64) *Model {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 3))
	store := model.NewStore()
	size := 1
	for _, d := range tc.Input {
		size *= d
	}
	var x *tensors.Tensor
	if tc.Vocab > 0 {
		ids := make([]int32, size)
		for i := range ids {
			ids[i] = int32(rng.IntN(tc.Vocab))
		}
		x = tensors.FromFlatDataAndDimensions(ids, tc.Input...)
	} else {
		x = tensors.FromFlatDataAndDimensions(ref.RandVec(rng, size), tc.Input...)
	}
	m := &Model{Case: tc, Store: store, X: x, Labels: ref.RandLabels(rng, tc.Input[0], Classes), Rng: rng, backend: backend}
	m.Logits(t) // creates the variables
	for v := range store.RootScope().IterVariables() {
		if v.Trainable {
			m.Vars = append(m.Vars, v)
		}
	}
	slices.SortFunc(m.Vars, func(a, b *model.Variable) int { return strings.Compare(a.Path(), b.Path()) })
	// Biases start at zero: give every parameter a random value, so no ReLU sits at a kink, small
	// enough that no example's softmax saturates.
	for _, v := range m.Vars {
		w := ref.RandVec(rng, v.Shape().Size())
		for k := range w {
			w[k] *= 0.5
		}
		if err := v.SetValue(tensors.FromFlatDataAndDimensions(w, v.Shape().Dimensions...)); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

// Logits evaluates the model's logits at the variables' current values (flat, row-major), in an
// inference graph unless m.Training.
func (m *Model) Logits(t testing.TB) []float64 {
	t.Helper()
	out, err := model.MustNewExec(m.backend, m.Store, func(scope *model.Scope, x *Node) *Node {
		scope.Store().SetTraining(x.Graph(), m.Training)
		return m.Case.Build(scope, x)
	}).Call(m.X)
	if err != nil {
		t.Fatalf("%s logits: %+v", m.Case.Name, err)
	}
	return floats(t, out[0])
}

// Params returns the current parameter values, flattened in order.
func (m *Model) Params(t testing.TB) []float64 {
	t.Helper()
	var out []float64
	for _, v := range m.Vars {
		out = append(out, floats(t, v.MustValue())...)
	}
	return out
}

// SetParams sets the parameters from a flat vector.
func (m *Model) SetParams(t testing.TB, w []float64) {
	t.Helper()
	for _, v := range m.Vars {
		n := v.Shape().Size()
		if err := v.SetValue(tensors.FromFlatDataAndDimensions(slices.Clone(w[:n]), v.Shape().Dimensions...)); err != nil {
			t.Fatal(err)
		}
		w = w[n:]
	}
}

// FiniteDifference returns (z(w + εv) − z(w − εv))/2ε, evaluated by running the model.
func (m *Model) FiniteDifference(t testing.TB, v []float64, eps float64) []float64 {
	t.Helper()
	w := m.Params(t)
	defer m.SetParams(t, w)
	shifted := func(sign float64) []float64 {
		ws := slices.Clone(w)
		for k := range ws {
			ws[k] += sign * eps * v[k]
		}
		m.SetParams(t, ws)
		return m.Logits(t)
	}
	plus, minus := shifted(1), shifted(-1)
	out := make([]float64, len(plus))
	for k := range out {
		out[k] = (plus[k] - minus[k]) / (2 * eps)
	}
	return out
}

// Split returns a flat parameter-space vector as one tensor per parameter.
func (m *Model) Split(v []float64) []any {
	var out []any
	for _, p := range m.Vars {
		n := p.Shape().Size()
		out = append(out, tensors.FromFlatDataAndDimensions(slices.Clone(v[:n]), p.Shape().Dimensions...))
		v = v[n:]
	}
	return out
}

// floats returns a tensor's values as a flat float64 slice.
func floats(t testing.TB, x *tensors.Tensor) []float64 {
	t.Helper()
	out, err := graphrun.Floats(x)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
