package fgn

import (
	"math"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"

	"github.com/fgn-paper/fgn/internal/ref"

	"github.com/fgn-paper/fgn/fgn/internal/gn"
)

// denseOut runs newDense for an MLP or affine problem and returns its fields as flat slices.
type denseOut struct {
	jz, js, grad, cov, kept, droppedOut, ggn, fgn, dropped, q, pDagger, rho, xi []float64
	d                                                                           int
}

func runDense(t *testing.T, p *problem, mlp bool) denseOut {
	lin, inputs := affineLin, p.affineInputs(dtypes.Float64)
	if mlp {
		lin, inputs = mlpLin, p.mlpInputs(dtypes.Float64)
	}
	out := run(t, func(in []*Node) []*Node {
		dn, m := newDense(lin(in), in[1])
		return []*Node{dn.JZ, dn.JS, dn.Grad, dn.Cov, dn.Kept, dn.DroppedOut, dn.GGN, dn.FGN, dn.Dropped,
			m.Q, m.PDagger, m.Rho, m.Xi}
	}, inputs...)
	return denseOut{jz: out[0], js: out[1], grad: out[2], cov: out[3], kept: out[4], droppedOut: out[5],
		ggn: out[6], fgn: out[7], dropped: out[8], q: out[9], pDagger: out[10], rho: out[11], xi: out[12],
		d: len(out[2])}
}

// TestTheorem31 checks the decomposition of the softmax covariance (eq. 3.3) per example and
// of the GGN in parameter space (eq. 3.4), for an MLP and an affine head.
func TestTheorem31(t *testing.T) {
	for _, tc := range []struct {
		name string
		mlp  bool
	}{{"affine", false}, {"mlp", true}} {
		t.Run(tc.name, func(t *testing.T) {
			p := newProblem(3, 4, 3, 5, 4, 1)
			dn := runDense(t, p, tc.mlp)
			sum := make([]float64, len(dn.cov))
			for i := range sum {
				sum[i] = dn.kept[i] + dn.droppedOut[i]
			}
			check(t, "output space: diag(p)−ppᵀ = kept + dropped", ref.RelErr(sum, dn.cov), 1e-13)
			sum = make([]float64, len(dn.ggn))
			for i := range sum {
				sum[i] = dn.fgn[i] + dn.dropped[i]
			}
			check(t, "parameter space: H_GGN = H_FGN + dropped", ref.RelErr(sum, dn.ggn), 1e-12)
		})
	}
}

