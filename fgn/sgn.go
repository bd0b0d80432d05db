package fgn

import (
	. "github.com/gomlx/gomlx/core/graph"
)

// SGNDirection returns the damped full-softmax-GGN direction d = −(H_GGN + λI)^{-1} g of the SGN
// baseline, by parameter-space CG on the damped GGN product of eq. (3.1), warm-started from x0 (nil for zeros; SGN
// passes its previous direction). Its CG residual is the parameter-space residual
// ‖(H_GGN + λI) d + g‖/‖g‖ whatever cfg.CG.StoppingRule says.
func SGNDirection(lin Linearization, labels *Node, x0 Vec, cfg Settings) *Direction {
	return sgnDirection(lin, labels, x0, cfg, nil, nil)
}

// sgnDirection is SGNDirection with the damping λ given by the scalar node lambda, an adaptive
// policy's state, when not nil (cfg.Damping otherwise), for the loss L = (1/b)Σφ(s_i) + R with the
// regulariser reg (nil for none): (H_GGN + D + λI) d = −(g + g_R), D the Hessian of R's L2 terms
// added to the product and g_R = ∇R to the right-hand side (see regularisation).
func sgnDirection(lin Linearization, labels *Node, x0 Vec, cfg Settings, lambda *Node, reg *regularisation) *Direction {
	cfg.mustValidateSolve()
	m := NewMargin(lin.Logits(), labels)
	g := m.S.Graph()
	dtype := m.S.DType()
	b := float64(m.S.Shape().Dim(0))
	probs := Softmax(lin.Logits(), -1)
	// −g = Jᵀ(y − p)/b: the scale and sign go into the b×C cotangent.
	negGrad := lin.VJP(MulScalar(Sub(m.OneHot, probs), 1/b))
	op := ggnOperator(lin, probs, cfg.scaledLambda(lambda, g, dtype, 1))
	if reg != nil {
		negGrad = subtract(negGrad, reg.grad)
		ggn := op
		op = func(v Vec) Vec {
			out := ggn(v)
			for k, dk := range reg.hessian {
				if dk > 0 {
					out[k] = Add(out[k], MulScalar(v[k], dk))
				}
			}
			return out
		}
	}
	sol := solveCG(cgSystem{curvature: op, rhs: negGrad, x0: x0}, cfg.CG, inWhileLoop(lin))
	return newDirection(sol.X, m, sol)
}

// ggnOperator returns the damped full softmax GGN-vector product used by SGN,
//
//	v ↦ (1/b) J_zᵀ (diag(p) - p pᵀ) J_z v + λ v        (eq. 3.1, batched),
//
// where the softmax covariance is applied per example as p⊙m - p (pᵀm), m = J_z v.
// probs are the softmax probabilities (b×C).
func ggnOperator(lin Linearization, probs, lambda *Node) func(v Vec) Vec {
	invB := 1.0 / float64(probs.Shape().Dim(0))
	return func(v Vec) Vec {
		m := lin.JVP(v)
		pm := Mul(probs, m)
		cov := MulScalar(Sub(pm, Mul(probs, ExpandAxes(ReduceSum(pm, -1), -1))), invB)
		return vecAxpy(lin.VJP(cov), lambda, v)
	}
}
