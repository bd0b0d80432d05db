package fgn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
	"gonum.org/v1/gonum/mat"

	"github.com/fgn-paper/fgn/internal/ref"
)

// affineReference holds the exact damped FGN and SGN directions of an affine-head problem,
// computed in float64 from the definitions alone (no graph code): with x_i = (h_i, 1), a_i = ∇_z s_i
// and parameters θ = (W, bias) flattened row-major,
//
//	g = (1/b) Σ x_i ⊗ (p_i − y_i),   H_FGN = (1/b) Σ q_i (x_i x_iᵀ) ⊗ (a_i a_iᵀ),
//	H_GGN = (1/b) Σ (x_i x_iᵀ) ⊗ (diag p_i − p_i p_iᵀ),
//
// and d = −(H + λI)⁻¹ g by a Cholesky factorisation, with the condition number κ of H + λI.
type affineReference struct {
	fgn, sgn         []float64
	condFGN, condSGN float64
}

func newAffineReference(t *testing.T, p *problem, lambda float64) affineReference {
	t.Helper()
	b, d, c := p.b, p.d, p.c
	n := (d + 1) * c
	grad := make([]float64, n)
	hFGN, hGGN := mat.NewSymDense(n, nil), mat.NewSymDense(n, nil)
	for i := range b {
		x := append(append([]float64(nil), p.h[i]...), 1)
		z := make([]float64, c)
		zMax := math.Inf(-1)
		for j := range c {
			z[j] = p.bias[j]
			for k := range d {
				z[j] += p.h[i][k] * p.w[k][j]
			}
			zMax = math.Max(zMax, z[j])
		}
		prob := make([]float64, c)
		var sum float64
		for j := range c {
			prob[j] = math.Exp(z[j] - zMax)
			sum += prob[j]
		}
		star := int(p.labels[i])
		var pDagger float64
		for j := range c {
			prob[j] /= sum
			if j != star {
				pDagger += prob[j]
			}
		}
		q := prob[star] * pDagger
		a := make([]float64, c)
		for j := range c {
			a[j] = prob[j] / pDagger
		}
		a[star] = -1
		for k := range d + 1 {
			for j := range c {
				y := 0.0
				if j == star {
					y = 1
				}
				grad[k*c+j] += x[k] * (prob[j] - y) / float64(b)
			}
		}
		for k := range d + 1 {
			for j := range c {
				for l := k; l < d+1; l++ {
					for m := range c {
						r, s := k*c+j, l*c+m
						if s < r {
							continue
						}
						xx := x[k] * x[l] / float64(b)
						cov := -prob[j] * prob[m]
						if j == m {
							cov += prob[j]
						}
						hFGN.SetSym(r, s, hFGN.At(r, s)+xx*q*a[j]*a[m])
						hGGN.SetSym(r, s, hGGN.At(r, s)+xx*cov)
					}
				}
			}
		}
	}
	solve := func(h *mat.SymDense) (x []float64, cond float64) {
		for k := range n {
			h.SetSym(k, k, h.At(k, k)+lambda)
		}
		var eig mat.EigenSym
		if !eig.Factorize(h, false) {
			t.Fatal("reference: eigen decomposition failed")
		}
		values := eig.Values(nil)
		var chol mat.Cholesky
		if !chol.Factorize(h) || values[0] <= 0 {
			t.Fatal("reference: H + λI is not positive definite")
		}
		neg := make([]float64, n)
		for k := range neg {
			neg[k] = -grad[k]
		}
		var sol mat.VecDense
		if err := chol.SolveVecTo(&sol, mat.NewVecDense(n, neg)); err != nil {
			t.Fatalf("reference solve: %v", err)
		}
		return sol.RawVector().Data, values[n-1] / values[0]
	}
	var r affineReference
	r.fgn, r.condFGN = solve(hFGN)
	r.sgn, r.condSGN = solve(hGGN)
	return r
}

// opaque hides a linearisation's WhileSafe method and closed-form Gram, so that CG runs unrolled
// and masked on its products (see inWhileLoop).
type opaque struct{ Linearization }

