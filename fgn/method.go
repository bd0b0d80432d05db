package fgn

import "strings"

// Method names a damped Gauss-Newton method by the three independent choices that name methods
// everywhere in this repository (flags, CSV headers, legends): the curvature, FGN's row operator
// and the linearisation of the logits. Each field holds one of the names FGNCurvature to Recorded
// (the const block of choice names); String gives the method's label, e.g.
// "FGN (closed-form Gram)", "FGN (matrix-free, autodiff)" or "SGN".
//
// The optimizer builder chooses the curvature (FGN or SGN), Settings.RowOperator the row
// operator, and the optimizers find the linearisation (see Optimizer); Direction.Method reports
// the method a direction took, with the row operator CheaperRowOperator chose.
type Method struct {
	// Curvature is FGNCurvature (H_FGN = JᵀQJ/b, eq. 3.8) or SGNCurvature (the full softmax GGN,
	// eq. 3.1).
	Curvature string `json:"curvature" yaml:"curvature"`
	// RowOperator is how FGN applies its row operator K + bλI (see GNConfig.Direction):
	// ClosedFormGram, MatrixFree, or CheaperRowOperator as a setting; empty for SGN.
	RowOperator string `json:"row_operator,omitempty" yaml:"row_operator,omitempty"`
	// Linearization is how the logits are linearised: ExactProducts (a closed form the optimizer
	// recognised, an AffineHead's), Autodiff (Linearize) or Recorded (the model's closed form,
	// RecordLinearization); empty when not known (a direction of a linearisation the caller gave).
	Linearization string `json:"linearization,omitempty" yaml:"linearization,omitempty"`
}

// The names of the choices of a Method (its fields, Settings.RowOperator) and of CG's stopping
// rules (CGSettings.StoppingRule), as flags, files and the Param* scope parameters hold them.
const (
	FGNCurvature = "fgn" // H_FGN = JᵀQJ/b (eq. 3.8): FGN()
	SGNCurvature = "sgn" // the full softmax GGN H_GGN (eq. 3.1): SGN()

	// ClosedFormGram forms the b×b margin Gram once per step and iterates on it, when the
	// linearisation provides it in closed form (GramLinearization: AffineHead, appendix F.2, or a
	// user's model); on any other linearisation FGN is matrix-free. PaperSettings' operator.
	ClosedFormGram = "closed-form-gram"
	// MatrixFree applies K by one VJP and one JVP of the margin map per CG iteration (eq. 4.8),
	// on every linearisation.
	MatrixFree = "matrix-free"
	// CheaperRowOperator chooses, for each step's shapes, the row operator that costs fewer
	// multiply-adds: on an AffineHead (b examples, d features, C classes, CG capped at N
	// iterations; see GNConfig.Direction for the products),
	//
	//	closed-form Gram:  b²(d + C) + (N + 2)·b²    (h hᵀ and A Aᵀ; CG's b×b products and reference),
	//	matrix-free:       2N·b·d·C                 (one JVP and one VJP per iteration),
	//
	// besides one b·d·C product that both make (the closed form's back-projection, the
	// matrix-free first VJP); b²d drops from the closed form when AffineHead.FeatureGram is given.
	// The closed form is cheaper when b(d + C + N + 2) < 2N·d·C: on few examples of many features
	// and classes (the paper's Cars196 head, b = 128, d = 2048, C = 196), not on many examples of
	// few classes (an MNIST linear model, b = 600, d = 784, C = 10). Another GramLinearization
	// gets its closed form, any other linearisation the matrix-free operator. DefaultSettings'
	// operator.
	CheaperRowOperator = "cheaper"

	ExactProducts = "exact"    // a closed form of the Jacobian products: an AffineHead's
	Autodiff      = "autodiff" // Linearize: forward and reverse mode on the model's graph
	Recorded      = "recorded" // the linearisation the model recorded with RecordLinearization

	// StopParameterResidual stops FGN's CG once the parameter-space residual of the direction it
	// back-projects is small relative to the gradient, ‖(H_FGN + λI) d + g‖ ≤ Tolerance·‖g‖: what
	// the step needs, whatever the scale of the row system (GNConfig.Direction states the identity
	// by which it is evaluated in row space). DefaultSettings' rule.
	StopParameterResidual = "parameter"
	// StopWhitenedRowResidual is the rule of the paper's Algorithm 1: stop once the whitened row
	// residual e = r̃ − (K + bλI)u satisfies ‖e‖ ≤ Tolerance·‖r̃‖. On a batch holding confidently
	// misclassified examples (large margin s, tiny q, r̃_i = √(p_†/p_★) ≈ e^{s/2}) it is met after
	// one iteration whatever the tolerance, far from the solution. PaperSettings' rule.
	StopWhitenedRowResidual = "whitened-row"
)

// String returns the method's label in legends and tables: the curvature ("FGN", "SGN"), then in
// parentheses FGN's row operator ("closed-form Gram", "matrix-free", "cheaper") and the
// linearisation unless it is ExactProducts or unknown, e.g. "FGN (matrix-free, autodiff)",
// "SGN (autodiff)".
func (m Method) String() string {
	label := strings.ToUpper(m.Curvature)
	var parts []string
	switch m.RowOperator {
	case "":
	case ClosedFormGram:
		parts = append(parts, "closed-form Gram")
	default:
		parts = append(parts, m.RowOperator)
	}
	if m.Linearization != "" && m.Linearization != ExactProducts {
		parts = append(parts, m.Linearization)
	}
	if len(parts) > 0 {
		label += " (" + strings.Join(parts, ", ") + ")"
	}
	return label
}
