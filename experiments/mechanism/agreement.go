package mechanism

import (
	"fmt"
	"math"
	"strings"

	"github.com/gomlx/compute"
	. "github.com/gomlx/gomlx/core/graph"
	"gonum.org/v1/gonum/mat"

	"github.com/fgn-paper/fgn/experiments/report"
	"github.com/fgn-paper/fgn/fgn"
	"github.com/fgn-paper/fgn/fgn/paper"
)

// AgreementConfig configures panel (c), the two-dimensional linear-logit construction of
// appendix G.1: logit Jacobian rows a★ = (−1, η) for the true class and a_j = (1, β t_j) for the
// competitors, true-class probability p★, competitor distribution ρ(α) of [Competitors].
type AgreementConfig struct {
	// Classes is C ≥ 3 (paper: 10).
	Classes int
	// PStar is p★ (paper: 0.70).
	PStar float64
	// Eta and Beta are η and β (paper: 1.25 and 3.0).
	Eta, Beta float64
	// TMax is the half-range of the competitor offsets: t_j = TMax·(−1 + 2(j−1)/(C−2)),
	// j = 1..C−1, evenly spaced over [−TMax, TMax] and so centred (mean zero). The paper fixes
	// only "uniformly spaced and centred"; the default TMax = 1 (numpy's linspace(−1, 1, C−1))
	// reads β as the half-range of the competitors' second Jacobian coordinate. The first
	// competitor (e₁ of ρ(α)) is the one with the smallest t.
	TMax float64
	// Scales are the damping scales s_λ; λ = s_λ Tr(H_FGN(ξ=0))/2 (paper: 0.01, 0.1, 1).
	Scales []float64
	// Points is the number of α values, evenly spaced over [0, 1].
	Points int
}

// DefaultAgreement is the paper's panel (c), with t_j evenly spaced over [−1, 1].
var DefaultAgreement = AgreementConfig{Classes: 10, PStar: 0.70, Eta: 1.25, Beta: 3.0, TMax: 1,
	Scales: []float64{0.01, 0.1, 1.0}, Points: 61}

func (c AgreementConfig) validate() error {
	switch {
	case c.Classes < 3:
		return fmt.Errorf("mechanism: agreement needs C ≥ 3 classes, got %d", c.Classes)
	case !(c.PStar > 0 && c.PStar < 1):
		return fmt.Errorf("mechanism: agreement p★ must be in (0, 1), got %g", c.PStar)
	case math.IsNaN(c.Eta) || math.IsInf(c.Eta, 0) || math.IsNaN(c.Beta) || math.IsInf(c.Beta, 0):
		return fmt.Errorf("mechanism: agreement η and β must be finite, got %g and %g", c.Eta, c.Beta)
	case !(c.TMax > 0) || math.IsInf(c.TMax, 0):
		return fmt.Errorf("mechanism: agreement t half-range must be finite and > 0, got %g", c.TMax)
	case len(c.Scales) == 0:
		return fmt.Errorf("mechanism: agreement needs at least one damping scale")
	case c.Points < 2:
		return fmt.Errorf("mechanism: agreement needs ≥ 2 points, got %d", c.Points)
	}
	for _, s := range c.Scales {
		if !(s > 0) || math.IsInf(s, 0) {
			return fmt.Errorf("mechanism: damping scales must be finite and > 0, got %g", s)
		}
	}
	return nil
}

// T returns the competitor offsets t_j, j = 1..C−1, evenly spaced over [−TMax, TMax].
func (c AgreementConfig) T() []float64 {
	m := c.Classes - 1
	t := make([]float64, m)
	for j := range t {
		t[j] = c.TMax * (2*float64(j) - float64(m-1)) / float64(m-1)
	}
	return t
}

// Jacobian returns A (C×2, row-major), the logit Jacobian rows a★ (first) and a_j.
func (c AgreementConfig) Jacobian() []float64 {
	a := []float64{-1, c.Eta}
	for _, t := range c.T() {
		a = append(a, 1, c.Beta*t)
	}
	return a
}

// AgreementColumns are the columns of the panel (c) table, one row per (α, damping scale): the
// competitor dispersion ξ(α), the damping λ, the traces of the library's H_FGN and H_GGN, the
// damped full-GGN model decreases Δ of the FGN and GGN steps, and their ratio R = Δ(d_FGN)/Δ(d_GGN).
var AgreementColumns = []string{"alpha", "xi", "scale", "lambda", "tr_fgn", "tr_ggn", "delta_fgn", "delta_ggn", "ratio"}

// curvature2D holds the library's dense 2×2 curvatures and gradient at one α.
type curvature2D struct {
	alpha, xi     float64
	ggn, fgn      [4]float64 // row-major
	grad          [2]float64
	libXi, libPSt float64 // ξ and p★ from the library's Margin
}

