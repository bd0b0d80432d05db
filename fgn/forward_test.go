package fgn

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
	layernorm "github.com/gomlx/gomlx/ml/layers/norm"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/nn"

	"github.com/fgn-paper/fgn/internal/ref"
)

// zooCase is a small classifier built from GoMLX's layers: build returns the logits (b×C) of a
// batch x of the given shape.
type zooCase struct {
	name  string
	input []int // batch shape; int32 token ids when vocab > 0
	vocab int
	op    NodeType // the op the case is about, which the graph must contain
	build func(scope *model.Scope, x *Node) *Node
}

const zooClasses = 3

// head is the DenseWithBias classifier head on the flattened features.
func head(scope *model.Scope, x *Node) *Node {
	return layers.DenseWithBias(scope.In("head"), Reshape(x, x.Shape().Dim(0), -1), zooClasses)
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
		return head(scope, fn(layers.DenseWithBias(scope.In("hidden"), x, 6)))
	}
}

func conv(edit func(*layers.ConvBuilder) *layers.ConvBuilder) func(scope *model.Scope, x *Node) *Node {
	return func(scope *model.Scope, x *Node) *Node {
		return head(scope, activation.Relu(edit(layers.Convolution(scope.In("conv"), x).Filters(4).KernelSize(3)).Done()))
	}
}

// zoo lists every layer a GoMLX classifier commonly uses, each in a small model. On the pure-Go
// backend layers.Dense builds a fused Dense and the activations fused activations; the "by hand"
// cases are the decomposed graphs GoMLX builds when it does not fuse.
var zoo = []zooCase{
	{"Dense fused", []int{6, 5}, 0, NodeTypeFusedDense, func(scope *model.Scope, x *Node) *Node {
		return head(scope, layers.Dense(scope.In("hidden"), x, false, 6))
	}},
	{"Dense by hand", []int{6, 5}, 0, NodeTypeDotGeneral, func(scope *model.Scope, x *Node) *Node {
		return head(scope, Tanh(denseByHand(scope, x, 6)))
	}},
	{"nn.Dense with fused ReLU", []int{6, 5}, 0, NodeTypeFusedDense, func(scope *model.Scope, x *Node) *Node {
		w := scope.VariableWithShape("w", shapes.Make(dtypes.Float64, 5, 6)).NodeValue(x.Graph())
		b := scope.VariableWithShape("b", shapes.Make(dtypes.Float64, 6)).NodeValue(x.Graph())
		return head(scope, nn.Dense(x, w, b, compute.DenseLayoutInputOutputs, activation.TypeRelu))
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
		return head(scope, Add(h, r))
	}},
	{"dropout (inference)", []int{6, 5}, 0, NodeTypeFusedActivation, func(scope *model.Scope, x *Node) *Node {
		return head(scope, layers.DropoutStatic(scope, activation.Relu(layers.DenseWithBias(scope.In("in"), x, 6)), 0.3))
	}},
	{"LayerNorm", []int{6, 5}, 0, NodeTypeFusedLayerNorm, func(scope *model.Scope, x *Node) *Node {
		return head(scope, layernorm.LayerNorm(scope.In("ln"), layers.DenseWithBias(scope.In("in"), x, 6), -1).Done())
	}},
	// BatchNorm normalises by its moving averages: in an inference graph, and with frozen
	// averages in a training graph (else by the batch's statistics, under StopGradient).
	{"BatchNorm (inference)", []int{6, 5}, 0, NodeTypeDiv, func(scope *model.Scope, x *Node) *Node {
		return head(scope, layernorm.BatchNorm(scope.In("bn"), layers.DenseWithBias(scope.In("in"), x, 6), -1).
			FrozenAverages(true).UseBackendInference(false).Done())
	}},
	{"Embedding", []int{6, 4}, 7, NodeTypeGather, func(scope *model.Scope, x *Node) *Node {
		e := layers.Embedding(scope.In("emb"), x, dtypes.Float64, 7, 3)
		return head(scope, Tanh(e))
	}},
	{"Conv2D same", []int{6, 5, 5, 2}, 0, NodeTypeConvGeneral, conv(func(c *layers.ConvBuilder) *layers.ConvBuilder { return c.PadSame() })},
	{"Conv2D strides", []int{6, 6, 6, 2}, 0, NodeTypeConvGeneral, conv(func(c *layers.ConvBuilder) *layers.ConvBuilder { return c.Strides(2).PadSame() })},
	{"Conv2D dilation", []int{6, 7, 7, 2}, 0, NodeTypeConvGeneral, conv(func(c *layers.ConvBuilder) *layers.ConvBuilder { return c.Dilations(2).NoPadding() })},
	// layers.Convolution's ChannelGroupCount makes a kernel with all the input channels (GoMLX
	// v0.28.16), which ConvGeneral rejects: the grouped convolution is built with graph.Convolve.
	{"Conv2D groups", []int{6, 5, 5, 4}, 0, NodeTypeConvGeneral, func(scope *model.Scope, x *Node) *Node {
		k := scope.VariableWithShape("kernel", shapes.Make(dtypes.Float64, 3, 3, 2, 4)).NodeValue(x.Graph())
		return head(scope, Tanh(Convolve(x, k).ChannelGroupCount(2).PadSame().Done()))
	}},
	{"Conv1D", []int{6, 8, 2}, 0, NodeTypeConvGeneral, conv(func(c *layers.ConvBuilder) *layers.ConvBuilder { return c.Strides(2) })},
	{"max pooling", []int{6, 6, 6, 2}, 0, NodeTypeReduceWindow, func(scope *model.Scope, x *Node) *Node {
		c := layers.Convolution(scope.In("conv"), x).Filters(3).KernelSize(3).PadSame().Done()
		return head(scope, MaxPool(c).Window(2).Done())
	}},
	{"overlapping max pooling", []int{6, 7, 7, 2}, 0, NodeTypeReduceWindow, func(scope *model.Scope, x *Node) *Node {
		c := layers.Convolution(scope.In("conv"), x).Filters(3).KernelSize(3).PadSame().Done()
		return head(scope, MaxPool(activation.Relu(c)).Window(3).Strides(2).PadSame().Done())
	}},
	{"mean pooling", []int{6, 6, 6, 2}, 0, NodeTypeReduceWindow, func(scope *model.Scope, x *Node) *Node {
		c := layers.Convolution(scope.In("conv"), x).Filters(3).KernelSize(3).PadSame().Done()
		return head(scope, MeanPool(Tanh(c)).Window(2).Done())
	}},
	{"multi-head attention, masked", []int{6, 5, 4}, 0, NodeTypeFusedScaledDotProductAttention, func(scope *model.Scope, x *Node) *Node {
		mask := GreaterThan(ReduceSum(x, -1), ScalarZero(x.Graph(), x.DType())) // b×L
		mask = LogicalOr(mask, Equal(Iota(x.Graph(), shapes.Make(dtypes.Int32, x.Shape().Dim(0), x.Shape().Dim(1)), 1),
			ScalarZero(x.Graph(), dtypes.Int32))) // every query attends to at least one key
		h := attention.MultiHeadAttention(scope.In("attention"), x, x, x, 2, 3).WithKeyMask(mask).WithQueryMask(mask).
			WithOutputDim(4).Done()
		return head(scope, ReduceMean(h, 1))
	}},
}

