package fgn

import (
	"math"
	"testing"

	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/layers"
	"github.com/gomlx/gomlx/ml/layers/activation"
	"github.com/gomlx/gomlx/ml/layers/regularizer"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train"
	"github.com/gomlx/gomlx/ml/train/optimizer"
	"gonum.org/v1/gonum/mat"

	"github.com/fgn-paper/fgn/internal/ref"
)

// regCase is a set of GoMLX regularisers on the affine head's W and bias, with the host-side
// gradient and per-entry Hessian of their sum R, the independent reference of the tests below
// (W row-major d×C, then the bias, as explicitAffine lays out the parameters).
type regCase struct {
	name  string
	apply func(g *Graph, w, bias *model.Variable) // adds the regularisation losses
	// grad returns ∇R at (W, bias) flattened; hessian the diagonal of R's Hessian where it exists.
	grad    func(p *problem) []float64
	hessian func(p *problem) []float64
	value   func(w [][]float64, bias []float64) float64
}

// regCases are GoMLX's L2 (regularizer.L2 on W, on W and bias with another amount), L1
// (regularizer.L1 on W), KAN's ConstantL1 (consecutive differences of W along the classes) and
// L2 with L1 together (regularizer.Combine).
var regCases = func() []regCase {
	const l2, l2b, l1, cl1 = 0.05, 0.3, 0.01, 0.02
	entries := func(p *problem, f func(k, c int) float64, b func(c int) float64) []float64 {
		out := make([]float64, 0, (p.d+1)*p.c)
		for k := range p.d {
			for c := range p.c {
				out = append(out, f(k, c))
			}
		}
		for c := range p.c {
			out = append(out, b(c))
		}
		return out
	}
	zero := func(int) float64 { return 0 }
	sign := func(x float64) float64 {
		switch {
		case x > 0:
			return 1
		case x < 0:
			return -1
		}
		return 0
	}
	l2W := regCase{"L2 on W", func(g *Graph, w, _ *model.Variable) { regularizer.L2(l2)(g, w) },
		func(p *problem) []float64 {
			return entries(p, func(k, c int) float64 { return 2 * l2 * p.w[k][c] }, zero)
		},
		func(p *problem) []float64 { return entries(p, func(int, int) float64 { return 2 * l2 }, zero) },
		func(w [][]float64, _ []float64) float64 {
			var s float64
			for _, row := range w {
				for _, x := range row {
					s += l2 * x * x
				}
			}
			return s
		}}
	l1W := regCase{"L1 on W", func(g *Graph, w, _ *model.Variable) { regularizer.L1(l1)(g, w) },
		func(p *problem) []float64 {
			return entries(p, func(k, c int) float64 { return l1 * sign(p.w[k][c]) }, zero)
		},
		func(p *problem) []float64 { return entries(p, func(int, int) float64 { return 0 }, zero) },
		func(w [][]float64, _ []float64) float64 {
			var s float64
			for _, row := range w {
				for _, x := range row {
					s += l1 * math.Abs(x)
				}
			}
			return s
		}}
	return []regCase{
		l2W,
		{"L2 on W and on bias", func(g *Graph, w, bias *model.Variable) {
			regularizer.L2(l2)(g, w)
			regularizer.L2(l2b)(g, bias)
		},
			func(p *problem) []float64 {
				return entries(p, func(k, c int) float64 { return 2 * l2 * p.w[k][c] }, func(c int) float64 { return 2 * l2b * p.bias[c] })
			},
			func(p *problem) []float64 {
				return entries(p, func(int, int) float64 { return 2 * l2 }, func(int) float64 { return 2 * l2b })
			},
			func(w [][]float64, bias []float64) float64 {
				s := l2W.value(w, nil)
				for _, x := range bias {
					s += l2b * x * x
				}
				return s
			}},
		l1W,
		{"ConstantL1 on W", func(g *Graph, w, _ *model.Variable) { regularizer.ConstantL1(cl1)(g, w) },
			func(p *problem) []float64 {
				return entries(p, func(k, c int) float64 {
					var grad float64
					if c > 0 {
						grad += cl1 * sign(p.w[k][c]-p.w[k][c-1])
					}
					if c < p.c-1 {
						grad -= cl1 * sign(p.w[k][c+1]-p.w[k][c])
					}
					return grad
				}, zero)
			},
			func(p *problem) []float64 { return entries(p, func(int, int) float64 { return 0 }, zero) },
			func(w [][]float64, _ []float64) float64 {
				var s float64
				for _, row := range w {
					for c := 1; c < len(row); c++ {
						s += math.Abs(cl1 * (row[c] - row[c-1]))
					}
				}
				return s
			}},
		{"L2 and L1 on W", func(g *Graph, w, _ *model.Variable) {
			regularizer.Combine(regularizer.L2(l2), regularizer.L1(l1))(g, w)
		},
			func(p *problem) []float64 {
				a, b := l2W.grad(p), l1W.grad(p)
				for i := range a {
					a[i] += b[i]
				}
				return a
			},
			l2W.hessian,
			func(w [][]float64, bias []float64) float64 { return l2W.value(w, bias) + l1W.value(w, bias) }},
	}
}()

