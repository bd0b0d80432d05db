package train

import (
	"fmt"
	"math"
	"math/rand/v2"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"

	"github.com/fgn-paper/fgn/fgn"
)

// Model is the classifier architecture: an affine head z = hW + b (Hidden = 0), or a two-layer
// tanh MLP z = tanh(hW₁ + b₁)W₂ + b₂ with Hidden units.
type Model struct {
	Hidden int
}

func (m Model) String() string {
	if m.Hidden == 0 {
		return "affine"
	}
	return fmt.Sprintf("mlp(%d)", m.Hidden)
}

// layer is one affine layer's variable names and fan-in/fan-out.
type layer struct {
	w, b    string
	in, out int
}

func (m Model) layers(dim, classes int) []layer {
	if m.Hidden == 0 {
		return []layer{{"W", "bias", dim, classes}}
	}
	return []layer{{"W1", "b1", dim, m.Hidden}, {"W2", "b2", m.Hidden, classes}}
}

// initialize creates the model's float32 variables in scope with PyTorch's nn.Linear default
// initialisation, U(−1/√fan_in, 1/√fan_in) for weights and biases, drawn from the seed.
func (m Model) initialize(scope *model.Scope, dim, classes int, seed uint64) []*model.Variable {
	rng := rand.New(rand.NewPCG(seed, 0x1417_1a11_2e))
	var vars []*model.Variable
	for _, l := range m.layers(dim, classes) {
		bound := 1 / math.Sqrt(float64(l.in))
		uniform := func(n int) []float32 {
			v := make([]float32, n)
			for i := range v {
				v[i] = float32(bound * (2*rng.Float64() - 1))
			}
			return v
		}
		w := make([][]float32, l.in)
		for i := range w {
			w[i] = uniform(l.out)
		}
		vars = append(vars, scope.VariableWithValue(l.w, w), scope.VariableWithValue(l.b, uniform(l.out)))
	}
	return vars
}

// linearize returns the logits of x under the variables' current values, linearised: an affine
// head's exact closed-form products (fgn.AffineHead), or the autodiff linearisation of the
// logits (fgn.Linearize, which also evaluates the trial logits adaptive damping needs) for an
// MLP and whenever lin is fgn.Autodiff. ht and featureGram, when not nil, are hᵀ and h hᵀ + 1 of
// the features x laid out beforehand, for the affine head to use (see fgn.AffineHead).
func (m Model) linearize(vars []*model.Variable, x *Node, lin string, ht, featureGram *Node) fgn.Linearization {
	g := x.Graph()
	p := make(fgn.Vec, len(vars))
	for k, v := range vars {
		p[k] = v.NodeValue(g)
	}
	if m.Hidden == 0 && lin == fgn.ExactProducts {
		head := fgn.NewAffineHead(x, p[0], p[1])
		if ht != nil {
			head.HT = ht
		}
		head.FeatureGram = featureGram
		return head
	}
	return fgn.Linearize(m.logits(x, p), p)
}

// logits returns the model's logits of x for the parameters w, in the order of layers: the
// affine layers with tanh between them.
func (m Model) logits(x *Node, w fgn.Vec) *Node {
	for k := 0; k < len(w); k += 2 {
		if k > 0 {
			x = Tanh(x)
		}
		x = Add(MatMul(x, w[k]), ExpandAxes(w[k+1], 0))
	}
	return x
}
