package paper

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/tensors"

	"github.com/fgn-paper/fgn/fgn"
	"github.com/fgn-paper/fgn/internal/ref"
)

func TestAffineDirectionBadInput(t *testing.T) {
	good := func() (h, labels, w, bias *tensors.Tensor) {
		return tensors.FromValue([][]float64{{1, 2}, {3, 4}, {5, 6}}), tensors.FromValue([]int32{0, 2, 1}),
			tensors.FromValue([][]float64{{0.1, 0.2, 0.3}, {0.4, 0.5, 0.6}}), tensors.FromValue([]float64{0, 0, 0})
	}
	for _, tc := range []struct {
		name   string
		mutate func(h, labels, w, bias **tensors.Tensor, cfg *fgn.Settings)
		want   string
	}{
		{"label too large", func(h, l, w, b **tensors.Tensor, c *fgn.Settings) { *l = tensors.FromValue([]int32{0, 3, 1}) }, "outside [0, 3)"},
		{"negative label", func(h, l, w, b **tensors.Tensor, c *fgn.Settings) { *l = tensors.FromValue([]int32{0, -1, 1}) }, "outside [0, 3)"},
		{"float labels", func(h, l, w, b **tensors.Tensor, c *fgn.Settings) { *l = tensors.FromValue([]float64{0, 1, 1}) }, "must be integers"},
		{"one class", func(h, l, w, b **tensors.Tensor, c *fgn.Settings) {
			*w = tensors.FromValue([][]float64{{0.1}, {0.2}})
			*b = tensors.FromValue([]float64{0})
			*l = tensors.FromValue([]int32{0, 0, 0})
		}, "C=2"},
		{"zero damping", func(h, l, w, b **tensors.Tensor, c *fgn.Settings) { c.Damping = 0 }, "damping"},
		{"NaN damping", func(h, l, w, b **tensors.Tensor, c *fgn.Settings) { c.Damping = math.NaN() }, "damping"},
		{"NaN feature", func(h, l, w, b **tensors.Tensor, c *fgn.Settings) {
			*h = tensors.FromValue([][]float64{{1, 2}, {math.NaN(), 4}, {5, 6}})
		}, "features has a NaN or Inf at flat index 2"},
		{"Inf weight", func(h, l, w, b **tensors.Tensor, c *fgn.Settings) {
			*w = tensors.FromValue([][]float64{{0.1, 0.2, math.Inf(1)}, {0.4, 0.5, 0.6}})
		}, "W has a NaN or Inf"},
		{"shape mismatch", func(h, l, w, b **tensors.Tensor, c *fgn.Settings) {
			*h = tensors.FromValue([][]float64{{1, 2, 3}, {3, 4, 5}, {5, 6, 7}})
		}, "shape mismatch"},
		{"label count", func(h, l, w, b **tensors.Tensor, c *fgn.Settings) { *l = tensors.FromValue([]int32{0, 1}) }, "length b=3"},
		{"mixed dtypes", func(h, l, w, b **tensors.Tensor, c *fgn.Settings) { *b = tensors.FromValue([]float32{0, 0, 0}) }, "share one dtype"},
		{"no CG iterations", func(h, l, w, b **tensors.Tensor, c *fgn.Settings) { c.CG.MaxIterations = 0 }, "iteration cap"},
		{"NaN CG tolerance", func(h, l, w, b **tensors.Tensor, c *fgn.Settings) { c.CG.Tolerance = math.NaN() }, "CG tolerance"},
		{"uint8 label too large", func(h, l, w, b **tensors.Tensor, c *fgn.Settings) { *l = tensors.FromValue([]uint8{0, 200, 1}) }, "label 200 of example 1 is outside [0, 3)"},
		{"empty batch", func(h, l, w, b **tensors.Tensor, c *fgn.Settings) {
			*h = tensors.FromFlatDataAndDimensions([]float64{}, 0, 2)
			*l = tensors.FromFlatDataAndDimensions([]int32{}, 0)
		}, "empty batch"},
		{"no features", func(h, l, w, b **tensors.Tensor, c *fgn.Settings) {
			*h = tensors.FromFlatDataAndDimensions([]float64{}, 3, 0)
			*w = tensors.FromFlatDataAndDimensions([]float64{}, 0, 3)
		}, "no features: the features have d = 0 columns"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, labels, w, bias := good()
			cfg := fgn.DefaultSettings()
			tc.mutate(&h, &labels, &w, &bias, &cfg)
			_, err := AffineDirection(testBackend, MethodFGN, h, labels, w, bias, cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestAffineDirectionLabelTypes checks that labels of every Go integer type give the direction of
// int32 labels.
func TestAffineDirectionLabelTypes(t *testing.T) {
	h := tensors.FromValue([][]float64{{1, 2}, {3, 4}, {5, 6}})
	w := tensors.FromValue([][]float64{{0.1, 0.2, 0.3}, {0.4, 0.5, 0.6}})
	bias := tensors.FromValue([]float64{0, 0, 0})
	want, err := AffineDirection(testBackend, MethodFGN, h, tensors.FromValue([]int32{0, 2, 1}), w, bias, fgn.DefaultSettings())
	if err != nil {
		t.Fatal(err)
	}
	for _, labels := range []any{[]int8{0, 2, 1}, []int16{0, 2, 1}, []int64{0, 2, 1}, []uint8{0, 2, 1},
		[]uint16{0, 2, 1}, []uint32{0, 2, 1}, []uint64{0, 2, 1}} {
		lt, err := tensors.FromAnyValue(labels)
		if err != nil {
			t.Fatal(err)
		}
		got, err := AffineDirection(testBackend, MethodFGN, h, lt, w, bias, fgn.DefaultSettings())
		if err != nil {
			t.Errorf("labels %T: %v", labels, err)
			continue
		}
		if d := ref.RelErr(flat64(got.DW), flat64(want.DW)); d != 0 {
			t.Errorf("labels %T: direction differs from int32 labels' by %g", labels, d)
		}
	}
}

// TestAffineDirectionMethods checks the host API against the graph functions: all FGN variants
// agree, and every method returns a descent direction.
func TestAffineDirectionMethods(t *testing.T) {
	p := newProblem(17, 8, 5, 4, 0.5)
	h, labels, w, bias := tensors.FromValue(f32(p.h)), tensors.FromValue(p.labels),
		tensors.FromValue(f32(p.w)), tensors.FromValue(f32([][]float64{p.bias})[0])
	results := map[Method]*AffineResult{}
	for _, m := range []Method{MethodFGN, MethodFGNMatrixFree, MethodFGNAutodiff, MethodSGN, MethodGradient} {
		r, err := AffineDirection(testBackend, m, h, labels, w, bias, fgn.DefaultSettings())
		if err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		results[m] = r
	}
	flatDir := func(r *AffineResult) []float64 { return append(flat64(r.DW), flat64(r.DBias)...) }
	for _, m := range []Method{MethodFGNMatrixFree, MethodFGNAutodiff} {
		check(t, m.String()+" vs "+MethodFGN.String()+" (float32)", ref.RelErr(flatDir(results[m]), flatDir(results[MethodFGN])), 1e-5)
	}
	negGrad := flatDir(results[MethodGradient])
	for m, r := range results {
		if dot(flatDir(r), negGrad) <= 0 {
			t.Errorf("%s direction is not a descent direction", m)
		}
		if r.Loss <= 0 || math.IsNaN(r.Loss) {
			t.Errorf("%s: loss %g", m, r.Loss)
		}
	}
}

// TestAffineDirectionOverflow checks that finite inputs whose direction overflows the dtype give
// an error naming the overflow, for every method in float32 and float64: features so large that
// ‖h_i‖² overflows (with W = 0, ordinary logits, and with random W, saturated logits) or only
// ‖h_i‖⁴ does (SGN's CG products), logits that overflow, and bλ beyond the dtype's range. Methods that do not overflow on such input (the
// gradient, which holds no square of the features) and ordinary and moderately large features
// (no false positive) must return a finite direction and no error.
func TestAffineDirectionOverflow(t *testing.T) {
	const features, logits = "features too large: ‖h_i‖² overflows", "logits too large"
	const sgnProducts = "features too large: the SGN direction overflows"
	all := []Method{MethodFGN, MethodFGNMatrixFree, MethodFGNAutodiff, MethodSGN, MethodGradient}
	curvature := all[:4]
	for _, tc := range []struct {
		name           string
		dtype          dtypes.DType
		hScale, wScale float64
		damping        float64
		fail           []Method // methods that must fail with want; the others must succeed
		want           string
	}{
		{"ordinary", dtypes.Float32, 1, 1, 1, nil, ""},
		{"ordinary", dtypes.Float64, 1, 1, 1, nil, ""},
		{"large features", dtypes.Float32, 1e4, 0, 1, nil, ""},
		{"large features", dtypes.Float64, 1e50, 0, 1, nil, ""},
		// ‖h_i‖² fits, ‖h_i‖⁴ does not: SGN's CG products overflow.
		{"very large features, W = 0", dtypes.Float32, 1e10, 0, 1, []Method{MethodSGN}, sgnProducts},
		{"very large features, W = 0", dtypes.Float64, 1e80, 0, 1, []Method{MethodSGN}, sgnProducts},
		{"huge features, W = 0", dtypes.Float32, 1e20, 0, 1, curvature, features},
		{"huge features, W = 0", dtypes.Float64, 1e160, 0, 1, curvature, features},
		{"huge features", dtypes.Float32, 1e30, 1, 1, curvature, features},
		{"huge features", dtypes.Float64, 1e200, 1, 1, curvature, features},
		{"huge W", dtypes.Float32, 1, 1e38, 1, all, logits},
		{"huge W", dtypes.Float64, 10, 1e307, 1, all, logits},
		{"huge damping", dtypes.Float32, 1, 1, 1e38, all, "damping too large: bλ = 16·1e+38 overflows Float32"},
	} {
		p := newProblem(3, 16, 6, 4, 1)
		for i := range p.h {
			for k := range p.h[i] {
				p.h[i][k] *= tc.hScale
			}
		}
		for k := range p.w {
			for j := range p.w[k] {
				p.w[k][j] *= tc.wScale
			}
		}
		h, w, bias := tensors.FromValue(p.h), tensors.FromValue(p.w), tensors.FromValue(p.bias)
		if tc.dtype == dtypes.Float32 {
			h, w, bias = tensors.FromValue(f32(p.h)), tensors.FromValue(f32(p.w)), tensors.FromValue(f32([][]float64{p.bias})[0])
		}
		cfg := fgn.DefaultSettings()
		cfg.Damping = tc.damping
		for _, m := range all {
			t.Run(fmt.Sprintf("%s/%s/%s", tc.name, tc.dtype, m), func(t *testing.T) {
				r, err := AffineDirection(testBackend, m, h, tensors.FromValue(p.labels), w, bias, cfg)
				if slices.Contains(tc.fail, m) {
					if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.dtype.String()) {
						t.Errorf("error %v, want one containing %q and %q", err, tc.want, tc.dtype)
					}
					return
				}
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				d := append(flat64(r.DW), flat64(r.DBias)...)
				if s := ref.MaxAbs(d); math.IsNaN(s) || math.IsInf(s, 0) || math.IsNaN(r.Residual) {
					t.Errorf("direction max |d| = %v, residual %v: want finite", s, r.Residual)
				}
			})
		}
	}
}

// TestAffineDirectionSaturated checks the host entry point on batches whose every row is
// saturated (features ×1e4, ×1e6, ×1e12: margins that large, q_i below every dtype's range): the
// exact damped step is then −g/λ, to float64's resolution, for FGN (curvature weights q_i) and SGN
// (one-hot softmax probabilities) alike, with g computed on the host from a stable softmax. Every
// method must return it, to 1e-12 relative in float64 and 1e-4 in float32.
func TestAffineDirectionSaturated(t *testing.T) {
	const lambda = 1e-4
	for _, scale := range []float64{1e4, 1e6, 1e12} {
		p := newProblem(41, 16, 8, 10, 1)
		for i := range p.h {
			for k := range p.h[i] {
				p.h[i][k] *= scale
			}
		}
		// −g/λ with g = (1/b) Σ_i (h_i, 1) ⊗ (p_i − y_i), W's entries first.
		want := make([]float64, (p.d+1)*p.c)
		for i := range p.b {
			z := slices.Clone(p.bias)
			for c := range z {
				for k := range p.d {
					z[c] += p.h[i][k] * p.w[k][c]
				}
			}
			zMax := slices.Max(z)
			var sum float64
			for _, v := range z {
				sum += math.Exp(v - zMax)
			}
			x := append(slices.Clone(p.h[i]), 1)
			for c, v := range z {
				r := math.Exp(v-zMax) / sum
				if c == int(p.labels[i]) {
					r--
				}
				for k := range x {
					want[k*p.c+c] -= x[k] * r / (float64(p.b) * lambda)
				}
			}
		}
		cfg := fgn.DefaultSettings()
		cfg.Damping, cfg.CG.MaxIterations, cfg.CG.Tolerance = lambda, 50, 0
		for _, dtype := range []dtypes.DType{dtypes.Float64, dtypes.Float32} {
			h, w, bias := tensors.FromValue(p.h), tensors.FromValue(p.w), tensors.FromValue(p.bias)
			tol := 1e-12
			if dtype == dtypes.Float32 {
				h, w, bias = tensors.FromValue(f32(p.h)), tensors.FromValue(f32(p.w)), tensors.FromValue(f32([][]float64{p.bias})[0])
				tol = 1e-4
			}
			for _, m := range []Method{MethodFGN, MethodFGNMatrixFree, MethodFGNAutodiff, MethodSGN} {
				t.Run(fmt.Sprintf("×%g/%s/%s", scale, dtype, m), func(t *testing.T) {
					r, err := AffineDirection(testBackend, m, h, tensors.FromValue(p.labels), w, bias, cfg)
					if err != nil {
						t.Fatal(err)
					}
					check(t, "direction vs −g/λ", ref.RelErr(append(flat64(r.DW), flat64(r.DBias)...), want), tol)
				})
			}
		}
	}
}