// regularisedStep builds the Trainer's step graph by hand on the affine head of m's variables
// (recorded as lin makes it: the head itself, its autodiff linearisation, or none for the head the
// optimizer recognises) with the regularisers of rc, and returns the optimizer's direction and
// damping telemetry; the loss to minimise is train.TotalLoss, fgn.Loss plus the regularisation
// losses, as the Trainer hands it over.
func (m *optModel) regularisedStep(t *testing.T, opt Optimizer, p *problem, rc regCase,
	lin func(head *AffineHead) Linearization) (d []float64, predicted, actual, tau float64) {
	t.Helper()
	exec := model.MustNewExec(testBackend, m.store, func(scope *model.Scope, h, labels *Node) []*Node {
		g := h.Graph()
		scope.Store().SetTraining(g, true)
		head := NewAffineHead(h, m.vars[0].NodeValue(g), m.vars[1].NodeValue(g))
		logits := head.Logits()
		if l := lin(head); l != nil {
			RecordLinearization(l)
			logits = l.Logits()
		}
		rc.apply(g, m.vars[0], m.vars[1])
		train.AddMainLoss(Loss([]*Node{labels}, []*Node{logits}))
		rec := recordOf(g)
		gn := opt.(*gnOptimizer)
		l, _ := gn.linearization(scope, g, rec)
		dir := gn.step(scope, l, rec.labels, recogniseRegularisation(lossTerms(train.TotalLoss(g), rec.loss, "test"), l.Params(), "test"))
		tau := dir.StepLength
		if tau == nil {
			tau = OnesLike(dir.Loss)
		}
		out := []*Node{flattenVec(dir.D), tau}
		if dir.Damping.Predicted != nil {
			out = append(out, dir.Damping.Predicted, dir.Damping.Actual)
		}
		return out
	})
	out, err := exec.Call(p.h, p.labels)
	if err != nil {
		t.Fatalf("%+v", err)
	}
	d, tau = flat64(out[0]), flat64(out[1])[0]
	if len(out) == 4 {
		predicted, actual = flat64(out[2])[0], flat64(out[3])[0]
	}
	return d, predicted, actual, tau
}

// denseProblem is a named batch of the dense damped-step tests.
type denseProblem struct {
	name string
	p    *problem
}

// denseStepProblems returns the batches of the dense damped-step tests: a random one, and the same
// with every other row saturated (features ×1e4: FGN's gradient start).
func denseStepProblems() []denseProblem {
	random := newProblem(51, 7, 5, 4, 0, 1)
	saturated := newProblem(51, 7, 5, 4, 0, 1)
	for i := 0; i < saturated.b; i += 2 {
		for k := range saturated.h[i] {
			saturated.h[i][k] *= 1e4
		}
	}
	return []denseProblem{{"random", random}, {"saturated", saturated}}
}