// TestProposition32 checks items 1-4 of Proposition 3.2 and the bounds and trace of ξ.
func TestProposition32(t *testing.T) {
	t.Run("PSD ordering", func(t *testing.T) {
		dn := runDense(t, newProblem(4, 3, 3, 6, 4, 1), true)
		fgnEig := symEigen(t, dn.fgn, dn.d)
		gapEig := symEigen(t, sub(dn.ggn, dn.fgn), dn.d)
		scale := ref.MaxAbs(symEigen(t, dn.ggn, dn.d))
		check(t, "λ_min(H_FGN) ≥ 0", math.Max(0, -fgnEig[0])/scale, 1e-13)
		check(t, "λ_min(H_GGN − H_FGN) ≥ 0", math.Max(0, -gapEig[0])/scale, 1e-13)
	})
	t.Run("binary exactness", func(t *testing.T) {
		dn := runDense(t, newProblem(5, 4, 3, 2, 4, 1), true)
		check(t, "C=2: H_FGN = H_GGN", ref.RelErr(dn.fgn, dn.ggn), 1e-13)
	})
	t.Run("one-hot limit", func(t *testing.T) {
		// Competitor logits at least 798 apart: every entry of ρ but one is below e^{−798}
		// (≈ 1e-347), so ξ and the dropped covariance are, below the float64 range. A backend
		// may return a tiny normal number instead of underflowing to 0 (the pure-Go backend's
		// vectorised Exp gives the smallest normal, 2.2e-308); 1e-300 tells both from a ρ
		// that is not one-hot.
		logits := [][]float64{{0, 1, -800, -900}, {-850, 2, 0, -900}}
		labels := []int32{0, 1}
		out := run(t, func(in []*Node) []*Node {
			m := gn.NewMargin(in[0], in[1])
			cov := Sub(Mul(ExpandAxes(m.Rho, -1), ExpandAxes(ConvertDType(Equal(Iota(in[0].Graph(), shapes.Make(dtypes.Int32, 4, 4), 0),
				Iota(in[0].Graph(), shapes.Make(dtypes.Int32, 4, 4), 1)), dtypes.Float64), 0)),
				Mul(ExpandAxes(m.Rho, -1), ExpandAxes(m.Rho, 1)))
			return []*Node{m.Xi, cov}
		}, logits, labels)
		check(t, "ρ one-hot ⇒ ξ = 0", ref.MaxAbs(out[0]), 1e-300)
		check(t, "ρ one-hot ⇒ dropped covariance = 0", ref.MaxAbs(out[1]), 1e-300)
	})
	t.Run("gap formula and ξ", func(t *testing.T) {
		p := newProblem(6, 3, 2, 5, 3, 1)
		dn := runDense(t, p, true)
		c, d := p.c, dn.d
		gap := make([]float64, d*d)
		for i := range p.b {
			jz := dn.jz[i*c*d : (i+1)*c*d]
			rho := dn.rho[i*c : (i+1)*c]
			mean := make([]float64, d)
			for j := range c {
				for k := range d {
					mean[k] += rho[j] * jz[j*d+k]
				}
			}
			for j := range c { // ρ_j = 0 at the true class, so it drops out of the sum.
				for k := range d {
					for l := range d {
						gap[k*d+l] += dn.pDagger[i] * rho[j] * (jz[j*d+k] - mean[k]) * (jz[j*d+l] - mean[l]) / float64(p.b)
					}
				}
			}
			trace := 0.0
			for j := range c {
				trace += dn.droppedOut[i*c*c+j*c+j]
			}
			check(t, "trace of dropped output term = p†ξ", math.Abs(trace-dn.pDagger[i]*dn.xi[i]), 1e-15)
			if dn.xi[i] < 0 || dn.xi[i] > 1-1/float64(c-1) {
				t.Errorf("ξ = %g outside [0, 1−1/(C−1)]", dn.xi[i])
			}
		}
		check(t, "H_GGN − H_FGN = p† Σ ρ_j (J_j − J̄)ᵀ(J_j − J̄)", ref.RelErr(sub(dn.ggn, dn.fgn), gap), 1e-12)
	})
}

// TestBatchedIdentities checks g = Jᵀr/b and H_FGN = JᵀQJ/b (eq. 3.8) against the library's
// Margin.Gradient and the matrix-free FGN row operator.
func TestBatchedIdentities(t *testing.T) {
	p := newProblem(7, 5, 3, 4, 3, 1)
	dn := runDense(t, p, true)
	d := dn.d
	out := run(t, func(in []*Node) []*Node {
		lin := mlpLin(in)
		grad := gn.NewMargin(lin.Logits(), in[1]).Gradient(lin)
		return []*Node{flattenVec(grad)}
	}, p.mlpInputs(dtypes.Float64)...)
	jtr := make([]float64, d)
	hq := make([]float64, d*d)
	for i := range p.b {
		row := dn.js[i*d : (i+1)*d]
		for k := range d {
			jtr[k] += row[k] * dn.pDagger[i] / float64(p.b)
			for l := range d {
				hq[k*d+l] += dn.q[i] * row[k] * row[l] / float64(p.b)
			}
		}
	}
	check(t, "g = Jᵀr/b (Margin.Gradient)", ref.RelErr(out[0], jtr), 1e-13)
	check(t, "g = Jᵀr/b (dense J_zᵀ(p−y)/b)", ref.RelErr(dn.grad, jtr), 1e-13)
	check(t, "H_FGN = JᵀQJ/b", ref.RelErr(dn.fgn, hq), 1e-13)
}
