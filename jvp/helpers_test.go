package jvp

import (
	"testing"

	. "github.com/gomlx/gomlx/core/graph"

	"github.com/fgn-paper/fgn/fgn/backend"
	"github.com/fgn-paper/fgn/internal/graphrun"
)

// testBackend is the backend GOMLX_BACKEND selects, the pure-Go backend by default.
var testBackend = backend.MustNew()

// run compiles and runs fn on the test backend and returns its outputs as flat float64 slices.
func run(t testing.TB, fn func(in []*Node) []*Node, inputs ...any) [][]float64 {
	t.Helper()
	return graphrun.MustRun(t, testBackend, fn, inputs...)
}

func countType(nodes []*Node, typ NodeType) int { return len(nodesOfType(nodes, typ)) }

func nodesOfType(nodes []*Node, typ NodeType) []*Node {
	var out []*Node
	for _, n := range nodes {
		if n.Type() == typ {
			out = append(out, n)
		}
	}
	return out
}
