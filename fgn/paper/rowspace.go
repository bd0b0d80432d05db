package paper

import (
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/support/exceptions"

	"github.com/fgn-paper/fgn/fgn"
	"github.com/fgn-paper/fgn/fgn/internal/hook"
)

// FGNRowOperator returns the whitened row-space operator of eq. (4.8),
//
//	B v = Q^{1/2} J Jᵀ Q^{1/2} v + bλ v,
//
// applied matrix-free with one VJP and one JVP of the margin map, as fgn.FGNDirection's
// MatrixFree row operator applies it. sqrtQ holds the whitening weights √q (b), bLambda the
// scalar bλ.
func FGNRowOperator(j MarginJacobian, sqrtQ, bLambda *Node) func(v *Node) *Node {
	return func(v *Node) *Node {
		return Add(Mul(sqrtQ, j.JVP(j.VJP(Mul(sqrtQ, v)))), Mul(bLambda, v))
	}
}

// RowRHS returns the right-hand side of the whitened row system (K + bλI) u = r̃ for a direction
// of fgn.FGNDirection: r̃ = Q'^{-1/2} r (eq. 4.6), with the weights √q'_i = max(√q_i, ν), ν the
// dtype's smallest normal number (see fgn.FGNDirection). dir.Solution approximates u, or, on a
// batch with saturated rows, w = u − r̃/(bλ). It panics for a direction of fgn.SGNDirection,
// which has no row system.
func RowRHS(dir *fgn.Direction) *Node {
	rhs := hook.RowRHS.(func(*fgn.Direction) *Node)(dir)
	if rhs == nil {
		exceptions.Panicf("paper.RowRHS: the direction has no row system (SGN solves in parameter space)")
	}
	return rhs
}
