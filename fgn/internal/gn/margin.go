// Package gn holds the quantities of "Fast Gauss-Newton for Multiclass Cross-Entropy" that
// package fgn's solver and package fgn/paper both compute, in one implementation: the margin
// quantities of section 2 (Margin), the margin Jacobian and the GGN product of section 3
// (MarginJacobian, GGN), the whitening of the row system of section 4 (Whiten), the affine head's
// closed-form Gram of appendix F.2 (FeatureGram, AffineGram) and the dense matrices of a small
// problem (NewDense). It depends on GoMLX's graph package only: a linearisation reaches it as
// its Jacobian products (Products), which fgn.Linearization provides.
package gn

import (
	"math"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/support/exceptions"
)

// Margin holds the per-example true-vs-rest margin quantities of section 2 of the paper (fgn/paper's
// Margin) for a batch of logits z (b×C) and integer labels y (b). All fields are graph nodes.
//
// With ★ the true class of an example and † the aggregate of its competitors:
//
//	z_† = log Σ_{j≠★} exp(z_j)                       (eq. 2.1)
//	p_† = Σ_{j≠★} p_j = 1 - p_★                       (eq. 2.2)
//	s   = z_† - z_★                                   (eq. 2.3)
//	ℓ   = -log p_★ = φ(s) = log(1+e^s)                (eq. 2.4)
//	φ'(s) = p_†,  φ''(s) = p_★ p_† = q                (eq. 2.5)
//	ρ_j = p_j / p_†  for j≠★                          (eq. 2.6)
//	∇_z s = (-1 at ★, ρ elsewhere)                    (eq. 2.7)
//	ξ   = 1 - ‖ρ‖²                                    (eq. 3.6)
//
// Every quantity is computed from the margin s or from logits shifted by their competitor
// maximum, so it is finite for any finite logits in float32 and float64: p_★ and p_† are
// logistic functions of ∓s, q = p_★p_† underflows to 0 (never to NaN) for saturated
// examples, and the loss is the overflow-free softplus max(s,0)+log1p(e^{-|s|}).
//
// A row with a non-finite logit (or logits whose sum overflows) has a NaN loss: the softplus
// and the competitor maximum go through Exp and Max, which a backend's vectorised kernels may
// evaluate to a finite number on NaN (see fgn/compat.go: compatSIMDNaN), so the loss tests the row's sum
// Σ_j z_ij, made of additions only, instead of relying on NaN propagating through them.
type Margin struct {
	// S is the margin s (b).
	S *Node
	// PStar and PDagger are p_★ and p_† = 1-p_★ (b).
	PStar, PDagger *Node
	// Q is the FGN curvature weight q = p_★p_† = φ''(s) (b), in [0, 1/4].
	Q *Node
	// Rho is the competitor distribution ρ, laid out as b×C with 0 at the true class.
	Rho *Node
	// Xi is the dispersion ξ = 1-‖ρ‖² (b), in [0, 1-1/(C-1)].
	Xi *Node
	// Loss is the per-example cross-entropy φ(s) (b), NaN for a row with a non-finite logit.
	Loss *Node
	// GradS is ∇_z s (b×C): ρ with -1 at the true class (eq. 2.7). The margin Jacobian row of
	// example i is J_i = GradS_iᵀ J_z,i (eq. 2.9).
	GradS *Node
	// OneHot is the one-hot encoding of the labels (b×C), in the logits' dtype.
	OneHot *Node
}

