package paper

import (
	"fmt"
	"math"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/support/exceptions"

	"github.com/fgn-paper/fgn/fgn"
	"github.com/fgn-paper/fgn/fgn/internal/hook"
)

// Method selects which direction AffineDirection computes, named by the repository's vocabulary
// (curvature, row operator, linearisation).
type Method int

const (
	// MethodFGN is FGN with the closed-form Gram of the affine head (fgn.FGNDirection with
	// fgn.ClosedFormGram on the fgn.AffineHead).
	MethodFGN Method = iota
	// MethodFGNMatrixFree is FGN with the matrix-free row operator on the head's exact products
	// (fgn.FGNDirection with fgn.MatrixFree on the fgn.AffineHead).
	MethodFGNMatrixFree
	// MethodFGNAutodiff is FGN with the matrix-free row operator on autodiff products
	// (fgn.FGNDirection on fgn.Linearize of the head's logits).
	MethodFGNAutodiff
	// MethodSGN is the full softmax-GGN direction by parameter-space CG (fgn.SGNDirection), cold start.
	MethodSGN
	// MethodGradient is the negative gradient −g.
	MethodGradient
)

// String returns the method's label: "FGN (closed-form Gram)", "FGN (matrix-free)",
// "FGN (matrix-free, autodiff)", "SGN" or "gradient".
func (m Method) String() string {
	switch m {
	case MethodFGN:
		return "FGN (closed-form Gram)"
	case MethodFGNMatrixFree:
		return "FGN (matrix-free)"
	case MethodFGNAutodiff:
		return "FGN (matrix-free, autodiff)"
	case MethodSGN:
		return "SGN"
	case MethodGradient:
		return "gradient"
	}
	return fmt.Sprintf("Method(%d)", int(m))
}

// AffineResult is a direction for the affine head computed on the host-facing API.
type AffineResult struct {
	// DW (d×C) and DBias (C) are the direction for W and the bias.
	DW, DBias *tensors.Tensor
	// Loss is the batch mean cross-entropy; MeanPDagger and MeanXi the batch means of p_† and ξ.
	Loss, MeanPDagger, MeanXi float64
	// Iterations and Residual report the CG solve (0 for MethodGradient).
	Iterations int
	Residual   float64
}

// AffineDirection computes one direction for the affine head z = h W + 1 biasᵀ on backend, from
// host tensors: features h (b×d), integer labels (b), W (d×C) and bias (C), all floats of one
// dtype (float32 or float64). The method fixes the row operator, overriding cfg.RowOperator.
// Unlike the graph-building functions, it validates its inputs and returns an error naming the
// problem (labels outside [0,C), C < 2, λ ≤ 0, NaN or Inf, shape or dtype mismatches, bλ beyond
// the dtype's range) instead of panicking.
//
// A direction that is not finite although every input is (Direction.Finite) overflowed the
// dtype, and is an error too: "logits too large" when the logits or the batch loss overflow,
// else "features too large" (the curvature's entries grow as ‖h_i‖², and SGN's CG products
// pᵀ(H + λI)p, whose p carries the gradient's scale, as ‖h_i‖⁴). No rescaling of the features
// keeps the direction exact: with h scaled by σ and W by 1/σ, the same λ damps W as λ/σ² would
// and the bias as λ does.
//
// It compiles a graph per call: it is meant for one-off use, diagnostics and notebooks. Training
// loops build fgn.FGNDirection and friends into their own compiled step.
func AffineDirection(backend compute.Backend, method Method, h, labels, w, bias *tensors.Tensor, cfg fgn.Settings) (*AffineResult, error) {
	if err := validateAffine(h, labels, w, bias, cfg); err != nil {
		return nil, err
	}
	if method < MethodFGN || method > MethodGradient {
		return nil, fmt.Errorf("paper: unknown method %d", int(method))
	}
	// Labels of any integer type reach the graph as int32 (validated to lie in [0, C)).
	var wide []int64
	labels.ConstFlatData(func(flat any) { wide = toInt64s(flat) })
	narrow := make([]int32, len(wide))
	for i, y := range wide {
		narrow[i] = int32(y)
	}
	labels = tensors.FromFlatDataAndDimensions(narrow, len(narrow))
	var result *AffineResult
	var finite bool
	err := exceptions.TryCatch[error](func() {
		exec := MustNewExec(backend, func(h, labels, w, bias *Node) []*Node {
			head := fgn.NewAffineHead(h, w, bias)
			var dir *fgn.Direction
			switch method {
			case MethodFGN:
				cfg.RowOperator = fgn.ClosedFormGram
				dir = fgn.FGNDirection(head, labels, nil, cfg)
			case MethodFGNMatrixFree:
				cfg.RowOperator = fgn.MatrixFree
				dir = fgn.FGNDirection(head, labels, nil, cfg)
			case MethodFGNAutodiff:
				dir = fgn.FGNDirection(fgn.Linearize(head.Logits(), head.Params()), labels, nil, cfg)
			case MethodSGN:
				dir = fgn.SGNDirection(head, labels, nil, cfg)
			case MethodGradient:
				m := fgn.NewMargin(head.Logits(), labels)
				grad := m.Gradient(head)
				loss := ReduceAllMean(m.Loss)
				dir = &fgn.Direction{D: fgn.Vec{Neg(grad[0]), Neg(grad[1])}, Loss: loss,
					MeanPDagger: ReduceAllMean(m.PDagger), MeanXi: ReduceAllMean(m.Xi),
					Iterations: Const(h.Graph(), int32(0)), Residual: ScalarZero(h.Graph(), h.DType()),
					Finite: LogicalAnd(IsFinite(loss), LogicalAnd(IsFinite(ReduceAllSum(grad[0])), IsFinite(ReduceAllSum(grad[1]))))}
			}
			return []*Node{dir.D[0], dir.D[1], ConvertDType(dir.Loss, dtypes.Float64),
				ConvertDType(dir.MeanPDagger, dtypes.Float64), ConvertDType(dir.MeanXi, dtypes.Float64),
				dir.Iterations, ConvertDType(dir.Residual, dtypes.Float64), dir.Finite}
		})
		out := exec.MustCall(h, labels, w, bias)
		result = &AffineResult{DW: out[0], DBias: out[1],
			Loss: tensors.ToScalar[float64](out[2]), MeanPDagger: tensors.ToScalar[float64](out[3]),
			MeanXi: tensors.ToScalar[float64](out[4]), Iterations: int(tensors.ToScalar[int32](out[5])),
			Residual: tensors.ToScalar[float64](out[6])}
		finite = tensors.ToScalar[bool](out[7])
	})
	if err != nil {
		return nil, fmt.Errorf("paper: computing the %s direction: %w", method, err)
	}
	if !finite {
		return nil, overflowError(method, h, result.Loss)
	}
	return result, nil
}

