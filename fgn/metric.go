package fgn

import (
	"path"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
)

// Constants of the damping metric of Settings.ScaledDamping.
const (
	// metricDecay is β₂ of the moving average of each tensor's mean squared gradient, Adam's.
	metricDecay = 0.999
	// metricExponent is the power of the tensors' gradient scale relative to their mean that
	// damps them: 0 would be λI, 1 Adam's per-tensor scaling. Chosen on the model zoo
	// (experiments/zoo, BENCHMARKS.md).
	metricExponent = 0.5
	// metricFloor is the smallest relative gradient scale a tensor is damped at.
	metricFloor = 1e-4
)

// dampingMetric is the damping metric S of Settings.ScaledDamping: the damped system is
// (H + λS) d = −g with S diagonal and positive, one scale per parameter tensor w_k, S = diag(s_k I),
//
//	s_k = (max(ρ_k/ρ̄, 10⁻⁴))^{1/2},   ρ_k = √v̂_k,   ρ̄ = Σ_k n_k ρ_k / Σ_k n_k,
//
// v̂_k the bias-corrected exponential moving average (β₂ = 0.999, as Adam's second moment) of
// the mean square of w_k's batch gradient over the previous steps, n_k its number of entries;
// or, with Settings.ScaledDampingPerEntry, one scale per entry, s_j = (max(ρ_j/ρ̄, 10⁻⁴))^{1/2}
// with ρ_j = √v̂_j from the moving average of entry j's squared gradient (Adam's v̂) and ρ̄ their
// mean over all entries. The first step, which has no average yet, takes S = I.
//
// Why. With Levenberg-Marquardt damping a step is the Gauss-Newton step along the curvature's
// leading directions and −g/λ along the directions the curvature leaves flat, with one λ for
// every parameter: the tensors whose gradients are largest take most of that part of the step.
// Adam divides each gradient entry by its own scale; S divides each tensor's (or entry's) by the
// square root of its scale relative to the others', half way between the two in the exponent.
// Marquardt's scaling of the damping by diag(JᵀJ) is the same idea with the curvature's
// diagonal, which a matrix-free step does not have. S is a constant of the step, so the solve
// is FGN's and SGN's with the parameters rescaled by S^{1/2}: FGN's row operator becomes
// J̃S⁻¹J̃ᵀ (the closed-form Gram of an affine head with per-tensor weights, see
// AffineHead.marginGram; per-entry scales take the matrix-free products), SGN's CG runs on
// S^{-1/2}(H + λS)S^{-1/2}, and the batch's curvature scale and gradient noise (DampingPolicy)
// are measured along the scaled gradient S⁻¹g with the norm of S.
type dampingMetric struct {
	// scale holds s_k per parameter, in the parameters' dtypes: scalars, or tensors shaped like
	// the parameters with Settings.ScaledDampingPerEntry.
	scale Vec
	// perEntry is Settings.ScaledDampingPerEntry.
	perEntry    bool
	vars        []*model.Variable // the moving averages v_k: float64 scalars, or per entry in the parameters' dtypes
	steps       *model.Variable   // the number of averaged steps, float64 scalar
	meanSquares Vec               // v_k's values in the step's graph
	count       *Node             // steps' value in the step's graph
}

