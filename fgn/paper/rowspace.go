package paper

import (
	. "github.com/gomlx/gomlx/core/graph"
)

// FGNRowOperator returns the whitened row-space operator of eq. (4.8),
//
//	B v = Q^{1/2} J Jᵀ Q^{1/2} v + bλ v,
//
// applied matrix-free with one VJP and one JVP of the margin map, as the MatrixFree row operator of
// FGN's fgn.GNConfig.Direction applies it. sqrtQ holds the whitening weights √q (b), bLambda the
// scalar bλ.
func FGNRowOperator(j MarginJacobian, sqrtQ, bLambda *Node) func(v *Node) *Node {
	return func(v *Node) *Node {
		return Add(Mul(sqrtQ, j.JVP(j.VJP(Mul(sqrtQ, v)))), Mul(bLambda, v))
	}
}

// RowRHS returns the right-hand side of the whitened row system (K + bλI) u = r̃ that
// fgn.GNConfig.Direction solves for the batch whose margin quantities are m: r̃ = Q'^{-1/2} r (eq.
// 4.6), r_i = p_†,i, with the weights √q'_i = max(√q_i, ν), ν the dtype's smallest normal number
// (see fgn.GNConfig.Direction). The direction's Solution approximates u, or, on a batch with
// saturated rows, w = u − r̃/(bλ).
func RowRHS(m *Margin) *Node {
	_, rTilde := m.Whiten()
	return rTilde
}