// TestCGToleranceZero runs CG with tolerance 0, so that it iterates until the cap or until it
// stops at exact convergence or breakdown, on the three row operators and solvers (FGN with the
// closed-form Gram in a While loop, FGN matrix-free and SGN each in a While loop and unrolled)
// under both stopping rules, in float32 and float64 with caps 50 and 500, on 13 random
// affine-head problems (b = 5…17). Every direction and residual must be finite, the iteration count at most the cap,
// and the direction within 100·κ·ε of the exact damped solve computed in float64 from the
// definitions (newAffineReference), κ the condition number of H + λI and ε the dtype's machine
// epsilon: the forward error of a backward-stable solve is of order κ·ε.
func TestCGToleranceZero(t *testing.T) {
	const lambda = 1.0
	type solver struct {
		name string
		sgn  bool
		dir  func(lin Linearization, labels *Node, cfg Settings) *Direction
	}
	solvers := []solver{
		{"FGN (closed-form Gram)", false, func(lin Linearization, labels *Node, cfg Settings) *Direction {
			return FGNDirection(lin, labels, nil, cfg)
		}},
		{"FGN (matrix-free)", false, func(lin Linearization, labels *Node, cfg Settings) *Direction {
			return FGNDirection(lin, labels, nil, matrixFree(cfg))
		}},
		{"FGN (matrix-free) unrolled", false, func(lin Linearization, labels *Node, cfg Settings) *Direction {
			return FGNDirection(opaque{lin}, labels, nil, matrixFree(cfg))
		}},
		{"SGN", true, func(lin Linearization, labels *Node, cfg Settings) *Direction {
			return SGNDirection(lin, labels, nil, cfg)
		}},
		{"SGN unrolled", true, func(lin Linearization, labels *Node, cfg Settings) *Direction {
			return SGNDirection(opaque{lin}, labels, nil, cfg)
		}},
	}
	rules := []StoppingRule{StopParameterResidual, StopWhitenedRowResidual}
	for _, tc := range []struct {
		dtype dtypes.DType
		eps   float64
	}{{dtypes.Float32, 0x1p-23}, {dtypes.Float64, 0x1p-52}} {
		for _, maxIter := range []int{50, 500} {
			for seed := uint64(1); seed <= 13; seed++ {
				scale := 1.0 // the parameters' scale: larger logits, more spread curvature weights
				if seed%3 == 1 {
					scale = 3
				}
				p := newProblem(seed, 4+int(seed), 3+int(seed%5), 3+int(seed%4), 2, scale)
				name := fmt.Sprintf("%s/cap=%d/seed=%d", tc.dtype, maxIter, seed)
				t.Run(name, func(t *testing.T) {
					exact := newAffineReference(t, p, lambda)
					cfg := DefaultSettings()
					cfg.Damping = lambda
					cfg.CG = CGSettings{MaxIterations: maxIter, Tolerance: 0}
					out := run(t, func(in []*Node) []*Node {
						var outs []*Node
						for _, s := range solvers {
							for _, rule := range rules {
								cfg.CG.StoppingRule = rule
								dir := s.dir(affineLin(in), in[1], cfg)
								outs = append(outs, flattenVec(dir.D), dir.Iterations, dir.Residual)
							}
						}
						return outs
					}, p.affineInputs(tc.dtype)...)
					for i, s := range solvers {
						for j, rule := range rules {
							got := out[3*(i*len(rules)+j):]
							d, its, res := got[0], got[1][0], got[2][0]
							what := fmt.Sprintf("%s, %s rule: %v iterations, residual %.3g", s.name, rule, its, res)
							want, cond := exact.fgn, exact.condFGN
							if s.sgn {
								want, cond = exact.sgn, exact.condSGN
							}
							if its > float64(maxIter) || math.IsNaN(res) || math.IsInf(res, 0) {
								t.Errorf("%s: want ≤ %d iterations and a finite residual", what, maxIter)
							}
							check(t, what+": direction vs dense (H + λI)⁻¹(−g)", ref.RelErr(d, want), 100*cond*tc.eps)
						}
					}
				})
			}
		}
	}
}