// NewMargin computes the margin quantities for logits (b×C, float) and labels (b, integer).
// It panics (GoMLX graph-building convention) on shape mismatches; host-level entry points
// validate their inputs and return errors instead.
//
// Contract: every label lies in [0, C). A graph cannot check values, and an out-of-range label
// silently gives a wrong margin and step; the caller validates labels before they reach the
// graph (fgn/paper's AffineDirection, the training loop and the command-line tools do).
func NewMargin(logits, labels *Node) *Margin {
	if logits.Rank() != 2 {
		exceptions.Panicf("gn: logits must be b×C, got %s", logits.Shape())
	}
	b, numClasses := logits.Shape().Dim(0), logits.Shape().Dim(1)
	if numClasses < 2 {
		exceptions.Panicf("gn: need C ≥ 2 classes, got C=%d", numClasses)
	}
	if labels.Rank() != 1 || labels.Shape().Dim(0) != b || !labels.DType().IsInt() {
		exceptions.Panicf("gn: labels must be an integer vector of length %d, got %s", b, labels.Shape())
	}
	g := logits.Graph()
	dtype := logits.DType()
	// The true-class mask is built once: on a backend that does not fuse element-wise work,
	// every b×C node is a pass over memory.
	isTrue := Equal(ExpandAxes(labels, -1), Iota(g, shapes.Make(labels.DType(), 1, numClasses), 1))
	oneHot := ConvertDType(isTrue, dtype)
	rows := Iota(g, shapes.Make(labels.DType(), b), 0)
	zStar := Gather(logits, Stack([]*Node{rows, labels}, -1)) // z_★ = z[i, y_i]
	// Competitor logits with the true class masked out by -∞; C ≥ 2 guarantees at least one
	// finite competitor, so the shift m is finite.
	competitors := Where(isTrue, Scalar(g, dtype, math.Inf(-1)), logits)
	m := StopGradient(ReduceMax(competitors, -1))
	exponent := Sub(competitors, ExpandAxes(m, -1))
	shifted := Exp(exponent) // 0 at the true class (up to compatSIMDExpUnderflow, see Rho below)
	sumShifted := ReduceSum(shifted, -1)
	zDagger := Add(m, Log(sumShifted))
	s := Sub(zDagger, zStar)

	rho := Mul(shifted, ExpandAxes(Reciprocal(sumShifted), -1))
	// ‖ρ‖² = Σ_j ρ_j shifted_j / Σ_j shifted_j. The product is shifted's last use, so a backend
	// may form it in shifted's buffer: no b×C temporary. (Not Einsum("ic,ic->i", ρ, ρ):
	// compatRowDotsLargeKernel.)
	rhoNormSquared := Div(ReduceSum(Mul(rho, shifted), -1), sumShifted)
	pDagger := Logistic(s)
	pStar := Logistic(Neg(s))
	loss := Add(Max(s, ZerosLike(s)), Log1p(Exp(Neg(Abs(s)))))
	loss = Where(IsFinite(ReduceSum(logits, -1)), loss, Scalar(g, dtype, math.NaN()))
	return &Margin{
		S:       s,
		PStar:   pStar,
		PDagger: pDagger,
		Q:       Mul(pStar, pDagger),
		// The step reads ρ only through ∇s, whose true-class entry is set, and ‖ρ‖², which an
		// entry of 2e-308 does not change; the exact zeros of ρ itself (for the dense forms) cost
		// two b×C passes, which a graph that does not read Rho does not run.
		Rho:    zeroUnderflow(exponent, rho),
		Xi:     OneMinus(rhoNormSquared),
		Loss:   loss,
		GradS:  Where(isTrue, Scalar(g, dtype, -1), rho),
		OneHot: oneHot,
	}
}

// Gradient returns the gradient g = (1/b) Jᵀ p_† (eqs. 2.11, 3.8) of the mean cross-entropy of
// the batch whose margin quantities are m, with one VJP of lin, the linearisation of the logits
// m was computed from. A caller that needs other margin quantities besides the gradient (as
// LossGradient needs the loss) computes the margin once and calls it.
func (m *Margin) Gradient(lin Products) []*Node {
	b := float64(m.S.Shape().Dim(0))
	return MarginJacobian{Lin: lin, GradS: m.GradS}.VJP(MulScalar(m.PDagger, 1/b)) // scaled in row space: b entries
}

// zeroUnderflow returns x with 0 wherever exponent is below the underflow cutoff of its dtype
// (ln of half the smallest subnormal; −∞ included), where exp(exponent), of which x is a multiple,
// rounds to 0 in IEEE arithmetic: a backend's Exp may return a tiny number there instead (see
// fgn/compat.go: compatSIMDExpUnderflow).
func zeroUnderflow(exponent, x *Node) *Node {
	smallest := math.SmallestNonzeroFloat64
	if exponent.DType() != dtypes.Float64 { // float32's cutoff: below it, narrower dtypes underflow too
		smallest = math.SmallestNonzeroFloat32
	}
	cutoff := math.Log(smallest) - math.Ln2 // ln(smallest/2): smallest/2 is 0 in float64
	return Where(LessThan(exponent, Scalar(exponent.Graph(), exponent.DType(), cutoff)), ZerosLike(x), x)
}
