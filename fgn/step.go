package fgn

import (
	"math"

	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/support/exceptions"
)

// Config configures a damped Gauss-Newton direction, FGN or SGN.
type Config struct {
	// Lambda is the damping λ > 0 (paper default 1).
	Lambda float64
	// CG configures the inner solve (paper default: 5 iterations, tolerance 1e-5).
	CG CGSettings
	// SaturationFloor is the smallest curvature weight q_i = p_★p_† that is whitened; 0 selects
	// the default, the square of the dtype's machine epsilon. See FGNDirection.
	SaturationFloor float64
}

// DefaultConfig holds the paper's settings: λ = 1, at most 5 CG iterations, tolerance 1e-5.
var DefaultConfig = Config{Lambda: 1, CG: DefaultCGSettings}

func (c Config) validate() {
	if !(c.Lambda > 0) || math.IsInf(c.Lambda, 0) {
		exceptions.Panicf("fgn: damping λ must be finite and > 0, got %g", c.Lambda)
	}
	if c.SaturationFloor < 0 || c.SaturationFloor >= 0.25 {
		exceptions.Panicf("fgn: SaturationFloor must be in [0, 1/4), got %g", c.SaturationFloor)
	}
}

func (c Config) floor(dtype dtypes.DType) float64 {
	if c.SaturationFloor > 0 {
		return c.SaturationFloor
	}
	if dtype == dtypes.Float64 {
		eps := math.Nextafter(1, 2) - 1
		return eps * eps
	}
	eps := float64(math.Nextafter32(1, 2) - 1)
	return eps * eps
}

// Direction is a damped Gauss-Newton direction d for a batch, with its diagnostics. The step is
// w ← w + α d.
type Direction struct {
	// D is the direction, shaped like the parameters.
	D Vec
	// Loss is the mean cross-entropy of the batch (scalar).
	Loss *Node
	// Iterations and Residual report the CG solve: iterations used and final relative residual.
	Iterations, Residual *Node
	// MeanPDagger and MeanXi are the batch means of p_† and ξ (scalars).
	MeanPDagger, MeanXi *Node
	// Solution is the CG solution, the state a warm start carries to the next step: the row-space
	// vector u (b) for FGN, the direction itself for SGN.
	Solution Vec
	// RowRHS is, for FGN, the right-hand side of the whitened row system that Solution
	// approximately solves: r̃ = Q^{-1/2} r (eq. 4.6) when no row is saturated (see FGNDirection);
	// nil for SGN.
	RowRHS *Node
}

// LossGradient returns the mean cross-entropy of a batch and its gradient
//
//	g = (1/b) Jᵀ r = (1/b) J_zᵀ (p - y),       r_i = p_†^{(i)}      (eqs. 2.11, 3.8),
//
// computed with one VJP of the logit map.
func LossGradient(lin Linearization, labels *Node) (loss *Node, grad Vec) {
	m := NewMargin(lin.Logits(), labels)
	b := float64(m.S.Shape().Dim(0))
	j := MarginJacobian{Lin: lin, GradS: m.GradS}
	return ReduceAllMean(m.Loss), vecScale(Scalar(m.S.Graph(), m.S.DType(), 1/b), j.VJP(m.PDagger))
}

// whitening splits the rows of the batch for the whitened row-space system (sec. 4.1).
//
// The paper whitens every row: J̃ = Q^{1/2} J, r̃ = Q^{-1/2} r. For a saturated example with
// p_★ → 0, q_i underflows (to 0 in float32 once |s| ≳ 100) while r̃_i = √(p_†/p_★) = e^{s/2}
// overflows, although their product is the finite p_†. Rows whose weight is below a floor
// q_min are therefore solved in unwhitened form with q_i = 0: their row equation is then
// bλ δ_i = r_i exactly, so δ_R = r_R/(bλ), and the remaining rows solve
//
//	(K_WW + bλ I) u_W = Q_W^{-1/2} r_W − Q_W^{1/2} J_W J_Rᵀ δ_R,      d = −Jᵀ(δ_R + Q^{1/2} u).
//
// With no saturated row this is exactly eqs. (4.5)-(4.6); otherwise it solves the damped system
// whose curvature omits the rows with q_i < q_min, i.e. a perturbation of H_FGN of norm at most
// q_min·max‖J_i‖²/b, below the dtype's resolution for the default q_min = ε².
type whitening struct {
	sqrtQ  *Node // √q_i on whitened rows, 0 on saturated rows
	rTilde *Node // r_i/√q_i on whitened rows, 0 on saturated rows
	deltaR *Node // r_i/(bλ) on saturated rows, 0 on whitened rows
}

func newWhitening(m *Margin, bLambda *Node, floor float64) whitening {
	kept := GreaterOrEqual(m.Q, Scalar(m.Q.Graph(), m.Q.DType(), floor))
	zeros := ZerosLike(m.Q)
	sqrtQ := Where(kept, Sqrt(m.Q), zeros)
	safe := Where(kept, sqrtQ, OnesLike(m.Q))
	return whitening{
		sqrtQ:  sqrtQ,
		rTilde: Where(kept, Div(m.PDagger, safe), zeros),
		deltaR: Where(kept, zeros, Div(m.PDagger, bLambda)),
	}
}

