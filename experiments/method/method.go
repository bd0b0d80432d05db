// Package method is the experiments' list of optimisers: the methods compared (Adam, and SGN and
// the FGN variants in fgn.Method's vocabulary), their labels in legends and tables, their
// hyper-parameters (Hyper) and the paper's values of them (Paper).
package method

import (
	"fmt"
	"math"
	"strings"

	"github.com/fgn-paper/fgn/fgn"
)

// Method names a method the experiments compare, by the name their flags, file names and CSV
// files use: Adam, or a damped Gauss-Newton method of fgn's vocabulary (fgn.Method: the curvature
// and FGN's row operator; the linearisation is the run's, see GN).
type Method string

const (
	// Adam is Adam (the algorithm of optimizer.Adam with AdamSettings, built by the step
	// builder so that it updates in place) on the batch gradient of paper.LossGradient, the
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

// GN returns the Gauss-Newton method m names with the linearisation lin (fgn.ExactProducts, the
// affine head's closed-form products, or fgn.Autodiff), and the zero fgn.Method for Adam.
func (m Method) GN(lin string) fgn.Method {
	switch m {
	case SGN:
		return fgn.Method{Curvature: fgn.SGNCurvature, Linearization: lin}
	case FGN:
		return fgn.Method{Curvature: fgn.FGNCurvature, RowOperator: fgn.ClosedFormGram, Linearization: lin}
	case FGNMatrixFree:
		return fgn.Method{Curvature: fgn.FGNCurvature, RowOperator: fgn.MatrixFree, Linearization: lin}
	}
	return fgn.Method{}
}

// Methods lists the methods in the order the experiments report them.
var Methods = []Method{Adam, SGN, FGN, FGNMatrixFree}

// Label returns the method's name in figure legends and tables: "Adam", or the label of the
// fgn.Method it names on exact products, "SGN", "FGN (closed-form Gram)", "FGN (matrix-free)".
func (m Method) Label() string {
	switch m {
	case Adam:
		return "Adam"
	case SGN, FGN, FGNMatrixFree:
		return m.GN(fgn.ExactProducts).String()
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

// AdamSettings are Adam's hyper-parameters (Kingma and Ba, 2015): the step size and the decay
// rates β₁, β₂ of the first and second moments, and ε, which keeps the step m̂/(√v̂ + ε) finite.
type AdamSettings struct {
	LearningRate float64 `json:"learning_rate" yaml:"learning_rate"`
	Beta1        float64 `json:"beta1" yaml:"beta1"`
	Beta2        float64 `json:"beta2" yaml:"beta2"`
	Epsilon      float64 `json:"epsilon" yaml:"epsilon"`
}

// GoMLXAdam returns Adam with step size lr and the defaults of GoMLX's optimizer.Adam:
// β₁ = 0.9, β₂ = 0.999, ε = 10⁻⁷.
func GoMLXAdam(lr float64) AdamSettings {
	return AdamSettings{LearningRate: lr, Beta1: 0.9, Beta2: 0.999, Epsilon: 1e-7}
}

// Validate reports the first invalid setting, naming it: α and ε must be finite and > 0, β₁ and
// β₂ in [0, 1) with β₁² < β₂, which bounds every step (see train's Adam step).
func (a AdamSettings) Validate() error {
	switch {
	case !(a.LearningRate > 0) || math.IsInf(a.LearningRate, 0):
		return fmt.Errorf("adam: learning rate α must be finite and > 0, got %g", a.LearningRate)
	case !(a.Beta1 >= 0 && a.Beta1 < 1):
		return fmt.Errorf("adam: β₁ must be in [0, 1), got %g", a.Beta1)
	case !(a.Beta2 >= 0 && a.Beta2 < 1):
		return fmt.Errorf("adam: β₂ must be in [0, 1), got %g", a.Beta2)
	case !(a.Beta1*a.Beta1 < a.Beta2):
		return fmt.Errorf("adam: need β₁² < β₂, got β₁ = %g, β₂ = %g", a.Beta1, a.Beta2)
	case !(a.Epsilon > 0) || math.IsInf(a.Epsilon, 0):
		return fmt.Errorf("adam: ε must be finite and > 0, got %g", a.Epsilon)
	}
	return nil
}

// Hyper is one method's hyper-parameters: Adam's (key adam) for Adam, fgn.Settings (key gn) for
// SGN and FGN. A method reads only its own part, and a selection file records only that part.
type Hyper struct {
	Adam AdamSettings `json:"adam,omitzero" yaml:"adam,omitempty"`
	GN   fgn.Settings `json:"gn,omitzero" yaml:"gn,omitempty"`
}

// LearningRate returns method m's step size α.
func (h Hyper) LearningRate(m Method) float64 {
	if m == Adam {
		return h.Adam.LearningRate
	}
	return h.GN.LearningRate
}

// Validate reports the first invalid setting of method m's part of h.
func (h Hyper) Validate(m Method) error {
	if m == Adam {
		return h.Adam.Validate()
	}
	return h.GN.Validate()
}

// Paper returns the paper's hyper-parameters for method m (sec. 5, app. F.2): Adam with
// α = 3·10⁻⁴ and GoMLX's defaults; SGN and FGN with fgn.PaperSettings (α = 0.1, λ = 1, CG at most
// 5 iterations with tolerance 10⁻⁵), SGN warm-started, FGN stopping CG by the paper's Algorithm 1
// (fgn.StopWhitenedRowResidual; the library's default, fgn.StopParameterResidual, is compared
// with it by the head-optimisation ablation, headopt.MakeAblation), each FGN variant with its
// row operator.
func Paper(m Method) Hyper {
	switch m {
	case Adam:
		return Hyper{Adam: GoMLXAdam(3e-4)}
	case SGN:
		s := fgn.PaperSettings()
		s.WarmStart = true
		return Hyper{GN: s}
	case FGNMatrixFree:
		s := fgn.PaperSettings()
		s.RowOperator = fgn.MatrixFree
		return Hyper{GN: s}
	}
	return Hyper{GN: fgn.PaperSettings()}
}