// TestCGBreakdown checks that CG stops at exact convergence, at breakdown and on overflow with
// its last iterate, in the unrolled and the While loop, under the Euclidean and the C-seminorm
// test (tolerance 0, cap 10), on diagonal systems C x = rhs whose iterates are known exactly, and
// that it reports overflow by a NaN residual.
func TestCGBreakdown(t *testing.T) {
	for _, tc := range []struct {
		name      string
		dtype     dtypes.DType
		diag, rhs []float64
		seminorm  []bool // the tests to run: Euclidean (false), C-seminorm (true; C positive semi-definite)
		x         []float64
		its       float64
		residual  float64
	}{
		// One step solves 2x = rhs exactly: r_1 = 0.
		{"exact convergence", dtypes.Float64, []float64{2, 2}, []float64{1, -3}, []bool{false, true}, []float64{0.5, -1.5}, 1, 0},
		// p_0ᵀC p_0 = 0 and < 0: no step is taken.
		{"pᵀCp = 0", dtypes.Float64, []float64{1, -1}, []float64{1, 1}, []bool{false}, []float64{0, 0}, 0, 1},
		{"pᵀCp < 0", dtypes.Float32, []float64{1, -2}, []float64{1, 1}, []bool{false}, []float64{0, 0}, 0, 1},
		// ‖r_0‖² = 2e-46 underflows to 0 in float32 while ‖r_0‖_C² = 2e-16 does not, so the
		// C-seminorm test fails: no step (the exact solution, 1e-53, is 0 in float32 too).
		{"‖r‖² underflows", dtypes.Float32, []float64{1e30, 1e30}, []float64{1e-23, 1e-23}, []bool{true}, []float64{0, 0}, 0, 1},
		// p_0ᵀC p_0 = 2e50 overflows float32: no step, and the residual reports the overflow.
		{"pᵀCp overflows", dtypes.Float32, []float64{1e30, 1e30}, []float64{1e10, 1e10}, []bool{false}, []float64{0, 0}, 0, math.NaN()},
	} {
		for _, seminorm := range tc.seminorm {
			for _, inLoop := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/seminorm=%v/while=%v", tc.name, seminorm, inLoop), func(t *testing.T) {
					out := run(t, func(in []*Node) []*Node {
						diag, rhs := in[0], in[1]
						sys := cgSystem{curvature: func(v Vec) Vec { return Vec{Mul(diag, v[0])} }, rhs: Vec{rhs}}
						if seminorm {
							sys.curvatureNorm = true
							sys.refNorm2 = ReduceAllSum(Mul(rhs, Mul(diag, rhs))) // ‖rhs‖_C²
						}
						sol := solveCG(sys, CGSettings{MaxIterations: 10}, inLoop)
						return []*Node{sol.X[0], sol.Iterations, sol.Residual}
					}, cast(tc.diag, tc.dtype), cast(tc.rhs, tc.dtype))
					residualOK := math.Abs(out[2][0]-tc.residual) <= 1e-6 || math.IsNaN(tc.residual) && math.IsNaN(out[2][0])
					if ref.RelErr(out[0], tc.x) > 1e-6 || out[1][0] != tc.its || !residualOK {
						t.Errorf("x = %v after %v iterations, residual %v; want x = %v after %v, residual %v (tolerance 1e-6)",
							out[0], out[1][0], out[2][0], tc.x, tc.its, tc.residual)
					}
				})
			}
		}
	}
}

// TestCGFactored checks CG on a system given factored, C = Lᵀ L with L (5×4) by its products:
// to convergence its iterate solves (C + σI) x = rhs (against gonum), from zero and from a warm
// start, under both tests, unrolled and in a While loop; cgResult.LX is L x for the returned x;
// the reported residual is √(eᵀC e/ref) of that x, computed on the host; and after a cap of two
// iterations it returns the iterate of the same CG given C unfactored.
func TestCGFactored(t *testing.T) {
	const n, m, sigma = 4, 5, 0.3
	rng := rand.New(rand.NewPCG(7, 8))
	l, rhs, start := ref.RandVec(rng, m*n), ref.RandVec(rng, n), ref.RandVec(rng, n)
	c := make([]float64, n*n) // Lᵀ L
	for i := range n {
		for j := range n {
			for k := range m {
				c[i*n+j] += l[k*n+i] * l[k*n+j]
			}
		}
	}
	want := denseSolve(t, c, n, sigma, rhs)
	for _, tc := range []struct {
		cap      int
		seminorm bool
		warm     bool
		inLoop   bool
	}{
		{20, false, false, false}, {20, true, false, false}, {20, true, false, true}, {20, false, true, true},
		{20, true, true, false}, {20, true, true, true}, {2, true, false, false}, {2, true, true, true}, {2, false, false, true},
	} {
		t.Run(fmt.Sprintf("cap=%d/seminorm=%v/warm=%v/while=%v", tc.cap, tc.seminorm, tc.warm, tc.inLoop), func(t *testing.T) {
			out := run(t, func(in []*Node) []*Node {
				g := in[0].Graph()
				lm := Reshape(in[0], m, n)
				factor := func(v Vec) Vec { return Vec{MatMul(lm, v[0])} }
				solve := func(factored bool) cgResult {
					sys := cgSystem{shift: Scalar(g, dtypes.Float64, sigma), rhs: Vec{in[1]}}
					if factored {
						sys.factor, sys.factorRHS = factor, factor(sys.rhs)
						sys.cofactor = func(y Vec) Vec { return Vec{MatMul(Transpose(lm, 0, 1), y[0])} }
					} else {
						sys.curvature = func(v Vec) Vec { return Vec{MatMul(Transpose(lm, 0, 1), MatMul(lm, v[0]))} }
					}
					if tc.warm {
						sys.x0 = Vec{in[2]}
					}
					if tc.seminorm {
						sys.curvatureNorm = true
						sys.refNorm2 = ReduceAllSum(Square(in[1]))
					}
					return solveCG(sys, CGSettings{MaxIterations: tc.cap, Tolerance: 1e-14}, tc.inLoop)
				}
				f, u := solve(true), solve(false)
				return []*Node{f.X[0], f.LX[0], f.Residual, u.X[0]}
			}, l, rhs, start)
			x, lx, residual, unfactored := out[0], out[1], out[2][0], out[3]
			wantLX := make([]float64, m)
			for k := range m {
				for i := range n {
					wantLX[k] += l[k*n+i] * x[i]
				}
			}
			check(t, "LX vs L x", ref.RelErr(lx, wantLX), 1e-12)
			check(t, "factored vs unfactored iterate", ref.RelErr(x, unfactored), 1e-12)
			if tc.cap == 20 {
				check(t, "x vs dense (C + σI)⁻¹ rhs", ref.RelErr(x, want), 1e-10)
				return
			}
			e := slices.Clone(rhs) // e = rhs − (C + σI) x
			for i := range n {
				e[i] -= sigma * x[i]
				for j := range n {
					e[i] -= c[i*n+j] * x[j]
				}
			}
			var num, den float64
			for i := range n {
				den += rhs[i] * rhs[i]
				for j := range n {
					num += e[i] * c[i*n+j] * e[j]
				}
			}
			if !tc.seminorm {
				num = 0
				for _, v := range e {
					num += v * v
				}
			}
			check(t, "reported residual vs host √(‖e‖²/ref)", math.Abs(residual-math.Sqrt(num/den)), 1e-12)
		})
	}
}