// zooModel is a zoo case's variables (float64, random) and batch.
type zooModel struct {
	store  *model.Store
	vars   []*model.Variable // trainable, sorted by path as the optimizer does
	x      *tensors.Tensor
	labels []int32
	rng    *rand.Rand
	// training marks the graphs as training graphs (the step's: the variables are inputs).
	training bool
}

func newZooModel(t *testing.T, tc zooCase, seed uint64) *zooModel {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 3))
	store := model.NewStore()
	size := 1
	for _, d := range tc.input {
		size *= d
	}
	var x *tensors.Tensor
	if tc.vocab > 0 {
		ids := make([]int32, size)
		for i := range ids {
			ids[i] = int32(rng.IntN(tc.vocab))
		}
		x = tensors.FromFlatDataAndDimensions(ids, tc.input...)
	} else {
		x = tensors.FromFlatDataAndDimensions(randVec(rng, size), tc.input...)
	}
	m := &zooModel{store: store, x: x, labels: ref.RandLabels(rng, tc.input[0], zooClasses), rng: rng}
	m.logits(t, tc) // creates the variables
	for v := range store.RootScope().IterVariables() {
		if v.Trainable {
			m.vars = append(m.vars, v)
		}
	}
	slices.SortFunc(m.vars, func(a, b *model.Variable) int { return strings.Compare(a.Path(), b.Path()) })
	// Biases start at zero: give every parameter a random value, so no ReLU sits at a kink, small
	// enough that no example's softmax saturates.
	for _, v := range m.vars {
		w := randVec(rng, v.Shape().Size())
		for k := range w {
			w[k] *= 0.5
		}
		if err := v.SetValue(tensors.FromFlatDataAndDimensions(w, v.Shape().Dimensions...)); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

func randVec(rng *rand.Rand, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = rng.NormFloat64()
	}
	return out
}