// overflowError names the overflow behind a direction that is not finite although every input
// is: the logits when the batch loss is not finite (NewMargin's loss is NaN for a row of logits
// whose sum is not finite), else the features, whose squares the curvature holds; the message
// says whether ‖h_i‖² itself exceeds the dtype's range.
func overflowError(method Method, h *tensors.Tensor, loss float64) error {
	dtype := h.DType()
	if math.IsNaN(loss) || math.IsInf(loss, 0) {
		return fmt.Errorf("paper: logits too large: the logits h W + 1 biasᵀ or the batch loss overflow %s "+
			"in the %s direction; scale the features, W or the bias down", dtype, method)
	}
	row, norm := largestRow(h)
	if bound := math.Sqrt(largestFinite(dtype)); norm > bound {
		return fmt.Errorf("paper: features too large: ‖h_i‖² overflows %s in the %s direction "+
			"(‖h_%d‖ = %.3g > %.3g, the square root of %s's largest value); scale the features down",
			dtype, method, row, norm, bound, dtype)
	}
	return fmt.Errorf("paper: features too large: the %s direction overflows %s (the curvature grows as "+
		"‖h_i‖², SGN's CG products as ‖h_i‖⁴; the largest feature row is ‖h_%d‖ = %.3g); scale the "+
		"features down", method, dtype, row, norm)
}

// largestRow returns the row of a b×d float tensor with the largest Euclidean norm, and that
// norm, computed in float64 as m·‖x/m‖ with m = max|x_k| so that it does not overflow.
func largestRow(t *tensors.Tensor) (row int, norm float64) {
	b, d := t.Shape().Dim(0), t.Shape().Dim(1)
	var flat []float64
	t.ConstFlatData(func(v any) {
		switch v := v.(type) {
		case []float32:
			flat = make([]float64, len(v))
			for k, x := range v {
				flat[k] = float64(x)
			}
		case []float64:
			flat = v
		}
	})
	for i := range b {
		x := flat[i*d : (i+1)*d]
		m := 0.0
		for _, xk := range x {
			m = math.Max(m, math.Abs(xk))
		}
		if m == 0 {
			continue
		}
		var sum float64
		for _, xk := range x {
			sum += (xk / m) * (xk / m)
		}
		if n := m * math.Sqrt(sum); n > norm {
			row, norm = i, n
		}
	}
	return row, norm
}

// largestFinite returns the largest finite value of a float dtype (float32 or float64).
func largestFinite(dtype dtypes.DType) float64 {
	if dtype == dtypes.Float32 {
		return math.MaxFloat32
	}
	return math.MaxFloat64
}