// TestCGGradientStart checks CG's gradient start (cgSystem.gradientStart) on C = Lᵀ L (L 5×4),
// given factored and unfactored, unrolled and in a While loop, from zero and from a warm start
// (which the start replaces): run to convergence, x₀ + X with x₀ = rhs/σ solves (C + σI) x = rhs
// (against gonum) and LX = L(x₀ + X); the first iteration is the restart, so with a cap of one
// iteration x = x₀ exactly (X = 0, LX = L rhs/σ); and a start that does not hold (false) gives
// bit-identical results to a system without one.
func TestCGGradientStart(t *testing.T) {
	const n, m, sigma = 4, 5, 0.3
	rng := rand.New(rand.NewPCG(9, 10))
	l, rhs, warm := ref.RandVec(rng, m*n), ref.RandVec(rng, n), ref.RandVec(rng, n)
	c := make([]float64, n*n) // Lᵀ L
	for i := range n {
		for j := range n {
			for k := range m {
				c[i*n+j] += l[k*n+i] * l[k*n+j]
			}
		}
	}
	want := denseSolve(t, c, n, sigma, rhs)
	times := func(x []float64) []float64 { // L x
		out := make([]float64, m)
		for k := range m {
			for i := range n {
				out[k] += l[k*n+i] * x[i]
			}
		}
		return out
	}
	for _, factored := range []bool{true, false} {
		for _, inLoop := range []bool{false, true} {
			for _, x0 := range []bool{false, true} {
				t.Run(fmt.Sprintf("factored=%v/while=%v/warm=%v", factored, inLoop, x0), func(t *testing.T) {
					out := run(t, func(in []*Node) []*Node {
						g := in[0].Graph()
						lm := Reshape(in[0], m, n)
						solve := func(start *Node, maxIter int) cgResult {
							sys := cgSystem{shift: Scalar(g, dtypes.Float64, sigma), rhs: Vec{in[1]}, gradientStart: start,
								curvatureNorm: true, refNorm2: ReduceAllSum(Square(in[1]))}
							factor := func(v Vec) Vec { return Vec{MatMul(lm, v[0])} }
							cofactor := func(y Vec) Vec { return Vec{MatMul(Transpose(lm, 0, 1), y[0])} }
							if factored {
								sys.factor, sys.cofactor, sys.factorRHS = factor, cofactor, factor(sys.rhs)
							} else {
								sys.curvature = func(v Vec) Vec { return cofactor(factor(v)) }
							}
							if x0 {
								sys.x0 = Vec{in[2]}
							}
							return solveCG(sys, CGSettings{MaxIterations: maxIter, Tolerance: 1e-14}, inLoop)
						}
						yes, no := Const(g, true), Const(g, false)
						conv, one, off, none := solve(yes, 30), solve(yes, 1), solve(no, 30), solve(nil, 30)
						outs := []*Node{conv.X[0], ConvertDType(conv.FromGradientStart, dtypes.Float64), one.X[0],
							ConvertDType(one.FromGradientStart, dtypes.Float64), off.X[0], none.X[0], off.Residual, none.Residual}
						if factored {
							outs = append(outs, conv.LX[0], one.LX[0], off.LX[0], none.LX[0])
						}
						return outs
					}, l, rhs, warm)
					x0 := make([]float64, n)
					for i := range x0 {
						x0[i] = rhs[i] / sigma
					}
					x := make([]float64, n)
					for i := range x {
						x[i] = x0[i] + out[0][i]
					}
					check(t, "x₀ + X vs dense (C + σI)⁻¹ rhs", ref.RelErr(x, want), 1e-10)
					if out[1][0] != 1 || out[3][0] != 1 {
						t.Errorf("FromGradientStart = %v (converged), %v (one iteration), want true", out[1][0], out[3][0])
					}
					check(t, "X after one iteration (the restart)", ref.MaxAbs(out[2]), 0)
					if !equalBits(out[4], out[5]) || !equalBits(out[6], out[7]) {
						t.Errorf("a start that does not hold changed the solution: %v, residual %v; without one %v, %v",
							out[4], out[6], out[5], out[7])
					}
					if factored {
						check(t, "LX vs L(x₀ + X)", ref.RelErr(out[8], times(x)), 1e-12)
						check(t, "LX after the restart vs L x₀", ref.RelErr(out[9], times(x0)), 1e-14)
						if !equalBits(out[10], out[11]) {
							t.Errorf("a start that does not hold changed LX: %v, without one %v", out[10], out[11])
						}
					}
				})
			}
		}
	}
}

