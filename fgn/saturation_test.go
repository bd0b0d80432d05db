package fgn

import (
	"math"
	"testing"

	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"

	"github.com/fgn-paper/fgn/internal/ref"
)

// TestSaturatedStep checks that with margins |s| up to ~1e4 in float32, where q underflows to 0
// and Q^{-1/2}r would overflow, the FGN step stays finite and still solves the damped system:
// it matches the float64 dense solve of (H_FGN + λI) d = −g: the floor q_min = ε² that the
// whitening puts under q perturbs the curvature below float32's resolution.
func TestSaturatedStep(t *testing.T) {
	p := newProblem(16, 6, 5, 4, 2, 1)
	// Scale two examples so their margins reach the thousands, with opposite signs.
	for k := range p.d {
		p.h[0][k] *= 3e3
		p.h[3][k] *= -3e3
	}
	dn := runDense(t, p, false)
	margins := run(t, func(in []*Node) []*Node {
		return []*Node{NewMargin(affineLin(in).Logits(), in[1]).S}
	}, p.affineInputs(dtypes.Float64)...)[0]
	t.Logf("margins: %.4g", margins)
	if math.Max(math.Abs(margins[0]), math.Abs(margins[3])) < 1e3 {
		t.Fatalf("test problem is not saturated: margins %v", margins)
	}
	want := denseFGNStep(t, dn, 1)
	cfg := Settings{Damping: 1, CG: CGSettings{MaxIterations: 20, Tolerance: 0}}
	for _, tc := range []struct {
		name string
		fn   func(in []*Node) *Direction
	}{
		{"generic", func(in []*Node) *Direction {
			return FGNDirection(Linearize(affineLin(in).Logits(), Vec{in[2], in[3]}), in[1], nil, cfg)
		}},
		{"matrix-free", func(in []*Node) *Direction { return FGNDirection(affineLin(in), in[1], nil, matrixFree(cfg)) }},
		{"closed form", func(in []*Node) *Direction {
			return FGNDirection(affineLin(in), in[1], nil, cfg)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := run(t, func(in []*Node) []*Node {
				dir := tc.fn(in)
				return []*Node{flattenVec(dir.D), dir.Loss}
			}, p.affineInputs(dtypes.Float32)...)
			for _, v := range append(out[0], out[1]...) {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					t.Fatalf("non-finite step or loss: %v", out)
				}
			}
			check(t, "float32 saturated step vs float64 dense solve", ref.RelErr(out[0], want), 1e-5)
		})
	}
}
