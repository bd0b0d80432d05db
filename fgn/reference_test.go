package fgn

import (
	"math"
	"testing"

	"github.com/fgn-paper/fgn/internal/ref"
	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
	"gonum.org/v1/gonum/mat"
)

// explicitAffine is an independent float64 reference for an affine head z = hW + b: it forms
// each example's logit Jacobian J_z,i (C × (dC+C), parameters θ = (vec W row-major, b)) and its
// softmax quantities on the host, from the definitions of section 2 and 3 of the paper, without
// NewMargin, NewDense or any graph.
type explicitAffine struct {
	n        int           // number of parameters dC + C
	grad     *mat.VecDense // g = (1/b) Σ_i p†_i J_s,iᵀ                (eqs. 2.5, 2.11)
	fgn, ggn *mat.SymDense // (1/b) Σ_i q_i J_s,iᵀJ_s,i (eq. 3.8); (1/b) Σ_i J_z,iᵀ(diag p − ppᵀ)J_z,i
}

func newExplicitAffine(p *problem) *explicitAffine {
	d, c := p.d, p.c
	n := d*c + c
	e := &explicitAffine{n: n, grad: mat.NewVecDense(n, nil), fgn: mat.NewSymDense(n, nil), ggn: mat.NewSymDense(n, nil)}
	inv := 1 / float64(p.b)
	for i := range p.b {
		// J_z,i: ∂z_c/∂W[k][c] = h_k, ∂z_c/∂b_c = 1.
		jz := mat.NewDense(c, n, nil)
		z := make([]float64, c)
		for cl := range c {
			z[cl] = p.bias[cl]
			for k := range d {
				z[cl] += p.h[i][k] * p.w[k][cl]
				jz.Set(cl, k*c+cl, p.h[i][k])
			}
			jz.Set(cl, d*c+cl, 1)
		}
		// Softmax by log-sum-exp; p† from the competitors' own log-sum-exp, so it keeps its
		// relative precision when p★ → 1.
		y := int(p.labels[i])
		zMax, compMax := math.Inf(-1), math.Inf(-1)
		for cl, v := range z {
			zMax = math.Max(zMax, v)
			if cl != y {
				compMax = math.Max(compMax, v)
			}
		}
		var sum, compSum float64
		for cl, v := range z {
			sum += math.Exp(v - zMax)
			if cl != y {
				compSum += math.Exp(v - compMax)
			}
		}
		probs := make([]float64, c)
		for cl, v := range z {
			probs[cl] = math.Exp(v-zMax) / sum
		}
		s := compMax + math.Log(compSum) - z[y] // s = z_† − z_★ (eq. 2.3)
		pDagger := 1 / (1 + math.Exp(-s))       // φ'(s) (eq. 2.5)
		pStar := 1 / (1 + math.Exp(s))
		// ∇_z s: ρ_j = p_j / p† off the true class, −1 at it (eq. 2.7).
		gradS := mat.NewVecDense(c, nil)
		for cl := range c {
			if cl == y {
				gradS.SetVec(cl, -1)
			} else {
				gradS.SetVec(cl, math.Exp(z[cl]-compMax)/compSum)
			}
		}
		var js mat.VecDense // J_s,iᵀ = J_z,iᵀ ∇_z s (eq. 2.9)
		js.MulVec(jz.T(), gradS)
		e.grad.AddScaledVec(e.grad, inv*pDagger, &js)
		e.fgn.SymRankOne(e.fgn, inv*pStar*pDagger, &js)
		cov := mat.NewSymDense(c, nil) // diag p − ppᵀ
		for a := range c {
			for b := a; b < c; b++ {
				v := -probs[a] * probs[b]
				if a == b {
					v += probs[a]
				}
				cov.SetSym(a, b, v)
			}
		}
		var jtCov, ggnI mat.Dense
		jtCov.Mul(jz.T(), cov)
		ggnI.Mul(&jtCov, jz)
		for a := range n {
			for b := a; b < n; b++ {
				e.ggn.SetSym(a, b, e.ggn.At(a, b)+inv*ggnI.At(a, b))
			}
		}
	}
	return e
}

// step returns the damped Gauss-Newton step −(H + λI)⁻¹g by a Cholesky solve.
func (e *explicitAffine) step(t *testing.T, h *mat.SymDense, lambda float64) []float64 {
	t.Helper()
	a := mat.NewSymDense(e.n, nil)
	a.CopySym(h)
	for k := range e.n {
		a.SetSym(k, k, a.At(k, k)+lambda)
	}
	var chol mat.Cholesky
	if !chol.Factorize(a) {
		t.Fatal("H + λI is not positive definite")
	}
	var x mat.VecDense
	if err := chol.SolveVecTo(&x, e.grad); err != nil {
		t.Fatalf("Cholesky solve: %v", err)
	}
	x.ScaleVec(-1, &x)
	return x.RawVector().Data
}

// TestSolverAgainstExplicitJacobians checks FGN's and SGN's directions against the damped
// dense solves of explicitAffine, on random and confidently misclassified batches, for each
// row operator and linearisation. The reference shares nothing with the code under test but
// the problem's numbers.
func TestSolverAgainstExplicitJacobians(t *testing.T) {
	const lambda = 0.7
	exact := Settings{Damping: lambda, CG: CGSettings{MaxIterations: 80, Tolerance: 1e-14}}
	problems := []struct {
		name string
		p    *problem
	}{
		{"random", newProblem(11, 6, 5, 4, 2, 1)},
		{"large logits", newProblem(12, 7, 4, 6, 2, 4)},
		{"confidently misclassified", confidentlyWrongProblem(13, 5, 4, []float64{5, 20, 40, 60, 200})},
	}
	directions := []struct {
		name string
		sgn  bool
		dir  func(in []*Node) *Direction
	}{
		{"FGN (closed-form Gram)", false, func(in []*Node) *Direction {
			cfg := exact
			cfg.RowOperator = ClosedFormGram
			return fgnDir(affineLin(in), in[1], nil, cfg)
		}},
		{"FGN (matrix-free)", false, func(in []*Node) *Direction {
			cfg := exact
			cfg.RowOperator = MatrixFree
			return fgnDir(affineLin(in), in[1], nil, cfg)
		}},
		{"FGN (matrix-free, autodiff)", false, func(in []*Node) *Direction {
			return fgnDir(Linearize(affineLin(in).Logits(), Vec{in[2], in[3]}), in[1], nil, exact)
		}},
		{"SGN", true, func(in []*Node) *Direction { return sgnDir(affineLin(in), in[1], nil, exact) }},
	}
	for _, pc := range problems {
		e := newExplicitAffine(pc.p)
		wantFGN, wantSGN := e.step(t, e.fgn, lambda), e.step(t, e.ggn, lambda)
		if diff := ref.RelErr(wantFGN, wantSGN); diff < 1e-3 {
			t.Fatalf("%s: the FGN and SGN references differ by only %.3g: the test could not tell the curvatures apart", pc.name, diff)
		}
		for _, dc := range directions {
			t.Run(pc.name+"/"+dc.name, func(t *testing.T) {
				out := run(t, func(in []*Node) []*Node {
					r := dc.dir(in)
					return []*Node{r.D[0], r.D[1]}
				}, pc.p.affineInputs(dtypes.Float64)...)
				got := append(out[0], out[1]...)
				want := wantFGN
				if dc.sgn {
					want = wantSGN
				}
				check(t, "direction vs explicit-Jacobian dense solve", ref.RelErr(got, want), 1e-8)
			})
		}
	}
}
