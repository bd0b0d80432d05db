// Package method is the experiments' vocabulary of optimisers: the methods compared (Adam, SGN
// and the FGN variants), their labels in legends and tables, and the paper's settings for each.
package method

import (
	"fmt"
	"strings"

	"github.com/fgn-paper/fgn/fgn"
)

// Method names an optimizer, in the repository's vocabulary: the curvature (SGN or FGN) and FGN's
// row operator (closed-form Gram or matrix-free). The third axis, the linearisation, is
// Linearization.
type Method string

const (
	// Adam is Adam with GoMLX's defaults (the algorithm of optimizer.Adam, built by the step
	// builder so that it updates in place) on the batch gradient of fgn.LossGradient, the
	// first-order baseline.
	Adam Method = "adam"
	// SGN is the full softmax-GGN baseline (fgn.SGN): parameter-space CG, warm-started.
	SGN Method = "sgn"
	// FGN is "FGN (closed-form Gram)": fgn.FGN with the closed-form row Gram of an affine head
	// (app. F.2), the feature Gram h hᵀ + 1 of each static batch computed once. It is the paper's
	// FGN on Cars196, and needs an affine head.
	FGN Method = "fgn"
	// FGNMatrixFree is "FGN (matrix-free)": fgn.FGN with fgn.MatrixFree, the row operator applied
	// by one VJP and one JVP of the margin map per CG iteration (eq. 4.8, Algorithm 1), through
	// the affine head's exact products (the ones SGN uses) or an MLP's autodiff products.
	FGNMatrixFree Method = "fgn-matrix-free"
)

// Linearization is the vocabulary's third axis: how a step linearises the logits.
type Linearization int

const (
	// ExactProducts uses the model's closed-form Jacobian products where it has them: the affine
	// head's (fgn.AffineHead). A model without them (an MLP) is linearised by autodiff.
	ExactProducts Linearization = iota
	// Autodiff linearises the logits by GoMLX autodiff (fgn.Linearize) even where closed forms
	// exist, as for any GoMLX model: "FGN (matrix-free, autodiff)" on an affine head.
	Autodiff
)

// String returns "exact head products" or "autodiff".
func (l Linearization) String() string {
	switch l {
	case ExactProducts:
		return "exact head products"
	case Autodiff:
		return "autodiff"
	}
	return fmt.Sprintf("Linearization(%d)", int(l))
}

// Methods lists the methods in the order the experiments report them.
var Methods = []Method{Adam, SGN, FGN, FGNMatrixFree}

// Label returns the method's name in figure legends and tables: "Adam", "SGN",
// "FGN (closed-form Gram)", "FGN (matrix-free)".
func (m Method) Label() string {
	switch m {
	case Adam:
		return "Adam"
	case SGN:
		return "SGN"
	case FGN:
		return "FGN (closed-form Gram)"
	case FGNMatrixFree:
		return "FGN (matrix-free)"
	}
	return string(m)
}

// ParseMethod returns the Method named s, or an error listing the valid names.
func ParseMethod(s string) (Method, error) {
	for _, m := range Methods {
		if string(m) == s {
			return m, nil
		}
	}
	names := make([]string, len(Methods))
	for i, m := range Methods {
		names[i] = string(m)
	}
	return "", fmt.Errorf("unknown method %q (want one of %s)", s, strings.Join(names, ", "))
}

// AdamLearningRate is the step size of Adam in the paper's experiments (sec. 5, app. F.2).
const AdamLearningRate = 3e-4

// DefaultSettings returns the paper's settings for method m (sec. 5, app. F.2): α = 0.1, λ = 1,
// CG at most 5 iterations with tolerance 10⁻⁵, with Adam's α = 3·10⁻⁴, SGN's warm start and each
// FGN variant's row operator. FGN stops CG by the paper's Algorithm 1, fgn.StopWhitenedRowResidual,
// so that the experiments reproduce the paper's runs (the library's default,
// fgn.StopParameterResidual, is compared with it by the head-optimisation ablation,
// headopt.MakeAblation). Adam uses only the learning rate.
func DefaultSettings(m Method) fgn.Settings {
	s := fgn.Settings{LearningRate: 0.1, Damping: 1, CG: fgn.CGSettings{MaxIterations: 5, Tolerance: 1e-5}}
	switch m {
	case Adam:
		s.LearningRate = AdamLearningRate
	case SGN:
		s.WarmStart = true
	case FGN:
		s.CG.StoppingRule = fgn.StopWhitenedRowResidual
	case FGNMatrixFree:
		s.RowOperator = fgn.MatrixFree
		s.CG.StoppingRule = fgn.StopWhitenedRowResidual
	}
	return s
}