// logits evaluates the model's logits at the variables' current values, in an inference graph
// unless m.training.
func (m *zooModel) logits(t *testing.T, tc zooCase) []float64 {
	t.Helper()
	out, err := model.MustNewExec(testBackend, m.store, func(scope *model.Scope, x *Node) *Node {
		scope.Store().SetTraining(x.Graph(), m.training)
		return tc.build(scope, x)
	}).Call(m.x)
	if err != nil {
		t.Fatalf("%s logits: %+v", tc.name, err)
	}
	return flat64(out[0])
}

// params returns the current parameter values, flattened in order.
func (m *zooModel) params() []float64 {
	var out []float64
	for _, v := range m.vars {
		out = append(out, flat64(v.MustValue())...)
	}
	return out
}

// setParams sets the parameters from a flat vector.
func (m *zooModel) setParams(t *testing.T, w []float64) {
	t.Helper()
	for _, v := range m.vars {
		n := v.Shape().Size()
		if err := v.SetValue(tensors.FromFlatDataAndDimensions(slices.Clone(w[:n]), v.Shape().Dimensions...)); err != nil {
			t.Fatal(err)
		}
		w = w[n:]
	}
}

// finiteDifference returns (z(w + εv) − z(w − εv))/2ε, evaluated by running the model.
func (m *zooModel) finiteDifference(t *testing.T, tc zooCase, v []float64, eps float64) []float64 {
	t.Helper()
	w := m.params()
	defer m.setParams(t, w)
	shifted := func(sign float64) []float64 {
		ws := slices.Clone(w)
		for k := range ws {
			ws[k] += sign * eps * v[k]
		}
		m.setParams(t, ws)
		return m.logits(t, tc)
	}
	plus, minus := shifted(1), shifted(-1)
	out := make([]float64, len(plus))
	for k := range out {
		out[k] = (plus[k] - minus[k]) / (2 * eps)
	}
	return out
}

// split returns a flat parameter-space vector as one tensor per parameter.
func (m *zooModel) split(v []float64) []any {
	var out []any
	for _, p := range m.vars {
		n := p.Shape().Size()
		out = append(out, tensors.FromFlatDataAndDimensions(slices.Clone(v[:n]), p.Shape().Dimensions...))
		v = v[n:]
	}
	return out
}

// jvpVJP returns J_z v and J_zᵀu (flat) by Linearize.
func (m *zooModel) jvpVJP(t *testing.T, tc zooCase, v, u []float64) (jv, jtu []float64) {
	t.Helper()
	n := len(m.vars)
	exec := model.MustNewExec(testBackend, m.store, func(scope *model.Scope, in []*Node) []*Node {
		params := make(Vec, n)
		for k, p := range m.vars {
			params[k] = p.NodeValue(in[0].Graph())
		}
		lin := Linearize(tc.build(scope, in[0]), params)
		if !slices.ContainsFunc(lin.(*autodiffLinearization).walk.nodes, func(n *Node) bool { return n.Type() == tc.op }) {
			t.Errorf("%s: the graph has no %s op between the parameters and the logits", tc.name, tc.op)
		}
		return append([]*Node{lin.JVP(Vec(in[1 : 1+n]))}, lin.VJP(in[1+n])...)
	})
	inputs := append([]any{m.x}, m.split(v)...)
	inputs = append(inputs, tensors.FromFlatDataAndDimensions(u, tc.input[0], zooClasses))
	out, err := exec.Call(inputs...)
	if err != nil {
		t.Fatalf("%s: %+v", tc.name, err)
	}
	jv = flat64(out[0])
	for _, o := range out[1:] {
		jtu = append(jtu, flat64(o)...)
	}
	return jv, jtu
}