// agreementCurvatures evaluates, for each α, the logit map z(w) = A w + log p(α) of one example
// (true class first) at w = 0, linearised by fgn.Linearize over the two-dimensional parameter w,
// and returns the library's dense H_GGN, H_FGN and gradient (paper.NewDense). At w = 0 the logits
// are log p, so p = (p★, p_† ρ(α)), J_z = A, and NewDense's matrices are those of appendix G.1.
func agreementCurvatures(backend compute.Backend, cfg AgreementConfig) ([]curvature2D, error) {
	numClasses := cfg.Classes
	exec, err := NewExec(backend, func(jac, offset, w, labels *Node) []*Node {
		logits := Reshape(Add(Einsum("ck,k->c", jac, w), offset), 1, numClasses)
		dn := paper.NewDense(fgn.Linearize(logits, fgn.Vec{w}), labels)
		return []*Node{dn.GGN, dn.FGN, dn.Grad, dn.Margin.Xi, dn.Margin.PStar}
	})
	if err != nil {
		return nil, err
	}
	defer exec.Finalize()
	a := cfg.Jacobian()
	jac := make([][]float64, numClasses)
	for c := range jac {
		jac[c] = a[2*c : 2*c+2]
	}
	m := numClasses - 1
	res := make([]curvature2D, cfg.Points)
	for i := range res {
		alpha := float64(i) / float64(cfg.Points-1)
		outs, err := callFlat(exec, jac, marginLogits(cfg.PStar, Competitors(m, alpha)), []float64{0, 0}, []int32{0})
		if err != nil {
			return nil, fmt.Errorf("mechanism: agreement at α=%g: %w", alpha, err)
		}
		r := curvature2D{alpha: alpha, xi: Dispersion(m, alpha), libXi: outs[3][0], libPSt: outs[4][0]}
		copy(r.ggn[:], outs[0])
		copy(r.fgn[:], outs[1])
		copy(r.grad[:], outs[2])
		res[i] = r
	}
	return res, nil
}

// dampedStep returns d = −(H + λI)^{-1} g for a 2×2 H.
func dampedStep(h [4]float64, lambda float64, g [2]float64) ([2]float64, error) {
	m := mat.NewDense(2, 2, []float64{h[0] + lambda, h[1], h[2], h[3] + lambda})
	var d mat.VecDense
	if err := d.SolveVec(m, mat.NewVecDense(2, []float64{-g[0], -g[1]})); err != nil {
		return [2]float64{}, err
	}
	return [2]float64{d.AtVec(0), d.AtVec(1)}, nil
}

// modelDecrease returns Δ^GGN_λ(d) = −[gᵀd + ½ dᵀH_GGN d + ½λ‖d‖²] (appendix G.1).
func modelDecrease(ggn [4]float64, lambda float64, g, d [2]float64) float64 {
	hd := [2]float64{ggn[0]*d[0] + ggn[1]*d[1], ggn[2]*d[0] + ggn[3]*d[1]}
	dd := d[0]*d[0] + d[1]*d[1]
	return -(g[0]*d[0] + g[1]*d[1] + 0.5*(d[0]*hd[0]+d[1]*hd[1]) + 0.5*lambda*dd)
}

// Agreement computes panel (c): for α evenly spaced over [0, 1] and each damping scale s_λ, the
// damped FGN and full-GGN steps of the two-dimensional construction and the ratio
//
//	R_λ(ξ) = Δ^GGN_λ(d_FGN) / Δ^GGN_λ(d_GGN),   d_X = −(H_X + λI)^{-1} g,
//
// with λ = s_λ Tr(H_FGN(ξ=0))/2. H_GGN, H_FGN and g come from the library's dense forms; the 2×2
// solves are done on the host in float64.
func Agreement(backend compute.Backend, cfg AgreementConfig) (*report.Table, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	curv, err := agreementCurvatures(backend, cfg)
	if err != nil {
		return nil, err
	}
	trFGN0 := curv[0].fgn[0] + curv[0].fgn[3] // α = 0: ρ = e₁, ξ = 0
	t := report.NewTable(AgreementColumns...)
	t.Comment("panel", "(c) damped step agreement R = Delta_GGN(d_FGN)/Delta_GGN(d_GGN), H_GGN, H_FGN, g from paper.NewDense over fgn.Linearize of z(w) = A w + log p at w = 0")
	t.Comment("parameters", fmt.Sprintf("C=%d p_star=%g eta=%g beta=%g a_star=(-1,eta) a_j=(1,beta*t_j) rho(alpha)=(1-alpha)e1+alpha*1/(C-1) points=%d",
		cfg.Classes, cfg.PStar, cfg.Eta, cfg.Beta, cfg.Points))
	t.Comment("t_j", fmt.Sprintf("evenly spaced over [-%g, %g], centred (t_max=%g): %s (e1 is the first, smallest t)", cfg.TMax, cfg.TMax, cfg.TMax, formatFloats(cfg.T())))
	t.Comment("damping", fmt.Sprintf("lambda = scale * Tr(H_FGN(xi=0))/2, Tr(H_FGN(xi=0)) = %.17g, scales %s", trFGN0, formatFloats(cfg.Scales)))
	for _, c := range curv {
		for _, s := range cfg.Scales {
			lambda := s * trFGN0 / 2
			dFGN, err := dampedStep(c.fgn, lambda, c.grad)
			if err != nil {
				return nil, fmt.Errorf("mechanism: FGN step at α=%g, λ=%g: %w", c.alpha, lambda, err)
			}
			dGGN, err := dampedStep(c.ggn, lambda, c.grad)
			if err != nil {
				return nil, fmt.Errorf("mechanism: GGN step at α=%g, λ=%g: %w", c.alpha, lambda, err)
			}
			num, den := modelDecrease(c.ggn, lambda, c.grad, dFGN), modelDecrease(c.ggn, lambda, c.grad, dGGN)
			t.Add(c.alpha, c.xi, s, lambda, c.fgn[0]+c.fgn[3], c.ggn[0]+c.ggn[3], num, den, num/den)
		}
	}
	return t, nil
}

func formatFloats(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = report.Format(x)
	}
	return "[" + strings.Join(parts, " ") + "]"
}
