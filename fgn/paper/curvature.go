package paper

import (
	. "github.com/gomlx/gomlx/core/graph"

	"github.com/fgn-paper/fgn/fgn"
	"github.com/fgn-paper/fgn/fgn/internal/gn"
)

// MarginJacobian is the Jacobian J (b×d) of the batched margin map w ↦ s(w), whose row i is
// J_i = ∇_z s_iᵀ J_z,i (eq. 2.9), given as products built from a logit Linearization:
//
//	Jᵀ a = J_zᵀ (a ⊙ ∇_z s),      J β = rowsum(∇_z s ⊙ J_z β).
//
// These are the products FGN's matrix-free row operator and its back-projection make (they are
// the solver's own).
type MarginJacobian struct {
	Lin   fgn.Linearization
	GradS *Node // ∇_z s, b×C (Margin.GradS)
}

// VJP returns Jᵀ a for a ∈ R^b.
func (j MarginJacobian) VJP(a *Node) fgn.Vec { return j.products().VJP(a) }

// JVP returns J β ∈ R^b for β in parameter space.
func (j MarginJacobian) JVP(beta fgn.Vec) *Node { return j.products().JVP(beta) }

func (j MarginJacobian) products() gn.MarginJacobian {
	return gn.MarginJacobian{Lin: j.Lin, GradS: j.GradS}
}

// FGNOperator returns the damped FGN curvature-vector product in parameter space,
//
//	v ↦ (H_FGN + λI) v = (1/b) Jᵀ Q J v + λ v,      Q = diag(q),  q_i = p_★^{(i)} p_†^{(i)}      (eq. 3.8),
//
// of the b examples whose logits lin linearises and whose labels are labels, with one JVP and one
// VJP of the margin map per application. That batch need not be the one the gradient comes from:
// the simplified stochastic method of appendix D.3 draws the curvature batch independently. lambda
// is the scalar λ. fgn.GNConfig.Direction solves the same damped system in row space instead.
func FGNOperator(lin fgn.Linearization, labels, lambda *Node) func(v fgn.Vec) fgn.Vec {
	m := gn.NewMargin(lin.Logits(), labels)
	j := gn.MarginJacobian{Lin: lin, GradS: m.GradS}
	qOverB := MulScalar(m.Q, 1/float64(m.S.Shape().Dim(0)))
	return func(v fgn.Vec) fgn.Vec { return damped(j.VJP(Mul(qOverB, j.JVP(v))), lambda, v) }
}

// GGNOperator returns the damped full softmax GGN-vector product that fgn.GNConfig.Direction solves
// with,
//
//	v ↦ (1/b) J_zᵀ (diag(p) − p pᵀ) J_z v + λ v        (eq. 3.1, batched),
//
// where the softmax covariance is applied per example as p⊙m − p (pᵀm), m = J_z v.
// probs are the softmax probabilities (b×C), lambda the scalar λ.
func GGNOperator(lin fgn.Linearization, probs, lambda *Node) func(v fgn.Vec) fgn.Vec {
	return func(v fgn.Vec) fgn.Vec { return damped(gn.GGN(lin, probs, lin.JVP(v)), lambda, v) }
}

// damped returns hv + λv, λ a scalar node.
func damped(hv fgn.Vec, lambda *Node, v fgn.Vec) fgn.Vec {
	out := make(fgn.Vec, len(v))
	for k := range v {
		out[k] = Add(hv[k], Mul(ConvertDType(lambda, v[k].DType()), v[k]))
	}
	return out
}