// TestLinearizeZooLogitsAt checks, on every layer of the zoo, that Linearize's LogitsAt, the
// logits at other parameters that adaptive damping's trial loss takes, equals the model's logits
// evaluated at those parameters.
func TestLinearizeZooLogitsAt(t *testing.T) {
	for i, tc := range zoo {
		t.Run(tc.name, func(t *testing.T) {
			m := newZooModel(t, tc, uint64(300+i))
			w := m.params()
			shifted := slices.Clone(w)
			for k, v := range randVec(m.rng, len(w)) {
				shifted[k] += 0.3 * v
			}
			n := len(m.vars)
			out, err := model.MustNewExec(testBackend, m.store, func(scope *model.Scope, in []*Node) *Node {
				params := make(Vec, n)
				for k, p := range m.vars {
					params[k] = p.NodeValue(in[0].Graph())
				}
				return Linearize(tc.build(scope, in[0]), params).LogitsAt(Vec(in[1:]))
			}).Call(append([]any{m.x}, m.split(shifted)...)...)
			if err != nil {
				t.Fatalf("%s: %+v", tc.name, err)
			}
			m.setParams(t, shifted)
			check(t, "LogitsAt(w') vs the model's logits at w' (relative)", ref.RelErr(flat64(out[0]), m.logits(t, tc)), 1e-12)
		})
	}
}

// TestLinearizeZoo checks J_z v of Linearize, on every layer of the zoo, against central finite
// differences of the model's logits, and the adjoint identity ⟨J_z v, u⟩ = ⟨v, J_zᵀu⟩ with J_zᵀu
// from GoMLX's reverse mode.
func TestLinearizeZoo(t *testing.T) {
	for i, tc := range zoo {
		t.Run(tc.name, func(t *testing.T) {
			m := newZooModel(t, tc, uint64(100+i))
			d := len(m.params())
			v, u := randVec(m.rng, d), randVec(m.rng, tc.input[0]*zooClasses)
			jv, jtu := m.jvpVJP(t, tc, v, u)
			fd := m.finiteDifference(t, tc, v, 1e-5)
			check(t, "J_z v vs central differences (relative)", ref.RelErr(jv, fd), 1e-6)
			lhs, rhs := dot(jv, u), dot(v, jtu)
			check(t, "⟨J_z v, u⟩ vs ⟨v, J_zᵀu⟩ (relative)", math.Abs(lhs-rhs)/math.Max(math.Abs(lhs), math.Abs(rhs)), 1e-10)
		})
	}
}

// TestLinearizeZooStep checks, on every layer of the zoo, that the autodiff products may run in
// CG's While loop (WhileSafe) and that an FGN step with CG run to convergence there (matrix-free,
// autodiff) moves the parameters by α·d, d = −(H_FGN + λI)⁻¹g solved
// densely from the logit Jacobian J_z built column by column by central differences, the
// margin quantities of eqs. 2.1-2.7 computed on the host, g = (1/b) Σ_i p_†,i J_iᵀ and
// H_FGN = (1/b) Σ_i q_i J_iᵀJ_i with J_i = ∇_z s_iᵀ J_z,i (eqs. 2.9, 3.8).
func TestLinearizeZooStep(t *testing.T) {
	const alpha, lambda = 0.5, 0.3
	for i, tc := range zoo {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "dropout (inference)" {
				t.Skip("dropout is random in the step's training graph; TestLinearizeZoo covers it")
			}
			m := newZooModel(t, tc, uint64(200+i))
			m.training = true // BatchNorm then normalises by the batch's statistics, in the reference too
			w := m.params()
			d, b := len(w), tc.input[0]
			z := m.logits(t, tc)
			jz := make([][]float64, d) // jz[k] = ∂z/∂w_k (b·C)
			for k := range d {
				e := make([]float64, d)
				e[k] = 1
				jz[k] = m.finiteDifference(t, tc, e, 1e-5)
			}
			grad := make([]float64, d)
			hess := make([]float64, d*d)
			for i := range b {
				zi := z[i*zooClasses : (i+1)*zooClasses]
				y := int(m.labels[i])
				mx := slices.Max(zi)
				var sum float64
				p := make([]float64, zooClasses)
				for c := range p {
					p[c] = math.Exp(zi[c] - mx)
					sum += p[c]
				}
				for c := range p {
					p[c] /= sum
				}
				pDagger := 1 - p[y]
				a := make([]float64, d) // J_iᵀ = J_z,iᵀ ∇_z s_i
				for k := range d {
					for c := range zooClasses {
						gs := p[c] / pDagger
						if c == y {
							gs = -1
						}
						a[k] += gs * jz[k][i*zooClasses+c]
					}
				}
				q := p[y] * pDagger
				for k := range d {
					grad[k] += pDagger * a[k] / float64(b)
					for l := range d {
						hess[k*d+l] += q * a[k] * a[l] / float64(b)
					}
				}
			}
			neg := make([]float64, d)
			for k := range neg {
				neg[k] = -grad[k]
			}
			want := denseSolve(t, hess, d, lambda, neg)

			opt := FGN().LearningRate(alpha).Damping(lambda).DampingPolicy(ConstantDamping{}).CGMaxIterations(3 * b).CGTolerance(1e-14).Done()
			var inLoop bool
			exec := model.MustNewExec(testBackend, m.store, func(scope *model.Scope, x, labels *Node) *Node {
				scope.Store().SetTraining(x.Graph(), true)
				params := make(Vec, len(m.vars))
				for k, p := range m.vars {
					params[k] = p.NodeValue(x.Graph())
				}
				lin := Linearize(tc.build(scope, x), params)
				inLoop = inWhileLoop(lin)
				return opt.UpdateGraphWithLinearization(scope, lin, labels).Loss
			})
			if _, err := exec.Call(m.x, m.labels); err != nil {
				t.Fatalf("step: %+v", err)
			}
			if !inLoop {
				t.Errorf("the products are not WhileSafe: CG was unrolled instead of running in a While loop")
			}
			moved := sub(m.params(), w)
			for k := range moved {
				moved[k] /= alpha
			}
			check(t, "(w⁺−w)/α vs dense −(H_FGN+λI)⁻¹g (relative)", ref.RelErr(moved, want), 1e-6)
		})
	}
}

