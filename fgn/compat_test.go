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
