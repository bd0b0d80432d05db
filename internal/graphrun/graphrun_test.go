package graphrun

import (
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"

	"github.com/fgn-paper/fgn/fgn/backend"
)

func TestFloats(t *testing.T) {
	for _, tc := range []struct {
		name string
		t    *tensors.Tensor
		want []float64
		err  string
	}{
		{"float64", tensors.FromValue([][]float64{{1.5, -2}, {3, 4}}), []float64{1.5, -2, 3, 4}, ""},
		{"float32", tensors.FromValue([]float32{0.25, -1}), []float64{0.25, -1}, ""},
		{"int32", tensors.FromValue([]int32{-3, 7}), []float64{-3, 7}, ""},
		{"int64", tensors.FromValue([]int64{1 << 40}), []float64{1 << 40}, ""},
		{"bool", tensors.FromValue([]bool{true}), nil, "cannot widen a Bool tensor"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Floats(tc.t)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Floats: error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Errorf("Floats = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func TestRun(t *testing.T) {
	be := backend.MustNew()
	out, err := Run(be, func(x *Node) []*Node {
		return []*Node{MulScalar(x, 2), ConvertDType(ReduceAllSum(x), dtypes.Int32)}
	}, []float32{1, 2.5})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(out[0], []float64{2, 5}) || !slices.Equal(out[1], []float64{3}) {
		t.Errorf("Run = %v, want [[2 5] [3]]", out)
	}
	if _, err := Run(be, func(x *Node) *Node { return LogicalNot(x) }, []bool{true}); err == nil ||
		!strings.Contains(err.Error(), "output 0") {
		t.Errorf("Run of a boolean output: error %v, want one naming output 0", err)
	}
}