// TestLinearizeUnsupportedOp checks that an op without a forward rule whose VJP GoMLX cannot
// differentiate (a product over windows) is a graph-building error naming the op and the layer's
// parameters.
func TestLinearizeUnsupportedOp(t *testing.T) {
	tc := zooCase{"product pooling", []int{6, 6, 6, 2}, 0, NodeTypeReduceWindow, func(scope *model.Scope, x *Node) *Node {
		c := layers.Convolution(scope.In("conv"), x).Filters(3).KernelSize(3).PadSame().Done()
		return head(scope, BackendReduceWindow(Tanh(c), compute.ReduceOpProduct, []int{1, 2, 2, 1}, []int{1, 2, 2, 1}, nil, nil, nil))
	}}
	m := newZooModel(t, tc, 7)
	d := len(m.params())
	_, err := model.MustNewExec(testBackend, m.store, func(scope *model.Scope, x *Node) *Node {
		scope.Store().SetTraining(x.Graph(), true) // the variables are named parameters
		params := make(Vec, len(m.vars))
		for k, p := range m.vars {
			params[k] = p.NodeValue(x.Graph())
		}
		v := make(Vec, len(params))
		for k, p := range params {
			v[k] = OnesLike(p)
		}
		return Linearize(tc.build(scope, x), params).JVP(v)
	}).Call(m.x)
	for _, want := range []string{"cannot differentiate op ReduceWindow", "/conv/", "no forward-mode rule"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("J_z v through %s (d = %d): error %v, want one containing %q", tc.name, d, err, want)
		}
	}
}

