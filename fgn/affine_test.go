package fgn

import (
	"strings"
	"testing"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train"
	"github.com/gomlx/gomlx/support/exceptions"
)

// TestDenseHeadRejects checks that NewDenseHead panics with a message naming the problem on
// shapes it cannot use, features with no columns (d = 0) among them, built directly and when the
// optimizer recognises the head of a Trainer model.
func TestDenseHeadRejects(t *testing.T) {
	f64 := func(dims ...int) shapes.Shape { return shapes.Make(dtypes.Float64, dims...) }
	for _, tc := range []struct {
		name    string
		h, w, b []int // shapes; b nil for no bias
		layout  compute.DenseLayout
		want    string
	}{
		{"W rows ≠ d", []int{3, 2}, []int{4, 5}, []int{5}, compute.DenseLayoutInputOutputs, "need h (b×d), W (d×C)"},
		{"bias ≠ C", []int{3, 2}, []int{2, 5}, []int{4}, compute.DenseLayoutInputOutputs, "need h (b×d), W (d×C)"},
		{"W columns ≠ d", []int{3, 2}, []int{5, 4}, []int{5}, compute.DenseLayoutOutputsInput, "need h (b×d), W (C×d)"},
		{"d = 0", []int{3, 0}, []int{0, 5}, []int{5}, compute.DenseLayoutInputOutputs,
			"the features have no columns (h is (Float64)[3, 0], d = 0)"},
		{"d = 0, C×d, no bias", []int{3, 0}, []int{5, 0}, nil, compute.DenseLayoutOutputsInput, "d = 0"},
	} {
		err := exceptions.TryCatch[error](func() {
			g := NewGraph(testBackend, "head")
			var bias *Node
			if tc.b != nil {
				bias = Zeros(g, f64(tc.b...))
			}
			NewDenseHead(Zeros(g, f64(tc.h...)), Zeros(g, f64(tc.w...)), bias, tc.layout)
		})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
	modelFn := func(scope *model.Scope, h *Node) *Node {
		g := h.Graph()
		w := scope.VariableWithValue("W", tensors.FromShape(f64(0, 3))).NodeValue(g)
		bias := scope.VariableWithValue("bias", []float64{0, 0, 0}).NodeValue(g)
		return Add(MatMul(h, w), ExpandAxes(bias, 0))
	}
	trainer := train.NewTrainer(testBackend, model.NewStore(), modelFn, Loss, FGN().Done(), nil, nil)
	_, err := trainer.TrainStep(train.Batch{Inputs: []*tensors.Tensor{tensors.FromShape(f64(4, 0))},
		Labels: []*tensors.Tensor{tensors.FromValue([]int32{0, 1, 2, 0})}})
	if err == nil || !strings.Contains(err.Error(), "d = 0") {
		t.Errorf("Trainer on features with no columns: error %v, want one containing %q", err, "d = 0")
	}
}