// noRegulariser is the regCase of a loss without regularisation terms.
var noRegulariser = regCase{name: "no regulariser", apply: func(*Graph, *model.Variable, *model.Variable) {},
	grad:    func(p *problem) []float64 { return make([]float64, (p.d+1)*p.c) },
	hessian: func(p *problem) []float64 { return make([]float64, (p.d+1)*p.c) }}

// stepAssembly is one way of building a damped step on an affine head: an optimizer configuration
// and the linearisation the model records (nil: the optimizer recognises the head).
type stepAssembly struct {
	name string
	opt  *GNConfig
	sgn  bool
	lin  func(*AffineHead) Linearization
}

// dampedStepAssemblies returns FGN with the closed-form Gram on the recognised head, with
// matrix-free products and by autodiff, and SGN, each configured by set and then made exact
// (60 CG iterations to 1e-14, α = 1, constant damping) for a comparison with a dense solve.
func dampedStepAssemblies(set func(*GNConfig) *GNConfig) []stepAssembly {
	exact := func(c *GNConfig) *GNConfig {
		return set(c).LearningRate(1).CGMaxIterations(60).CGTolerance(1e-14).CGStopAtNoise(false).DampingPolicy(ConstantDamping{})
	}
	return []stepAssembly{
		{"FGN (closed-form Gram), recognised head", exact(FGN().RowOperator(ClosedFormGram)), false, func(*AffineHead) Linearization { return nil }},
		{"FGN (matrix-free)", exact(FGN().RowOperator(MatrixFree)), false, func(a *AffineHead) Linearization { return a }},
		{"FGN (matrix-free, autodiff)", exact(FGN()), false, func(a *AffineHead) Linearization { return Linearize(a.Logits(), a.Params()) }},
		{"SGN", exact(SGN()), true, func(a *AffineHead) Linearization { return a }},
	}
}

// denseDampedStep returns the dense damped step d = −(H + diag(damping))⁻¹(g + g_R) for the
// curvature H, the per-entry damping damping(k), the gradient g and the regulariser's g_R,
// solved by Cholesky in float64.
func denseDampedStep(t *testing.T, curvature *mat.SymDense, damping func(k int) float64, grad *mat.VecDense,
	gradR []float64) []float64 {
	t.Helper()
	n := curvature.SymmetricDim()
	h := mat.NewSymDense(n, nil)
	h.CopySym(curvature)
	rhs := mat.NewVecDense(n, nil)
	for k := range n {
		h.SetSym(k, k, h.At(k, k)+damping(k))
		rhs.SetVec(k, -grad.AtVec(k)-gradR[k])
	}
	var chol mat.Cholesky
	if !chol.Factorize(h) {
		t.Fatal("the damped curvature is not positive definite")
	}
	var d mat.VecDense
	if err := chol.SolveVecTo(&d, rhs); err != nil {
		t.Fatal(err)
	}
	return d.RawVector().Data
}