// TestTangentRules checks the forward-mode rule of each op type, one small function of a
// parameter w (3×4) at a time, against central differences of the function itself and the
// adjoint identity with GoMLX's reverse mode where GoMLX has one (noVJP marks ops without).
func TestTangentRules(t *testing.T) {
	pos := func(w *Node) *Node { return AddScalar(Square(w), 0.5) } // > 0
	for _, tc := range []struct {
		name  string
		noVJP bool
		f     func(w *Node) *Node
	}{
		{"Exp", false, Exp},
		{"Log", false, func(w *Node) *Node { return Log(pos(w)) }},
		{"Log1p", false, func(w *Node) *Node { return Log1p(pos(w)) }},
		{"Expm1", true, Expm1},
		{"Sqrt", false, func(w *Node) *Node { return Sqrt(pos(w)) }},
		{"Rsqrt", true, func(w *Node) *Node { return Rsqrt(pos(w)) }},
		{"Pow", false, func(w *Node) *Node { return Pow(pos(w), Tanh(w)) }},
		{"Abs", false, Abs},
		{"Sin Cos", false, func(w *Node) *Node { return Mul(Sin(w), Cos(w)) }},
		{"Div", false, func(w *Node) *Node { return Div(Tanh(w), pos(w)) }},
		{"Max Min", false, func(w *Node) *Node { return Add(Max(w, Neg(w)), Min(MulScalar(w, 2), OnesLike(w))) }},
		{"Clamp", true, func(w *Node) *Node { return Clamp(MulScalar(w, -0.5), w, AddScalar(MulScalar(w, 0.3), 0.2)) }},
		{"Sign Floor Round", true, func(w *Node) *Node { return Add(Mul(Sign(w), w), Add(Floor(w), Round(w))) }},
		{"ReduceMax ReduceMin", false, func(w *Node) *Node { return Concatenate([]*Node{ReduceMax(w, 1), ReduceMin(w, 0)}, 0) }},
		{"Concatenate Slice Pad", false, func(w *Node) *Node {
			c := Concatenate([]*Node{w, OnesLike(w), Tanh(w)}, 1)
			return Pad(Slice(c, AxisRange(1, 3), AxisRange(2, 11)), ScalarZero(w.Graph(), w.DType()),
				PadAxis{Start: 1, End: 2}, PadAxis{Start: 0, End: 1})
		}},
		{"Transpose Reverse CumSum", false, func(w *Node) *Node { return CumSum(Reverse(Transpose(w, 0, 1), 0), 1) }},
		{"Where", false, func(w *Node) *Node { return Where(GreaterThan(w, ZerosLike(w)), Exp(w), OnesLike(w)) }},
		{"Softmax (fused)", false, func(w *Node) *Node { return Softmax(w, -1) }},
		{"FusedDense with GELU", true, func(w *Node) *Node {
			return BackendFusedDense(Tanh(w), Transpose(w, 0, 1), ReduceSum(w, 1),
				compute.DenseConfig{Activation: compute.ActivationConfig{Type: compute.ActivationGelu}})
		}},
		{"min pooling", false, func(w *Node) *Node {
			x := Reshape(w, 1, 3, 4, 1)
			return Neg(MaxPool(Neg(x)).Window(2).Done())
		}},
		{"overlapping max and min pooling, padded, with ties", false, func(w *Node) *Node {
			x := Reshape(Max(w, ZerosLike(w)), 1, 3, 4, 1) // ReLU: windows of tied zeros
			mx := MaxPool(x).Window(2).Strides(1).PadSame().Done()
			mn := BackendReduceWindow(x, compute.ReduceOpMin, []int{1, 2, 3, 1}, []int{1, 1, 2, 1}, nil, nil,
				[][2]int{{0, 0}, {1, 0}, {1, 1}, {0, 0}})
			return Concatenate([]*Node{Reshape(mx, -1), Reshape(mn, -1)}, 0)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(5, 9))
			w, v := randVec(rng, 12), randVec(rng, 12)
			fwd := func(w []float64) []float64 {
				return run(t, func(in []*Node) []*Node { return []*Node{tc.f(in[0])} },
					tensors.FromFlatDataAndDimensions(w, 3, 4))[0]
			}
			const eps = 1e-6
			plus, minus := slices.Clone(w), slices.Clone(w)
			for k := range w {
				plus[k] += eps * v[k]
				minus[k] -= eps * v[k]
			}
			fp, fm := fwd(plus), fwd(minus)
			fd := make([]float64, len(fp))
			for k := range fd {
				fd[k] = (fp[k] - fm[k]) / (2 * eps)
			}
			u := randVec(rng, len(fd))
			out := run(t, func(in []*Node) []*Node {
				lin := Linearize(Reshape(tc.f(in[0]), 1, -1), Vec{in[0]})
				if tc.noVJP {
					return []*Node{lin.JVP(Vec{in[1]})}
				}
				return []*Node{lin.JVP(Vec{in[1]}), lin.VJP(in[2])[0]}
			}, tensors.FromFlatDataAndDimensions(w, 3, 4), tensors.FromFlatDataAndDimensions(v, 3, 4),
				tensors.FromFlatDataAndDimensions(u, 1, len(u)))
			check(t, "J v vs central differences (relative)", ref.RelErr(out[0], fd), 1e-6)
			if tc.noVJP {
				return
			}
			lhs, rhs := dot(out[0], u), dot(v, out[1])
			check(t, "⟨J v, u⟩ vs ⟨v, Jᵀu⟩ (relative)", math.Abs(lhs-rhs)/math.Max(math.Abs(lhs), math.Abs(rhs)), 1e-10)
		})
	}
}
