package gn

import (
	"testing"

	. "github.com/gomlx/gomlx/core/graph"

	"github.com/fgn-paper/fgn/fgn/backend"
	"github.com/fgn-paper/fgn/internal/compatcheck"
	"github.com/fgn-paper/fgn/internal/graphrun"
)

// The reproduction tests of the entries of compat.go, one TestCompat<Entry> each. Each passes
// while the upstream bug is present; its failure means the bug is fixed, and says which
// workaround to delete.

var testBackend = backend.MustNew()

// present reports a reproduction's outcome (see package compatcheck).
var present = compatcheck.Present

func TestCompatWhileEarlyOutputs(t *testing.T) {
	a := [][]float64{{4, 1, 0}, {1, 3, 1}, {0, 1, 2}}
	_, err := graphrun.Run(testBackend, func(a, rhs *Node) []*Node {
		g := a.Graph()
		sys := CGSystem{Curvature: func(v Vec) Vec { return Vec{MatMul(a, v[0])} }, RHS: Vec{rhs}}
		rr := VecDot(sys.RHS, sys.RHS)
		st := cgState{k: Const(g, int32(0)), x: VecZerosLike(sys.RHS), r: sys.RHS, p: sys.RHS, rr: rr,
			res2: rr, stop: Const(g, false)}
		maxIter, threshold := Const(g, int32(3)), MulScalar(rr, 1e-20)
		out := whileLoop(st, func(st cgState) *Node { return LogicalNot(st.stop) },
			func(st cgState) cgState { return cgIteration(sys, st, cgProducts{}, maxIter, threshold) })
		return out.r // an early output only
	}, a, []float64{1, 2, 3})
	present(t, compatWhileEarlyOutputs, err, "index out of range", "a graph whose only output is an early output of CG's While loop runs")
}

func TestCompatScalarCache(t *testing.T) {
	x := []float64{1, 2, 3}
	_, err := graphrun.Run(testBackend, func(x *Node) *Node {
		out := compatcheck.WhileLoop(x, func(v *Node) *Node { return MulScalar(v, 2.5) })[1]
		return MulScalar(out, 2.5) // the scalar 2.5 was first created inside the body
	}, x)
	present(t, compatScalarCache, err, "different function scope", "a scalar created in a While body and then in the main function builds")
}

// TestCompatCitations checks that every compat.go name (compatX) cited in the module's Go and
// Markdown files is an entry of a compat.go, and that every entry of this package's compat.go is
// cited.
func TestCompatCitations(t *testing.T) { compatcheck.Citations(t) }