func validateAffine(h, labels, w, bias *tensors.Tensor, cfg fgn.Settings) error {
	for _, in := range []struct {
		name string
		t    *tensors.Tensor
	}{{"features", h}, {"labels", labels}, {"W", w}, {"bias", bias}} {
		if in.t == nil {
			return fmt.Errorf("paper: %s tensor is nil", in.name)
		}
	}
	dtype := h.DType()
	if dtype != dtypes.Float32 && dtype != dtypes.Float64 {
		return fmt.Errorf("paper: features must be float32 or float64, got %s", dtype)
	}
	if w.DType() != dtype || bias.DType() != dtype {
		return fmt.Errorf("paper: features, W and bias must share one dtype, got %s, %s, %s", dtype, w.DType(), bias.DType())
	}
	if h.Rank() != 2 || w.Rank() != 2 || bias.Rank() != 1 {
		return fmt.Errorf("paper: need features b×d, W d×C and bias C, got shapes %s, %s, %s", h.Shape(), w.Shape(), bias.Shape())
	}
	b, d, c := h.Shape().Dim(0), h.Shape().Dim(1), w.Shape().Dim(1)
	if w.Shape().Dim(0) != d || bias.Shape().Dim(0) != c {
		return fmt.Errorf("paper: shape mismatch: features %s, W %s, bias %s", h.Shape(), w.Shape(), bias.Shape())
	}
	if c < 2 {
		return fmt.Errorf("paper: need at least C=2 classes, got C=%d", c)
	}
	if b == 0 {
		return fmt.Errorf("paper: empty batch: features have 0 examples")
	}
	if d == 0 {
		return fmt.Errorf("paper: no features: the features have d = 0 columns (shape %s); the affine head needs d ≥ 1",
			h.Shape())
	}
	if labels.Rank() != 1 || labels.Shape().Dim(0) != b {
		return fmt.Errorf("paper: labels must be a vector of length b=%d, got shape %s", b, labels.Shape())
	}
	if !labels.DType().IsInt() {
		return fmt.Errorf("paper: labels must be integers, got %s", labels.DType())
	}
	var labelErr error
	labels.ConstFlatData(func(flat any) {
		for i, y := range toInt64s(flat) {
			if y < 0 || y >= int64(c) {
				labelErr = fmt.Errorf("paper: label %d of example %d is outside [0, %d)", y, i, c)
				return
			}
		}
	})
	if labelErr != nil {
		return labelErr
	}
	for _, in := range []struct {
		name string
		t    *tensors.Tensor
	}{{"features", h}, {"W", w}, {"bias", bias}} {
		if idx := firstNonFinite(in.t); idx >= 0 {
			return fmt.Errorf("paper: %s has a NaN or Inf at flat index %d", in.name, idx)
		}
	}
	if err := hook.ValidateSolve.(func(fgn.Settings) error)(cfg); err != nil {
		return err
	}
	if bLambda := float64(b) * cfg.Damping; bLambda > largestFinite(dtype) {
		return fmt.Errorf("paper: damping too large: bλ = %d·%g overflows %s", b, cfg.Damping, dtype)
	}
	return nil
}

// toInt64s widens a flat slice of any Go integer type.
func toInt64s(flat any) []int64 {
	switch v := flat.(type) {
	case []int8:
		return widen(v)
	case []int16:
		return widen(v)
	case []int32:
		return widen(v)
	case []int64:
		return v
	case []int:
		return widen(v)
	case []uint8:
		return widen(v)
	case []uint16:
		return widen(v)
	case []uint32:
		return widen(v)
	case []uint64:
		out := make([]int64, len(v))
		for i, x := range v {
			out[i] = int64(min(x, math.MaxInt64))
		}
		return out
	case []uint:
		return toInt64s(widenUnsigned(v))
	}
	panic(fmt.Sprintf("paper: labels of Go type %T", flat))
}

func widen[T int8 | int16 | int32 | int | uint8 | uint16 | uint32](v []T) []int64 {
	out := make([]int64, len(v))
	for i, x := range v {
		out[i] = int64(x)
	}
	return out
}

func widenUnsigned(v []uint) []uint64 {
	out := make([]uint64, len(v))
	for i, x := range v {
		out[i] = uint64(x)
	}
	return out
}

func firstNonFinite(t *tensors.Tensor) int {
	idx := -1
	t.ConstFlatData(func(flat any) {
		switch v := flat.(type) {
		case []float32:
			for i, x := range v {
				if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
					idx = i
					return
				}
			}
		case []float64:
			for i, x := range v {
				if math.IsNaN(x) || math.IsInf(x, 0) {
					idx = i
					return
				}
			}
		}
	})
	return idx
}
