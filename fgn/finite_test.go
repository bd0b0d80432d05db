package fgn

import (
	"fmt"
	"math"
	"testing"

	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
)

// TestallFinite checks ReduceAllSum, which allFinite relies on, against a float64 sum and
// allFinite against the entries, for every rank the parameters of a model may have and for NaN
// and ±Inf entries anywhere.
func TestAllFinite(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	// A float32 matrix large enough for the Go backend's vectorised (SIMD) reduction, once with
	// integer entries (exact sums) and once with a NaN and once with an Inf deep inside.
	large := func(bad float64) [][]float64 {
		m := make([][]float64, 300)
		for i := range m {
			m[i] = make([]float64, 257)
			for j := range m[i] {
				m[i][j] = float64((i*7+j*3)%11 - 5)
			}
		}
		m[211][133] = bad
		return m
	}
	flatLarge := func() []float64 {
		var out []float64
		for _, row := range large(0) {
			out = append(out, row...)
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		x      any
		flat   []float64
		finite bool
	}{
		{"scalar", 2.5, []float64{2.5}, true},
		{"vector", []float64{1, -2, 3.5}, []float64{1, -2, 3.5}, true},
		{"matrix", [][]float64{{1, 2}, {3, 4}, {5, -6}}, []float64{1, 2, 3, 4, 5, -6}, true},
		{"rank 3", [][][]float64{{{1, 2}, {3, 4}}, {{5, 6}, {7, -8}}}, []float64{1, 2, 3, 4, 5, 6, 7, -8}, true},
		{"matrix with NaN", [][]float64{{1, 2}, {nan, 4}}, nil, false},
		{"rank 3 with +Inf", [][][]float64{{{1, 2}}, {{3, inf}}}, nil, false},
		{"matrix with +Inf and -Inf", [][]float64{{inf, 2}, {3, -inf}}, nil, false},
		{"vector with -Inf", []float64{1, -inf}, nil, false},
		{"matrix whose sum overflows", [][]float64{{1e308, 1e308}, {1e308, 1e308}}, nil, false},
		{"large float32 matrix", cast(large(0), dtypes.Float32), flatLarge(), true},
		{"large float32 matrix with NaN", cast(large(nan), dtypes.Float32), nil, false},
		{"large float32 matrix with -Inf", cast(large(-inf), dtypes.Float32), nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := run(t, func(in []*Node) []*Node {
				one, zero := OnesLike(in[1]), ZerosLike(in[1])
				return []*Node{ReduceAllSum(in[0]), Where(allFinite(Vec{in[1], in[0]}), one, zero)}
			}, tc.x, 1.0)
			if finite := out[1][0] == 1; finite != tc.finite {
				t.Fatalf("allFinite = %v, want %v", finite, tc.finite)
			}
			if !tc.finite {
				if s := out[0][0]; !math.IsNaN(s) && !math.IsInf(s, 0) {
					t.Errorf("sum of a tensor with a non-finite entry or overflow is %v", s)
				}
				return
			}
			var want float64
			for _, v := range tc.flat {
				want += v
			}
			check(t, "ReduceAllSum vs float64 sum", math.Abs(out[0][0]-want)/math.Max(math.Abs(want), 1), 1e-15)
		})
	}
}

// TestDirectionNonFiniteBatch checks that a NaN or ±Inf feature makes Direction.Finite false
// for every method and model, in float32 and float64, and, for the affine head (whose logits
// are products of the features), the reported loss non-finite. The guard may rely on sums and
// products only: a backend's vectorised Exp, Tanh or Max may map a NaN to a finite number (the
// MLP's logits may then be finite; tanh(±∞) = ±1 is), and CG's comparisons are false on NaN,
// so the loss or the CG solution alone can look finite for a batch whose step is not.
func TestDirectionNonFiniteBatch(t *testing.T) {
	p := newProblem(41, 8, 5, 4, 3, 1)
	closed, matrixFree := DefaultSettings(), DefaultSettings()
	matrixFree.RowOperator = MatrixFree
	methods := []struct {
		name string
		dir  func(lin Linearization, labels *Node) *Direction
	}{
		{"FGN closed-form Gram", func(lin Linearization, labels *Node) *Direction { return fgnDir(lin, labels, nil, closed) }},
		{"FGN matrix-free", func(lin Linearization, labels *Node) *Direction { return fgnDir(lin, labels, nil, matrixFree) }},
		{"SGN", func(lin Linearization, labels *Node) *Direction { return sgnDir(lin, labels, nil, closed) }},
	}
	models := []struct {
		name   string
		lin    func([]*Node) Linearization
		inputs func(dtypes.DType) []any
	}{
		{"affine", affineLin, p.affineInputs},
		{"MLP", mlpLin, p.mlpInputs},
	}
	for _, dtype := range []dtypes.DType{dtypes.Float32, dtypes.Float64} {
		for _, mdl := range models {
			for _, method := range methods {
				for _, bad := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
					t.Run(fmt.Sprintf("%s/%s/%s/%v", dtype, mdl.name, method.name, bad), func(t *testing.T) {
						inputs := mdl.inputs(dtype)
						badH := append([][]float64(nil), p.h...)
						badH[5] = append([]float64(nil), badH[5]...)
						badH[5][2] = bad
						inputs[0] = cast(badH, dtype)
						out := run(t, func(in []*Node) []*Node {
							dir := method.dir(mdl.lin(in), in[1])
							one := OnesLike(dir.Loss)
							return []*Node{Where(dir.Finite, one, ZerosLike(one)), dir.Loss}
						}, inputs...)
						if out[0][0] != 0 {
							t.Errorf("a batch with a %v feature reported a finite step (loss %v)", bad, out[1][0])
						}
						if loss := out[1][0]; mdl.name == "affine" && !math.IsNaN(loss) && !math.IsInf(loss, 0) {
							t.Errorf("a batch with a %v feature reported the finite loss %v", bad, loss)
						}
					})
				}
			}
		}
	}
}