// newDampingMetric reads the damping metric's state for the parameters params (of the variables
// vars) from the optimizer's scope, created at zero on first use, and forms S.
func (o *gnOptimizer) newDampingMetric(scope *model.Scope, g *Graph, vars []*model.Variable, params Vec) *dampingMetric {
	perEntry := o.c.s.ScaledDampingPerEntry
	dm := &dampingMetric{vars: make([]*model.Variable, len(params)), meanSquares: make(Vec, len(params)),
		scale: make(Vec, len(params)), perEntry: perEntry}
	state := func(dir, name string, shape shapes.Shape) *model.Variable {
		return stateVariable(scope.Store(), dir, name, shape, "damping metric state")
	}
	root := path.Join("/", o.c.scopeName)
	dm.steps = state(root, "scaled_damping_steps", shapes.Make(dtypes.Float64))
	dm.count = dm.steps.NodeValue(g)
	// v̂_k = v_k/(1 − β₂ᵗ) after t steps.
	correction := OneMinus(Pow(Scalar(g, dtypes.Float64, metricDecay), dm.count))
	rms := make(Vec, len(params))
	var weighted *Node
	var entries float64
	for k, p := range params {
		name, shape := vars[k].Name()+"_mean_square", shapes.Make(dtypes.Float64)
		if perEntry { // its own name: a checkpoint of per-tensor scales is not read as per-entry ones
			name, shape = vars[k].Name()+"_entry_mean_square", p.Shape()
		}
		dm.vars[k] = state(path.Join(root, vars[k].Scope()), name, shape)
		dm.meanSquares[k] = dm.vars[k].NodeValue(g)
		rms[k] = Sqrt(Div(dm.meanSquares[k], ConvertDType(correction, shape.DType)))
		n := float64(p.Shape().Size())
		entries += n
		term := MulScalar(rms[k], n)
		if perEntry {
			term = ConvertDType(ReduceAllSum(rms[k]), dtypes.Float64)
		}
		if weighted == nil {
			weighted = term
		} else {
			weighted = Add(weighted, term)
		}
	}
	mean := DivScalar(weighted, entries)
	// Before the first step, or if the averages are zero (a gradient that was zero so far) or not
	// finite, S = I.
	defined := LogicalAnd(GreaterThan(dm.count, ScalarZero(g, dtypes.Float64)),
		LogicalAnd(GreaterThan(mean, ScalarZero(g, dtypes.Float64)), IsFinite(mean)))
	safeMean := Where(defined, mean, OnesLike(mean))
	for k := range params {
		dtype := rms[k].DType()
		s := Pow(Max(Div(rms[k], ConvertDType(safeMean, dtype)), Scalar(g, dtype, metricFloor)), Scalar(g, dtype, metricExponent))
		dm.scale[k] = StopGradient(ConvertDType(Where(defined, s, OnesLike(s)), params[k].DType()))
	}
	return dm
}

// update adds the batch gradient grad (shaped like the parameters) to the moving averages where
// ok holds (the step's direction is finite) and every entry of grad is finite: a bad batch changes
// nothing.
func (dm *dampingMetric) update(grad Vec, ok *Node) {
	finite := LogicalAnd(ok, allFinite(grad))
	for k, gk := range grad {
		v := dm.meanSquares[k]
		square := ReduceAllMean(Square(gk))
		if dm.perEntry {
			square = Square(gk)
		}
		next := Add(MulScalar(v, metricDecay), MulScalar(ConvertDType(square, v.DType()), 1-metricDecay))
		dm.vars[k].SetNodeValue(Where(finite, next, v))
	}
	dm.steps.SetNodeValue(Where(finite, OnePlus(dm.count), dm.count))
}

// scales returns the metric's per-tensor scales, nil for no metric (S = I).
func (dm *dampingMetric) scales() Vec {
	if dm == nil {
		return nil
	}
	return dm.scale
}

// reciprocals returns 1/x per entry of x (nil for nil; nil entries stay nil).
func reciprocals(x Vec) Vec { return mapEach(x, Reciprocal) }

// sqrtEach returns √x per entry of x (nil for nil; nil entries stay nil).
func sqrtEach(x Vec) Vec { return mapEach(x, Sqrt) }

// mapEach returns f(x_k) per entry of x, nil for nil and where x_k is nil.
func mapEach(x Vec, f func(*Node) *Node) Vec {
	if x == nil {
		return nil
	}
	out := make(Vec, len(x))
	for k, v := range x {
		if v != nil {
			out[k] = f(v)
		}
	}
	return out
}