// TestRegularizedStepMatchesDense checks one FGN and SGN step on a loss with GoMLX's
// regularisers (regCases) against the dense damped solve d = −(H + D + λI)⁻¹(g + ∇R) of
// explicitAffine, the independent float64 reference, with ∇R and D (the Hessian of the L2 terms;
// 0 for L1 terms) computed on the host: for FGN's closed-form Gram on the recognised head (W and
// bias damped apart), the matrix-free products, autodiff, and SGN, to 1e-8 relative, on a random
// batch and on one whose every other row is saturated (features ×1e4: FGN's gradient start with a
// regulariser). With a Levenberg-Marquardt step on the random batch it checks the step length
// τ = −(g + ∇R)ᵀd/dᵀ(H_GGN + D + λI)d, the telemetry's predicted decrease
// −(sᵀ(g + ∇R) + ½ sᵀ(H_GGN + D)s), s = ατd, and the actual decrease of the whole loss, L + R,
// evaluated on the host.
func TestRegularizedStepMatchesDense(t *testing.T) {
	const lambda = 0.3
	assemblies := dampedStepAssemblies(func(c *GNConfig) *GNConfig { return c.Damping(lambda) })
	for _, rc := range regCases {
		for _, pc := range denseStepProblems() {
			p := pc.p
			e := newExplicitAffine(p)
			gradR, hess := rc.grad(p), rc.hessian(p)
			for _, as := range assemblies {
				t.Run(rc.name+"/"+pc.name+"/"+as.name, func(t *testing.T) {
					curvature := e.fgn
					if as.sgn {
						curvature = e.ggn
					}
					want := denseDampedStep(t, curvature, func(k int) float64 { return hess[k] + lambda }, e.grad, gradR)
					m := newOptModel(p, false, false)
					got, _, _, _ := m.regularisedStep(t, as.opt.Done(), p, rc, as.lin)
					check(t, "direction vs dense −(H + D + λI)⁻¹(g + ∇R)", ref.RelErr(got, want), 1e-8)
				})
			}
		}
		p := denseStepProblems()[0].p // the random batch
		e := newExplicitAffine(p)
		gradR, hess := rc.grad(p), rc.hessian(p)
		t.Run(rc.name+"/Levenberg-Marquardt telemetry", func(t *testing.T) {
			const alpha = 0.7
			m := newOptModel(p, false, false)
			before := m.flatParams()
			d, predicted, actual, tau := m.regularisedStep(t, FGN().Damping(lambda).LearningRate(alpha).DampingPolicy(LevenbergMarquardt()).Done(),
				p, rc, func(*AffineHead) Linearization { return nil })
			var gd, dhd float64
			for k := range d {
				gd += d[k] * (e.grad.AtVec(k) + gradR[k])
				dhd += d[k] * d[k] * (hess[k] + lambda)
				for l := range d {
					dhd += d[k] * e.ggn.At(k, l) * d[l]
				}
			}
			wantTau := math.Min(-gd/dhd, 1)
			if !(wantTau < 1) {
				t.Errorf("τ = %g, want < 1 on a batch of %d classes: the test cannot tell the step length from 1", wantTau, p.c)
			}
			check(t, "step length τ vs −(g + ∇R)ᵀd/dᵀ(H_GGN + D + λI)d", math.Abs(tau-wantTau)/wantTau, 1e-10)
			s := make([]float64, len(d))
			var slope, quad float64
			for k := range d {
				s[k] = alpha * tau * d[k]
				slope += s[k] * (e.grad.AtVec(k) + gradR[k])
				quad += s[k] * s[k] * hess[k]
				for l := range d {
					quad += s[k] * e.ggn.At(k, l) * alpha * tau * d[l]
				}
			}
			check(t, "predicted decrease vs −(sᵀ(g + ∇R) + ½ sᵀ(H_GGN + D)s)", math.Abs(predicted+slope+quad/2)/math.Abs(slope), 1e-10)
			loss := func(w []float64) float64 {
				q := *p
				q.w = make([][]float64, p.d)
				for k := range q.w {
					q.w[k] = w[k*p.c : (k+1)*p.c]
				}
				q.bias = w[p.d*p.c:]
				return batchLoss(t, &q, false, w) + rc.value(q.w, q.bias)
			}
			after := make([]float64, len(before))
			for k := range after {
				after[k] = before[k] + s[k]
			}
			want := loss(before) - loss(after)
			check(t, "actual decrease vs (L + R)(w) − (L + R)(w + s)", math.Abs(actual-want)/math.Abs(want), 1e-10)
		})
	}
}

