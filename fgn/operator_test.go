package fgn

import (
	"math"
	"testing"

	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"

	"github.com/fgn-paper/fgn/internal/ref"
)

// TestFGNOperator checks the parameter-space product (H_FGN + λI) v of FGNOperator against the
// dense H_FGN = (1/b) Jᵀ Q J of NewDense, for v the batch gradient (any parameter-shaped vector).
func TestFGNOperator(t *testing.T) {
	p := newProblem(21, 6, 4, 5, 3, 1)
	for _, tc := range []struct {
		name   string
		mlp    bool
		lambda float64
	}{
		{"affine, λ=0", false, 0},
		{"affine, λ=0.7", false, 0.7},
		{"mlp, λ=0", true, 0},
		{"mlp, λ=0.7", true, 0.7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lin, inputs := affineLin, p.affineInputs(dtypes.Float64)
			if tc.mlp {
				lin, inputs = mlpLin, p.mlpInputs(dtypes.Float64)
			}
			dn := runDense(t, p, tc.mlp)
			out := run(t, func(in []*Node) []*Node {
				l := lin(in)
				_, grad := LossGradient(l, in[1])
				op := FGNOperator(l, in[1], Scalar(in[0].Graph(), dtypes.Float64, tc.lambda))
				return []*Node{flattenVec(op(grad))}
			}, inputs...)
			want := make([]float64, dn.d)
			for r := range dn.d {
				want[r] = tc.lambda * dn.grad[r]
				for c := range dn.d {
					want[r] += dn.fgn[r*dn.d+c] * dn.grad[c]
				}
			}
			check(t, "FGNOperator(g) vs dense (H_FGN+λI) g", ref.RelErr(out[0], want), 1e-13)
		})
	}
}

// TestRowRHS checks Direction.RowRHS = r̃ = Q^{-1/2} r against the dense margin quantities, and
// that Solution solves the whitened row system (K + bλI) u = r̃ (eq. 4.6) with K = Q^{1/2}JJᵀQ^{1/2}
// from the dense margin Jacobian, for the generic closures and the closed-form affine Gram.
func TestRowRHS(t *testing.T) {
	p := newProblem(22, 5, 6, 4, 3, 1)
	dn := runDense(t, p, false)
	for _, tc := range []struct {
		name string
		fn   func(in []*Node) *Direction
	}{
		{"matrix-free", func(in []*Node) *Direction { return FGNDirection(affineLin(in), in[1], nil, matrixFree(exactCG)) }},
		{"closed-form Gram", func(in []*Node) *Direction { return FGNDirection(affineLin(in), in[1], nil, exactCG) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := run(t, func(in []*Node) []*Node {
				dir := tc.fn(in)
				return []*Node{dir.RowRHS, dir.Solution[0]}
			}, p.affineInputs(dtypes.Float64)...)
			b, d := p.b, dn.d
			rTilde := make([]float64, b)
			for i := range b {
				rTilde[i] = dn.pDagger[i] / math.Sqrt(dn.q[i])
			}
			check(t, "RowRHS vs r/√q", ref.RelErr(out[0], rTilde), 1e-14)
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
			check(t, "(K + bλI) Solution vs RowRHS", ref.RelErr(ku, rTilde), 1e-10)
		})
	}
}
