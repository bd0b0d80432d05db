package jvp

import (
	"math/rand/v2"
	"slices"
	"testing"

	. "github.com/gomlx/gomlx/core/graph"

	"github.com/fgn-paper/fgn/internal/ref"
)

// TestSubstitute checks that Substitute evaluates f(w) = 3 tanh(x w) + c, c not depending on w,
// at another point w' as the graph built on w' computes it (to the bit), and that Dependents
// lists the nodes between w and the output, each after its inputs, and none of the others.
func TestSubstitute(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 5))
	out := run(t, func(in []*Node) []*Node {
		x, w, w2 := in[0], in[1], in[2]
		c := Exp(Slice(x, AxisRange(), AxisRange(0, 2)))
		f := func(w *Node) *Node { return Add(MulScalar(Tanh(MatMul(x, w)), 3), c) }
		y := f(w)
		between := Dependents([]*Node{y}, []*Node{w})
		want := []NodeType{NodeTypeDotGeneral, NodeTypeTanh, NodeTypeMul, NodeTypeAdd}
		var got []NodeType
		for _, n := range between {
			if n.Type() != NodeTypeConstant && n.Type() != NodeTypeBroadcastInDim {
				got = append(got, n.Type())
			}
			if n == c || n == x || n == w {
				t.Errorf("Dependents lists %s, which does not depend on w or is w", n)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("Dependents lists the ops %v, want %v", got, want)
		}
		if between[len(between)-1] != y {
			t.Errorf("Dependents does not end with the output")
		}
		return []*Node{Substitute([]*Node{y}, []*Node{w}, []*Node{w2})[0], f(w2)}
	}, ref.RandMatrix(rng, 4, 3, 1), ref.RandMatrix(rng, 3, 2, 1), ref.RandMatrix(rng, 3, 2, 1))
	ref.Check(t, "Substitute(f, w') vs f(w') (relative)", ref.RelErr(out[0], out[1]), 0)
}
