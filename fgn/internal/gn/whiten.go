package gn

import (
	"math"

	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
)

// Whiten returns the row weights √q'_i = max(√q_i, ν) of the whitened row system
// J̃ = Q'^{1/2} J, r̃ = Q'^{-1/2} r (eq. 4.6), ν the dtype's smallest normal number, and its
// right-hand side r̃_i = p_†,i/√q'_i (b each).
//
// For a saturated example with p_★ → 0, q_i = p_★p_† falls below ν (once s ≳ 87 in float32, 708
// in float64) and underflows, while r̃_i = √(p_†/p_★) grows as e^{s/2}, although their product is
// the finite p_†. With the weights √q'_i, r̃_i ≤ 1/ν is finite and √q'_i r̃_i = p_† to rounding.
// Only a row with q_i < ν is weighted otherwise than exactly, by |q'_i − q_i| < ν: a perturbation
// of H_FGN below ν‖J_i‖²/b, under the dtype's resolution relative to λ unless ‖J_i‖² exceeds
// ε·bλ/ν (about 1e31·bλ in float32).
func (m *Margin) Whiten() (weights, rTilde *Node) {
	dtype := m.Q.DType()
	weights = Max(Sqrt(m.Q), Scalar(m.Q.Graph(), dtype, smallestNormal(dtype)))
	return weights, Div(m.PDagger, weights)
}

// smallestNormal returns the smallest positive normal number of a float dtype.
func smallestNormal(dtype dtypes.DType) float64 {
	switch dtype {
	case dtypes.Float64:
		return math.Float64frombits(1 << 52) // 2^-1022
	case dtypes.Float16:
		return math.Ldexp(1, -14)
	}
	return float64(math.Float32frombits(1 << 23)) // 2^-126, float32's and bfloat16's
}