// counting is a linearisation, unrolled as opaque, that counts the products a direction builds.
type counting struct {
	opaque
	vjps, jvps int
}

func (c *counting) VJP(m *Node) Vec { c.vjps++; return c.Linearization.VJP(m) }
func (c *counting) JVP(v Vec) *Node { c.jvps++; return c.Linearization.JVP(v) }

// TestStepProducts checks the paper's cost accounting (appendix "Cost accounting") on the products
// a direction builds, CG unrolled so that every iteration is built: with CG capped at N iterations
// and started from zero, FGN (matrix-free) builds N JVPs and N + 1 VJPs under the parameter rule
// (CG's products; its first VJP J̃ᵀr̃ is also the rule's reference, its first JVP K r̃ also gives the
// curvature scale μ, and the back-projection is accumulated from them) and N VJPs under the
// whitened-row rule, which needs no product of CG's last direction; SGN builds N JVPs and N + 1
// VJPs (the gradient).
func TestStepProducts(t *testing.T) {
	p := newProblem(3, 6, 5, 4, 2, 1)
	for _, tc := range []struct {
		name string
		dir  func(lin Linearization, labels *Node, cfg Settings) *Direction
	}{
		{"FGN (matrix-free)", func(lin Linearization, labels *Node, cfg Settings) *Direction {
			return FGNDirection(lin, labels, nil, matrixFree(cfg))
		}},
		{"SGN", func(lin Linearization, labels *Node, cfg Settings) *Direction {
			return SGNDirection(lin, labels, nil, cfg)
		}},
	} {
		for _, rule := range []StoppingRule{StopParameterResidual, StopWhitenedRowResidual} {
			for _, n := range []int{1, 5} {
				t.Run(fmt.Sprintf("%s/%v/N=%d", tc.name, rule, n), func(t *testing.T) {
					var lin *counting
					run(t, func(in []*Node) []*Node {
						lin = &counting{opaque: opaque{affineLin(in)}}
						cfg := Settings{Damping: 1, CG: CGSettings{MaxIterations: n, Tolerance: 1e-5, StoppingRule: rule}}
						return []*Node{flattenVec(tc.dir(lin, in[1], cfg).D)}
					}, p.affineInputs(dtypes.Float64)...)
					// The whitened-row rule tests no parameter-space residual, so FGN (matrix-free)
					// makes no VJP of the last direction: N_CG VJPs, the back-projection accumulated
					// from them.
					vjps := n + 1
					if tc.name == "FGN (matrix-free)" && rule == StopWhitenedRowResidual {
						vjps = n
					}
					if lin.jvps != n || lin.vjps != vjps {
						t.Errorf("built %d JVPs and %d VJPs, want %d and %d", lin.jvps, lin.vjps, n, vjps)
					}
				})
			}
		}
	}
}