// FGNDirection returns the damped FGN direction d = −(H_FGN + λI)^{-1} g for a batch, solved in
// the b-dimensional whitened row space (Algorithm 1): CG on
//
//	(K + bλ I) u = r̃,   K = J̃ J̃ᵀ,  J̃ = Q^{1/2} J,  r̃ = Q^{-1/2} r       (eq. 4.6)
//
// with the matrix-free operator of eq. (4.8), then back-projection d = −J̃ᵀ u (eq. 4.7). CG starts
// from u0 (b), or from zero when u0 is nil (the paper's FGN: no warm start). Saturated rows are
// handled as described for the whitening type.
//
// With a generic Linearization each CG iteration costs one VJP and one JVP of the margin map; an
// AffineHead makes it eligible for the in-graph While loop. FGNAffineDirection is the closed-form
// variant for affine heads.
func FGNDirection(lin Linearization, labels, u0 *Node, cfg Config) *Direction {
	cfg.validate()
	m := NewMargin(lin.Logits(), labels)
	g := m.S.Graph()
	dtype := m.S.DType()
	b := m.S.Shape().Dim(0)
	bLambda := Scalar(g, dtype, float64(b)*cfg.Lambda)
	w := newWhitening(m, bLambda, cfg.floor(dtype))
	j := MarginJacobian{Lin: lin, GradS: m.GradS}

	// Coupling of the saturated rows into the whitened ones: −Q_W^{1/2} J J_Rᵀ δ_R.
	rhs := Sub(w.rTilde, Mul(w.sqrtQ, j.JVP(j.VJP(w.deltaR))))
	op := FGNRowOperator(j, w.sqrtQ, bLambda)
	sol := CG(func(v Vec) Vec { return Vec{op(v[0])} }, Vec{rhs}, rowStart(u0), cfg.CG, inWhileLoop(lin))
	d := vecScale(Scalar(g, dtype, -1), j.VJP(Add(w.deltaR, Mul(w.sqrtQ, sol.X[0]))))
	dir := newDirection(d, m, sol)
	dir.RowRHS = rhs
	return dir
}

// FGNAffineDirection is FGNDirection for the affine head z = h W + 1 bᵀ using the closed-form
// row Gram of appendix F.2: K = AffineRowGram(h hᵀ + 1, ∇_z s, √q) is formed once (b×b), CG runs
// on it in an in-graph While loop, and one VJP back-projects. The feature Gram h hᵀ + 1 is
// head.FeatureGram when set (frozen features), else computed here. u0 is as for FGNDirection.
func FGNAffineDirection(head *AffineHead, labels, u0 *Node, cfg Config) *Direction {
	cfg.validate()
	m := NewMargin(head.Logits(), labels)
	g := m.S.Graph()
	dtype := m.S.DType()
	b := m.S.Shape().Dim(0)
	featureGram := head.FeatureGram
	if featureGram == nil {
		featureGram = FeatureGram(head.H)
	}
	bLambda := Scalar(g, dtype, float64(b)*cfg.Lambda)
	w := newWhitening(m, bLambda, cfg.floor(dtype))

	// Unwhitened Gram G = J Jᵀ and whitened K = Q^{1/2} G Q^{1/2}.
	gram := AffineMarginGram(featureGram, m.GradS)
	k := whitenGram(gram, w.sqrtQ)
	rhs := Sub(w.rTilde, Mul(w.sqrtQ, MatMul(gram, w.deltaR)))
	op := func(v Vec) Vec { return Vec{Add(MatMul(k, v[0]), Mul(bLambda, v[0]))} }
	sol := CG(op, Vec{rhs}, rowStart(u0), cfg.CG, true)
	j := MarginJacobian{Lin: head, GradS: m.GradS}
	d := vecScale(Scalar(g, dtype, -1), j.VJP(Add(w.deltaR, Mul(w.sqrtQ, sol.X[0]))))
	dir := newDirection(d, m, sol)
	dir.RowRHS = rhs
	return dir
}

// SGNDirection returns the damped full-softmax-GGN direction d = −(H_GGN + λI)^{-1} g of the SGN
// baseline, by parameter-space CG on GGNOperator, warm-started from x0 (nil for zeros; SGN
// passes its previous direction).
func SGNDirection(lin Linearization, labels *Node, x0 Vec, cfg Config) *Direction {
	cfg.validate()
	m := NewMargin(lin.Logits(), labels)
	g := m.S.Graph()
	dtype := m.S.DType()
	b := float64(m.S.Shape().Dim(0))
	probs := Softmax(lin.Logits(), -1)
	grad := vecScale(Scalar(g, dtype, 1/b), lin.VJP(Sub(probs, m.OneHot)))
	op := GGNOperator(lin, probs, Scalar(g, dtype, cfg.Lambda))
	sol := CG(op, vecScale(Scalar(g, dtype, -1), grad), x0, cfg.CG, inWhileLoop(lin))
	return newDirection(sol.X, m, sol)
}

// rowStart is the CG start of the row-space solve: nil (zero) or {u0}.
func rowStart(u0 *Node) Vec {
	if u0 == nil {
		return nil
	}
	return Vec{u0}
}

func newDirection(d Vec, m *Margin, sol CGResult) *Direction {
	return &Direction{
		D:           d,
		Loss:        ReduceAllMean(m.Loss),
		Iterations:  sol.Iterations,
		Residual:    sol.Residual,
		MeanPDagger: ReduceAllMean(m.PDagger),
		MeanXi:      ReduceAllMean(m.Xi),
		Solution:    sol.X,
	}
}
