package fgn

import (
	"math"
	"testing"

	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"

	"github.com/fgn-paper/fgn/internal/ref"

	"github.com/fgn-paper/fgn/fgn/internal/gn"
)

// TestRowRHS checks Direction's row right-hand side = r̃ = Q^{-1/2} r against the dense margin quantities, and
// that Solution solves the whitened row system (K + bλI) u = r̃ (eq. 4.6) with K = Q^{1/2}JJᵀQ^{1/2}
// from the dense margin Jacobian, for the generic closures and the closed-form affine Gram.
func TestRowRHS(t *testing.T) {
	p := newProblem(22, 5, 6, 4, 3, 1)
	dn := runDense(t, p, false)
	for _, tc := range []struct {
		name string
		fn   func(in []*Node) *Direction
	}{
		{"matrix-free", func(in []*Node) *Direction { return fgnDir(affineLin(in), in[1], nil, matrixFree(exactCG)) }},
		{"closed-form Gram", func(in []*Node) *Direction { return fgnDir(affineLin(in), in[1], nil, exactCG) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := run(t, func(in []*Node) []*Node {
				dir := tc.fn(in)
				_, rTilde := gn.NewMargin(affineLin(in).Logits(), in[1]).Whiten()
				return []*Node{rTilde, dir.Solution[0]}
			}, p.affineInputs(dtypes.Float64)...)
			b, d := p.b, dn.d
			rTilde := make([]float64, b)
			for i := range b {
				rTilde[i] = dn.pDagger[i] / math.Sqrt(dn.q[i])
			}
			check(t, "row right-hand side vs r/√q", ref.RelErr(out[0], rTilde), 1e-14)
			u := out[1]
			ku := make([]float64, b)
			for i := range b {
				ku[i] = float64(b) * exactCG.Damping * u[i]
				for j := range b {
					var jj float64
					for k := range d {
						jj += dn.js[i*d+k] * dn.js[j*d+k]
					}
					ku[i] += math.Sqrt(dn.q[i]*dn.q[j]) * jj * u[j]
				}
			}
			check(t, "(K + bλI) Solution vs the row right-hand side", ref.RelErr(ku, rTilde), 1e-10)
		})
	}
}
