package fgn

import (
	. "github.com/gomlx/gomlx/core/graph"

	"github.com/fgn-paper/fgn/fgn/internal/hook"
)

// init hands fgn/paper the unexported functions it exposes (see package hook).
func init() {
	hook.MarginVJP = func(lin Linearization, gradS, a *Node) Vec { return marginJacobian{lin, gradS}.vjp(a) }
	hook.MarginJVP = func(lin Linearization, gradS *Node, beta Vec) *Node { return marginJacobian{lin, gradS}.jvp(beta) }
	hook.GGNOperator = func(lin Linearization, probs, lambda *Node) func(Vec) Vec {
		return func(v Vec) Vec { return vecAxpy(ggnFromJVP(lin, probs, lin.JVP(v)), lambda, v) }
	}
	hook.CG = func(op func(Vec) Vec, rhs, x0 Vec, s CGSettings) (Vec, *Node, *Node) {
		r := solveCG(cgSystem{curvature: op, rhs: rhs, x0: x0}, s, false)
		return r.X, r.Iterations, r.Residual
	}
	hook.RowRHS = func(d *Direction) *Node { return d.rowRHS }
	hook.AffineMarginGram = affineMarginGram
	hook.ValidateSolve = Settings.validateSolve
}