// TestRegularizedTrainer trains a two-layer network of layers.DenseWithBias through train.Trainer
// with the optimizer optimizer.FromScope selects (optimizer=fgn, sgn; each also with
// fgn_scaled_damping, the damping metric with a regulariser's Hessian) and the regularisers GoMLX's
// layers add from the scope's l2_regularization and l1_regularization: the total loss (cross-
// entropy plus regularisation, the Trainer's metric) after 20 steps is below half the first step's,
// and the weights end smaller (in norm) than those of the same run without regularisation.
func TestRegularizedTrainer(t *testing.T) {
	p := newProblem(52, 32, 6, 4, 0, 1)
	for _, tc := range []struct {
		optimizer string
		scaled    bool
	}{{"fgn", false}, {"sgn", false}, {"fgn", true}, {"sgn", true}} {
		name := tc.optimizer
		if tc.scaled {
			name += " with " + ParamScaledDamping
		}
		norms := map[bool]float64{}
		for _, regularised := range []bool{false, true} {
			store := model.NewStore()
			store.RootScope().SetParams(map[string]any{optimizer.ParamOptimizer: tc.optimizer, ParamScaledDamping: tc.scaled})
			if regularised {
				store.RootScope().SetParams(map[string]any{regularizer.ParamL2: 0.05, regularizer.ParamL1: 1e-4})
			}
			store.SetRNGStateFromSeed(7)
			trainer := train.NewTrainer(testBackend, store, denseMLP, Loss, optimizer.FromScope(store.RootScope()), nil, nil)
			var first, last float64
			for step := range 20 {
				metrics, err := trainer.TrainStep(p.batch())
				if err != nil {
					t.Fatalf("%s, regularised %v, step %d: %+v", name, regularised, step, err)
				}
				last = tensors.ToScalar[float64](metrics[0])
				if step == 0 {
					first = last
				}
			}
			var norm float64
			for v := range store.IterVariables() {
				if v.Name() == "weights" {
					for _, x := range flat64(v.MustValue()) {
						norm += x * x
					}
				}
			}
			norms[regularised] = math.Sqrt(norm)
			t.Logf("%s, regularised %v: loss %.4g at the first step, %.4g after 20; ‖weights‖ %.4g", name, regularised,
				first, last, norms[regularised])
			if !(last < first/2) {
				t.Errorf("%s, regularised %v: loss %.4g after 20 steps, want below half the first step's %.4g", name,
					regularised, last, first)
			}
		}
		if !(norms[true] < norms[false]) {
			t.Errorf("%s: ‖weights‖ %.4g with regularisation, %.4g without: want smaller", name, norms[true], norms[false])
		}
	}
}

// denseMLP is a two-layer ReLU network of GoMLX's layers.DenseWithBias.
func denseMLP(scope *model.Scope, x *Node) *Node {
	h := activation.Relu(layers.DenseWithBias(scope.In("hidden"), x, 8))
	return layers.DenseWithBias(scope.In("logits"), h, 4)
}

// TestRegularizedStepProducts checks the cost of a regularised step (an L2 and an L1 term on W) by
// the products a direction builds, CG unrolled and capped at N: FGN (matrix-free) builds one JVP
// more than without a regulariser (t = J̃M⁻¹∇R/λ, for the right-hand side), N + 1 JVPs and
// N + 1 VJPs; SGN's are unchanged, N JVPs and N + 1 VJPs (∇R is GoMLX's reverse mode on R alone).
func TestRegularizedStepProducts(t *testing.T) {
	p := newProblem(3, 6, 5, 4, 2, 1)
	const n = 4
	for _, tc := range []struct {
		name       string
		fgn        bool
		jvps, vjps int
	}{{"FGN (matrix-free)", true, n + 1, n + 1}, {"SGN", false, n, n + 1}} {
		var lin *counting
		run(t, func(in []*Node) []*Node {
			lin = &counting{opaque: opaque{affineLin(in)}}
			w := in[2]
			terms := []*Node{MulScalar(ReduceAllSum(Square(w)), 0.1), MulScalar(ReduceAllSum(Abs(w)), 0.01)}
			reg := recogniseRegularisation(terms, lin.Params(), tc.name)
			cfg := Settings{Damping: 1, RowOperator: MatrixFree, CG: CGSettings{MaxIterations: n, Tolerance: 1e-5}}
			if tc.fgn {
				return []*Node{flattenVec(fgnDirection(lin, in[1], nil, cfg, nil, reg, nil, nil).D)}
			}
			return []*Node{flattenVec(sgnDirection(lin, in[1], nil, cfg, nil, reg, nil, nil).D)}
		}, p.affineInputs(dtypes.Float64)...)
		if lin.jvps != tc.jvps || lin.vjps != tc.vjps {
			t.Errorf("%s: built %d JVPs and %d VJPs, want %d and %d", tc.name, lin.jvps, lin.vjps, tc.jvps, tc.vjps)
		}
	}
}
