package fgn

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
	"gonum.org/v1/gonum/mat"

	"github.com/fgn-paper/fgn/internal/ref"
)

// saturatedProblem is the b = 16, d = 8, C = 10 affine problem of the saturated-row tests with
// the features of every row (all) or of every other row (otherwise) multiplied by scale, so that
// those rows' margins |s| reach about scale and their curvature weights q underflow, while their
// Jacobian rows ‖J_i‖ ≈ scale are large.
func saturatedProblem(scale float64, all bool) *problem {
	p := newProblem(41, 16, 8, 10, 0, 1)
	for i := range p.h {
		if all || i%2 == 0 {
			for k := range p.h[i] {
				p.h[i][k] *= scale
			}
		}
	}
	return p
}

// TestSaturatedStep checks that with saturated rows the FGN direction of every path (closed-form
// Gram, matrix-free, autodiff, and the optimizer's step) agrees with the dense damped solve
// −(H_FGN + λI)⁻¹g of explicitAffine, the independent float64 reference: to 1e-12 relative in
// float64 and 1e-4 in float32, with features ×1 to ×1e12 (margins as large, q_i below every
// dtype's range from ×1e4 on, ‖J_i‖ ≈ the scale) on every row or on every other row. λ is 1e-3 of
// H_FGN's largest eigenvalue (1e-4 at least), so that H_FGN + λI has a condition number of at
// most about 1e3 and float32's forward error stays below its tolerance. With every row saturated
// the reference is −g/λ; with every other row saturated the others' curvature couples the
// saturated rows' gradient into the step. A floor q_min under q would add q_min‖J_i‖²/(bλ) per
// saturated row to the curvature, far above both tolerances from ×1e4 on.
func TestSaturatedStep(t *testing.T) {
	type path struct {
		name string
		dir  func(in []*Node, cfg Settings) *Direction
	}
	paths := []path{
		{"closed-form Gram", func(in []*Node, cfg Settings) *Direction { return FGNDirection(affineLin(in), in[1], nil, cfg) }},
		{"matrix-free", func(in []*Node, cfg Settings) *Direction {
			return FGNDirection(affineLin(in), in[1], nil, matrixFree(cfg))
		}},
		{"matrix-free, autodiff", func(in []*Node, cfg Settings) *Direction {
			return FGNDirection(Linearize(affineLin(in).Logits(), Vec{in[2], in[3]}), in[1], nil, cfg)
		}},
	}
	for _, scale := range []float64{1, 1e1, 1e2, 1e3, 1e4, 1e6, 1e8, 1e12} {
		for _, all := range []bool{true, false} {
			p := saturatedProblem(scale, all)
			rows := "all rows"
			if !all {
				rows = "every other row"
			}
			e := newExplicitAffine(p)
			var eig mat.EigenSym
			if !eig.Factorize(e.fgn, false) {
				t.Fatal("eigen decomposition failed")
			}
			lambda := math.Max(1e-4, 1e-3*slices.Max(eig.Values(nil)))
			want := e.step(t, e.fgn, lambda)
			margins := run(t, func(in []*Node) []*Node { return []*Node{NewMargin(affineLin(in).Logits(), in[1]).S} },
				p.affineInputs(dtypes.Float64)...)[0]
			saturated := 0 // rows whose q is below float32's floor ε², e^{−|s|} < 1.4e-14
			for _, s := range margins {
				if math.Abs(s) > 32 {
					saturated++
				}
			}
			t.Logf("×%g, %s: λ = %.3g, %d rows with q below float32's saturation floor", scale, rows, lambda, saturated)
			if scale >= 1e4 && !(all && saturated == p.b || !all && saturated == p.b/2) {
				t.Fatalf("×%g, %s: %d rows have |s| > 32 (margins %.3g): the test problem is not saturated as intended",
					scale, rows, saturated, margins)
			}
			cfg := Settings{Damping: lambda, CG: CGSettings{MaxIterations: 50, Tolerance: 0}}
			for _, dtype := range []dtypes.DType{dtypes.Float64, dtypes.Float32} {
				tol := 1e-12
				if dtype == dtypes.Float32 {
					tol = 1e-4
				}
				for _, pc := range paths {
					t.Run(fmt.Sprintf("×%g/%s/%s/%s", scale, rows, dtype, pc.name), func(t *testing.T) {
						out := run(t, func(in []*Node) []*Node {
							return []*Node{flattenVec(pc.dir(in, cfg).D)}
						}, p.affineInputs(dtype)...)
						check(t, "direction vs float64 dense solve", ref.RelErr(out[0], want), tol)
					})
				}
				t.Run(fmt.Sprintf("×%g/%s/%s/optimizer", scale, rows, dtype), func(t *testing.T) {
					m := newOptModelOf(p, false, false, dtype)
					before := m.flatParams()
					m.step(t, FGN().WithSettings(cfg).LearningRate(1).DampingPolicy(ConstantDamping{}).Done(), p, 1)
					check(t, "w⁺ − w vs float64 dense solve", ref.RelErr(sub(m.flatParams(), before), want), tol)
				})
			}
		}
	}
}
