// Package mechanism computes the three mechanism checks of the paper's Figure 1 (section 5.1,
// appendix G.1) with the fgn library, writes them as CSV tables through experiments/report, and
// draws the triptych from those tables:
//
//   - panel (a), [StepTime]: steady-state optimiser step time of Adam, SGN, FGN and the
//     closed-form FGN as the number of classes grows;
//   - panel (b), [Trace]: the output-space trace decomposition of Theorem 3.1 as the competitor
//     dispersion ξ grows;
//   - panel (c), [Agreement]: the fraction of the full-GGN damped quadratic decrease retained by
//     the FGN step in the two-dimensional linear-logit construction.
//
// [Figure] draws the triptych from the three tables alone, so restyling never reruns a sweep.
package mechanism

import (
	"fmt"
	"math"

	"github.com/gomlx/compute"
	. "github.com/gomlx/gomlx/core/graph"

	"github.com/fgn-paper/fgn/experiments/report"
	"github.com/fgn-paper/fgn/fgn"
	"github.com/fgn-paper/fgn/fgn/paper"
)

// underflowGap is the logit gap below the largest competitor given to competitors of zero
// probability: e^{-1000} underflows to exactly 0 in float64, so ρ is exactly zero there.
const underflowGap = 1000

// Competitors returns the competitor distribution of appendix G.1 over m = C−1 competitors,
//
//	ρ(α) = (1−α) e₁ + α 1/m,        0 ≤ α ≤ 1,
//
// which moves from concentrated (α = 0, ξ = 0) to uniform (α = 1, ξ = 1 − 1/m).
func Competitors(m int, alpha float64) []float64 {
	rho := make([]float64, m)
	for j := range rho {
		rho[j] = alpha / float64(m)
	}
	rho[0] += 1 - alpha
	return rho
}

// Dispersion returns ξ(α) = 1 − ‖ρ(α)‖² (eq. 3.5) for the family of [Competitors]; in closed form
// ξ(α) = (1 − 1/m)(1 − (1−α)²).
func Dispersion(m int, alpha float64) float64 {
	return (1 - 1/float64(m)) * (1 - (1-alpha)*(1-alpha))
}

// AlphaForDispersion inverts [Dispersion]: the α ∈ [0, 1] with ξ(α) = xi, for 0 ≤ xi ≤ 1 − 1/m.
func AlphaForDispersion(m int, xi float64) float64 {
	return 1 - math.Sqrt(math.Max(0, 1-xi/(1-1/float64(m))))
}

// marginLogits returns logits (true class first) whose softmax is (p★, p_† ρ): z₀ = log p★,
// z_j = log(p_† ρ_j), and z_j = max_k z_k − underflowGap where ρ_j = 0.
func marginLogits(pStar float64, rho []float64) []float64 {
	z := make([]float64, len(rho)+1)
	z[0] = math.Log(pStar)
	top := z[0]
	for j, r := range rho {
		if r > 0 {
			z[j+1] = math.Log((1 - pStar) * r)
			top = math.Max(top, z[j+1])
		}
	}
	for j, r := range rho {
		if r == 0 {
			z[j+1] = top - underflowGap
		}
	}
	return z
}

// TraceConfig configures panel (b).
type TraceConfig struct {
	// PStar is the true-class probability p★ (paper: 0.60).
	PStar float64
	// Classes is the number of classes C ≥ 3 (paper: 10).
	Classes int
	// Points is the number of ξ values, evenly spaced over [0, 1 − 1/(C−1)].
	Points int
}

// DefaultTrace is the paper's panel (b).
var DefaultTrace = TraceConfig{PStar: 0.60, Classes: 10, Points: 61}

func (c TraceConfig) validate() error {
	switch {
	case !(c.PStar > 0 && c.PStar < 1):
		return fmt.Errorf("mechanism: trace p★ must be in (0, 1), got %g", c.PStar)
	case c.Classes < 3:
		return fmt.Errorf("mechanism: trace needs C ≥ 3 classes (ξ > 0 needs two competitors), got %d", c.Classes)
	case c.Points < 2:
		return fmt.Errorf("mechanism: trace needs ≥ 2 points, got %d", c.Points)
	}
	return nil
}

// TraceColumns are the columns of the panel (b) table: the target ξ and the α of [Competitors]
// that hits it; p★ and ξ as the library's Margin computes them from the logits; the traces of the
// library's per-example output-space matrices (paper.Dense Kept, DroppedOut and Cov, Theorem 3.1);
// and the closed forms of appendix G.1 at the nominal p★ and target ξ:
//
//	τ_ret = p★p_†(2−ξ),   τ_drop = p_†ξ,   τ_full = 2p★p_† + p_†²ξ.
var TraceColumns = []string{"xi_target", "alpha", "p_star", "xi", "tr_retained", "tr_dropped", "tr_full",
	"closed_retained", "closed_dropped", "closed_full"}

// Trace computes panel (b): for each ξ, logits of one example with true-class probability p★ and
// competitor distribution ρ(α(ξ)) are linearised through an affine head (h = 1, W = logits), the
// library assembles the dense output-space matrices, and the table records their traces next to
// the closed forms at the nominal p★ and ξ.
func Trace(backend compute.Backend, cfg TraceConfig) (*report.Table, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	numClasses := cfg.Classes
	exec, err := NewExec(backend, func(logits, labels *Node) []*Node {
		g := logits.Graph()
		head := fgn.NewAffineHead(Ones(g, shapesF64(1, 1)), logits, Zeros(g, shapesF64(numClasses)))
		dn := paper.NewDense(head, labels)
		return []*Node{dn.Kept, dn.DroppedOut, dn.Cov, dn.Margin.PStar, dn.Margin.Xi}
	})
	if err != nil {
		return nil, err
	}
	defer exec.Finalize()

	t := report.NewTable(TraceColumns...)
	t.Comment("panel", "(b) output-space trace decomposition (Theorem 3.1), traces of paper.NewDense's Kept, DroppedOut, Cov")
	t.Comment("parameters", fmt.Sprintf("p_star=%g C=%d points=%d, rho(alpha)=(1-alpha)e1+alpha*1/(C-1), true class first", cfg.PStar, numClasses, cfg.Points))
	m := numClasses - 1
	xiMax := 1 - 1/float64(m)
	labels := []int32{0}
	for i := range cfg.Points {
		xiTarget := xiMax * float64(i) / float64(cfg.Points-1)
		alpha := AlphaForDispersion(m, xiTarget)
		logits := marginLogits(cfg.PStar, Competitors(m, alpha))
		outs, err := callFlat(exec, [][]float64{logits}, labels)
		if err != nil {
			return nil, fmt.Errorf("mechanism: trace at ξ=%g: %w", xiTarget, err)
		}
		kept, dropped, cov := outs[0], outs[1], outs[2]
		pStar, pDagger := cfg.PStar, 1-cfg.PStar
		t.Add(xiTarget, alpha, outs[3][0], outs[4][0],
			trace(kept, numClasses), trace(dropped, numClasses), trace(cov, numClasses),
			pStar*pDagger*(2-xiTarget), pDagger*xiTarget, 2*pStar*pDagger+pDagger*pDagger*xiTarget)
	}
	return t, nil
}

func trace(a []float64, n int) float64 {
	s := 0.0
	for i := range n {
		s += a[i*n+i]
	}
	return s
}
