package jvp

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/compute"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/layers"
	"github.com/gomlx/gomlx/ml/model"

	"github.com/fgn-paper/fgn/internal/graphrun"
	"github.com/fgn-paper/fgn/internal/layerzoo"
	"github.com/fgn-paper/fgn/internal/ref"
)

// jvpVJP returns J_z v and J_zᵀu (flat) of the logits z of m's case with respect to its
// trainable variables, by Linearize.
func jvpVJP(t *testing.T, m *layerzoo.Model, v, u []float64) (jv, jtu []float64) {
	t.Helper()
	tc, n := m.Case, len(m.Vars)
	exec := model.MustNewExec(testBackend, m.Store, func(scope *model.Scope, in []*Node) []*Node {
		params := make([]*Node, n)
		for k, p := range m.Vars {
			params[k] = p.NodeValue(in[0].Graph())
		}
		lin := Linearize([]*Node{tc.Build(scope, in[0])}, params)
		if !slices.ContainsFunc(lin.walk.nodes, func(n *Node) bool { return n.Type() == tc.Op }) {
			t.Errorf("%s: the graph has no %s op between the parameters and the logits", tc.Name, tc.Op)
		}
		return append(lin.JVP(in[1:1+n]...), lin.VJP(in[1+n])...)
	})
	inputs := append([]any{m.X}, m.Split(v)...)
	inputs = append(inputs, tensors.FromFlatDataAndDimensions(u, tc.Input[0], layerzoo.Classes))
	out, err := exec.Call(inputs...)
	if err != nil {
		t.Fatalf("%s: %+v", tc.Name, err)
	}
	floats := func(x *tensors.Tensor) []float64 {
		f, err := graphrun.Floats(x)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	jv = floats(out[0])
	for _, o := range out[1:] {
		jtu = append(jtu, floats(o)...)
	}
	return jv, jtu
}

// adjointErr returns |⟨a, u⟩ − ⟨v, b⟩| / max(|⟨a, u⟩|, |⟨v, b⟩|) for a = J v and b = Jᵀu.
func adjointErr(a, u, v, b []float64) float64 {
	lhs, rhs := ref.Dot(a, u), ref.Dot(v, b)
	return math.Abs(lhs-rhs) / math.Max(math.Abs(lhs), math.Abs(rhs))
}

// TestLinearizeZoo checks J_z v of Linearize, on every layer of the zoo, against central finite
// differences of the model's logits, and the adjoint identity ⟨J_z v, u⟩ = ⟨v, J_zᵀu⟩ with J_zᵀu
// from Linearization.VJP.
func TestLinearizeZoo(t *testing.T) {
	for i, tc := range layerzoo.Cases {
		t.Run(tc.Name, func(t *testing.T) {
			m := layerzoo.New(t, testBackend, tc, uint64(100+i))
			d := len(m.Params(t))
			v, u := ref.RandVec(m.Rng, d), ref.RandVec(m.Rng, tc.Input[0]*layerzoo.Classes)
			jv, jtu := jvpVJP(t, m, v, u)
			fd := m.FiniteDifference(t, v, 1e-5)
			ref.Check(t, "J_z v vs central differences (relative)", ref.RelErr(jv, fd), 1e-6)
			ref.Check(t, "⟨J_z v, u⟩ vs ⟨v, J_zᵀu⟩ (relative)", adjointErr(jv, u, v, jtu), 1e-10)
		})
	}
}

// TestLinearizeZooLogitsAt checks, on every layer of the zoo, that Linearization.At, the logits
// at other parameters that an optimizer's trial step takes (fgn's LogitsAt), equals the model's
// logits evaluated at those parameters.
func TestLinearizeZooLogitsAt(t *testing.T) {
	for i, tc := range layerzoo.Cases {
		t.Run(tc.Name, func(t *testing.T) {
			m := layerzoo.New(t, testBackend, tc, uint64(300+i))
			w := m.Params(t)
			shifted := slices.Clone(w)
			for k, v := range ref.RandVec(m.Rng, len(w)) {
				shifted[k] += 0.3 * v
			}
			n := len(m.Vars)
			out, err := model.MustNewExec(testBackend, m.Store, func(scope *model.Scope, in []*Node) *Node {
				params := make([]*Node, n)
				for k, p := range m.Vars {
					params[k] = p.NodeValue(in[0].Graph())
				}
				return Linearize([]*Node{tc.Build(scope, in[0])}, params).At(in[1:]...)[0]
			}).Call(append([]any{m.X}, m.Split(shifted)...)...)
			if err != nil {
				t.Fatalf("%s: %+v", tc.Name, err)
			}
			got, err := graphrun.Floats(out[0])
			if err != nil {
				t.Fatal(err)
			}
			m.SetParams(t, shifted)
			ref.Check(t, "At(w') vs the model's logits at w' (relative)", ref.RelErr(got, m.Logits(t)), 1e-12)
		})
	}
}

// TestReduceMaxTies checks J_z v of a bag-of-embeddings model max-pooled over sequences with
// repeated tokens, whose rows tie in the max, against central differences (exact to rounding:
// the logits are piecewise bilinear in the parameters, and a tie of one token's rows persists
// along any direction) and the adjoint identity with Linearization.VJP. The batch must hold ties:
// crediting every tied entry, as GoMLX's VJP does (see compat.go: compatReduceMaxTies), would
// count a repeated token's tangent once per repetition.
func TestReduceMaxTies(t *testing.T) {
	i := slices.IndexFunc(layerzoo.Cases, func(c layerzoo.Case) bool { return c.Op == NodeTypeReduceMax })
	tc := layerzoo.Cases[i]
	m := layerzoo.New(t, testBackend, tc, 31)
	var table []float64 // the embedding table, vocabulary × width
	for _, v := range m.Vars {
		if strings.Contains(v.Path(), "/emb/") {
			table, _ = graphrun.Floats(v.MustValue())
		}
	}
	width := len(table) / tc.Vocab
	ids := tensors.MustCopyFlatData[int32](m.X)
	seq := tc.Input[1]
	ties := 0
	for ex := range tc.Input[0] {
		for f := range width {
			best, count := math.Inf(-1), 0
			for _, id := range ids[ex*seq : (ex+1)*seq] {
				switch x := table[int(id)*width+f]; {
				case x > best:
					best, count = x, 1
				case x == best:
					count++
				}
			}
			if count > 1 {
				ties++
			}
		}
	}
	if ties == 0 {
		t.Fatalf("no tied maximum in the batch: the test would not test ties")
	}
	t.Logf("%d of %d maxima are tied", ties, tc.Input[0]*width)
	d := len(m.Params(t))
	v, u := ref.RandVec(m.Rng, d), ref.RandVec(m.Rng, tc.Input[0]*layerzoo.Classes)
	jv, jtu := jvpVJP(t, m, v, u)
	ref.Check(t, "J_z v vs central differences (relative)", ref.RelErr(jv, m.FiniteDifference(t, v, 1e-4)), 1e-8)
	ref.Check(t, "⟨J_z v, u⟩ vs ⟨v, J_zᵀu⟩ (relative)", adjointErr(jv, u, v, jtu), 1e-12)
}

// TestLinearizeUnsupportedOp checks that an op without a forward rule whose VJP GoMLX cannot
// differentiate (a product over windows) is a graph-building error naming the op and the layer's
// parameters.
func TestLinearizeUnsupportedOp(t *testing.T) {
	tc := layerzoo.Case{Name: "product pooling", Input: []int{6, 6, 6, 2}, Op: NodeTypeReduceWindow, Build: func(scope *model.Scope, x *Node) *Node {
		c := layers.Convolution(scope.In("conv"), x).Filters(3).KernelSize(3).PadSame().Done()
		return layerzoo.Head(scope, BackendReduceWindow(Tanh(c), compute.ReduceOpProduct, []int{1, 2, 2, 1}, []int{1, 2, 2, 1}, nil, nil, nil))
	}}
	m := layerzoo.New(t, testBackend, tc, 7)
	d := len(m.Params(t))
	_, err := model.MustNewExec(testBackend, m.Store, func(scope *model.Scope, x *Node) *Node {
		scope.Store().SetTraining(x.Graph(), true) // the variables are named parameters
		params := make([]*Node, len(m.Vars))
		for k, p := range m.Vars {
			params[k] = p.NodeValue(x.Graph())
		}
		v := make([]*Node, len(params))
		for k, p := range params {
			v[k] = OnesLike(p)
		}
		return Linearize([]*Node{tc.Build(scope, x)}, params).JVP(v...)[0]
	}).Call(m.X)
	for _, want := range []string{"cannot differentiate op ReduceWindow", "/conv/", "no forward-mode rule"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("J_z v through %s (d = %d): error %v, want one containing %q", tc.Name, d, err, want)
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
		{"ReduceMax ReduceMin of tied copies", false, func(w *Node) *Node {
			return Concatenate([]*Node{ReduceMax(Concatenate([]*Node{w, w}, 1), 1), ReduceMin(Concatenate([]*Node{w, w}, 0), 0)}, 0)
		}},
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
			w, v := ref.RandVec(rng, 12), ref.RandVec(rng, 12)
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
			u := ref.RandVec(rng, len(fd))
			out := run(t, func(in []*Node) []*Node {
				lin := Linearize([]*Node{Reshape(tc.f(in[0]), 1, -1)}, in[:1])
				if tc.noVJP {
					return lin.JVP(in[1])
				}
				return append(lin.JVP(in[1]), lin.VJP(in[2])...)
			}, tensors.FromFlatDataAndDimensions(w, 3, 4), tensors.FromFlatDataAndDimensions(v, 3, 4),
				tensors.FromFlatDataAndDimensions(u, 1, len(u)))
			ref.Check(t, "J v vs central differences (relative)", ref.RelErr(out[0], fd), 1e-6)
			if tc.noVJP {
				return
			}
			ref.Check(t, "⟨J v, u⟩ vs ⟨v, Jᵀu⟩ (relative)", adjointErr(out[0], u, v, out[1]), 1e-10)
		})
	}
}
