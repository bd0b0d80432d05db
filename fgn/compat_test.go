package fgn

import (
	"strings"
	"testing"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/nn"

	"github.com/fgn-paper/fgn/internal/graphrun"
	"github.com/fgn-paper/fgn/internal/ref"
)

// doubleVJPError returns the error of building J v = ∇_a⟨J_wᵀa, v⟩ for y = op(x, w) by two
// reverse passes, nil if GoMLX builds and runs it.
func doubleVJPError(op func(x, w *Node) *Node, xShape, wShape shapes.Shape) error {
	_, err := graphrun.Run(testBackend, func(x, w, v *Node) *Node {
		y := op(x, w)
		a := ZerosLike(y)
		vjp := Gradient(ReduceAllSum(Mul(y, a)), w)[0]
		return Gradient(ReduceAllSum(Mul(vjp, v)), a)[0]
	}, tensors.FromShape(xShape), tensors.FromShape(wShape), tensors.FromShape(wShape))
	return err
}

func TestCompatConvVJPNotDifferentiable(t *testing.T) {
	x, k := shapes.Make(dtypes.Float64, 2, 5, 5, 3), shapes.Make(dtypes.Float64, 3, 3, 3, 4)
	err := doubleVJPError(func(x, k *Node) *Node { return Convolve(x, k).PadSame().Done() }, x, k)
	if err != nil && !strings.Contains(err.Error(), "ConvGeneral") {
		t.Fatalf("the double VJP of a convolution fails, but not in ConvGeneral: %v", err)
	}
	if err == nil {
		t.Errorf("%s: GoMLX now differentiates the ConvGeneral VJP again: delete the compat.go entry "+
			"compatConvVJPNotDifferentiable and its mention in Linearize's doc", compatConvVJPNotDifferentiable)
	} else {
		t.Logf("%s (present): %v", compatConvVJPNotDifferentiable, firstLine(err))
	}
}

func TestCompatFusedDenseVJPNoGradient(t *testing.T) {
	if !testBackend.Capabilities().Operations[compute.OpTypeFusedDenseVJP] {
		t.Skipf("backend %s does not fuse Dense", testBackend.Name())
	}
	x, w := shapes.Make(dtypes.Float64, 4, 3), shapes.Make(dtypes.Float64, 3, 2)
	err := doubleVJPError(func(x, w *Node) *Node { return nn.Dense(x, w, nil, compute.DenseLayoutInputOutputs) }, x, w)
	if err != nil && !strings.Contains(err.Error(), "FusedDenseVJP") {
		t.Fatalf("the double VJP of a fused Dense fails, but not in FusedDenseVJP: %v", err)
	}
	if err == nil {
		t.Errorf("%s: GoMLX now differentiates FusedDenseVJP: delete the compat.go entry "+
			"compatFusedDenseVJPNoGradient and its mention in Linearize's doc", compatFusedDenseVJPNoGradient)
	} else {
		t.Logf("%s (present): %v", compatFusedDenseVJPNoGradient, firstLine(err))
	}
}

// firstLine returns the first line of err's message.
func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

func TestCompatFusedActivationVJPClone(t *testing.T) {
	x := []float64{-1.5, -0.3, 0.4, 2}
	out := run(t, func(in []*Node) []*Node {
		x, dOut := in[0], OnesLike(in[0])
		cfg := compute.ActivationConfig{Type: compute.ActivationGelu}
		vjp := BackendFusedActivationVJP(BackendFusedActivation(x, cfg), x, dOut, cfg)
		return []*Node{vjp, vjp.CloneWithInputs(vjp.Inputs()...)}
	}, x)
	if ref.RelErr(out[1], out[0]) < 1e-12 {
		t.Errorf("%s: GoMLX now clones FusedActivationVJP with its own inputs unchanged (%v): delete the compat.go "+
			"entry compatFusedActivationVJPClone and the input swap in subgraph.clone", compatFusedActivationVJPClone, out[1])
	} else {
		t.Logf("%s (present): GELU'(x) = %v, its clone %v", compatFusedActivationVJPClone, out[0], out[1])
	}
}

func TestCompatClosureStalePlan(t *testing.T) {
	// A While body that broadcasts a node it computes to the same rank before adding it.
	_, err := graphrun.Run(testBackend, func(x *Node) []*Node {
		g := x.Graph()
		i0 := Const(g, int32(0))
		cond := NewClosure(g, func(g *Graph) []*Node {
			k := Parameter(g, "k", i0.Shape())
			_ = Parameter(g, "x", x.Shape())
			return []*Node{LessThan(k, Const(g, int32(2)))}
		})
		body := NewClosure(g, func(g *Graph) []*Node {
			k := Parameter(g, "k", i0.Shape())
			x := Parameter(g, "x", x.Shape())
			rowSums := BroadcastToDims(ReduceSum(x, 1), 2, 1)
			return []*Node{AddScalar(k, 1), Add(x, BroadcastToDims(rowSums, 2, 3))}
		})
		return While(cond, body, i0, x)
	}, [][]float64{{1, 2, 3}, {4, 5, 6}})
	if err != nil && !strings.Contains(err.Error(), "not computed yet") {
		t.Fatalf("the While loop fails, but not with a stale plan: %v", err)
	}
	if err == nil {
		t.Errorf("%s: the pure-Go backend now runs a While body that broadcasts its own nodes: delete the compat.go "+
			"entry compatClosureStalePlan and subgraph.closureSafe (Linearize's products are then always WhileSafe)",
			compatClosureStalePlan)
	} else {
		t.Logf("%s (present): %v", compatClosureStalePlan, firstLine(err))
	}
}
