package fgn

import (
	. "github.com/gomlx/gomlx/core/graph"
)

// SGNDirection returns the damped full-softmax-GGN direction d = −(H_GGN + λI)^{-1} g of the SGN
// baseline, by parameter-space CG on the damped GGN product of eq. (3.1), warm-started from x0 (nil for zeros; SGN
// passes its previous direction). Its CG residual is the parameter-space residual
// ‖(H_GGN + λI) d + g‖/‖g‖ whatever cfg.CG.StoppingRule says.
func SGNDirection(lin Linearization, labels *Node, x0 Vec, cfg Settings) *Direction {
	return sgnDirection(lin, labels, x0, cfg, nil)
}

// sgnDirection is SGNDirection with the damping λ chosen by damping from the batch's curvature
// scale μ = gᵀH_GGN g/‖g‖² and gradient noise ν (batchScale) when damping is not nil (cfg.Damping
// otherwise). H_GGN g is the product of CG's first iteration, which starts from p_0 = −g and takes
// it (cgSystem.rhsProduct), and ν comes from its JVP; with a warm start they cost one product
// more.
func sgnDirection(lin Linearization, labels *Node, x0 Vec, cfg Settings, damping dampingFn) *Direction {
	cfg.mustValidateSolve()
	m := NewMargin(lin.Logits(), labels)
	b := float64(m.S.Shape().Dim(0))
	probs := Softmax(lin.Logits(), -1)
	// −g = Jᵀ(y − p)/b: the scale and sign go into the b×C cotangent.
	negGrad := lin.VJP(MulScalar(Sub(m.OneHot, probs), 1/b))
	sys := cgSystem{curvature: ggnOperator(lin, probs), rhs: negGrad, x0: x0}
	var scale batchScale
	if x0 == nil || damping != nil {
		jz := lin.JVP(negGrad) // −J_z g
		sys.rhsProduct = ggnFromJVP(lin, probs, jz)
		scale.curvature = curvatureScale(vecDot(negGrad, sys.rhsProduct), vecDot(negGrad, negGrad))
		// Example i's gradient along −g is ∇_z ℓ_iᵀ(−J_z g)_i = (p_i − y_i)ᵀ(−J_z g)_i (eq. 2.11).
		scale.noise = gradientNoise(ReduceSum(Mul(Sub(probs, m.OneHot), jz), -1))
	}
	sys.shift = cfg.damping(damping, scale, negGrad[0].Graph(), negGrad[0].DType())
	sol := solveCG(sys, cfg.CG, inWhileLoop(lin))
	dir := newDirection(sol.X, m, sol)
	dir.lambda, dir.scale = sys.shift, scale
	return dir
}

// ggnOperator returns the full softmax GGN-vector product used by SGN,
//
//	v ↦ (1/b) J_zᵀ (diag(p) - p pᵀ) J_z v        (eq. 3.1, batched),
//
// where the softmax covariance is applied per example as p⊙m - p (pᵀm), m = J_z v.
// probs are the softmax probabilities (b×C).
func ggnOperator(lin Linearization, probs *Node) func(v Vec) Vec {
	return func(v Vec) Vec { return ggnFromJVP(lin, probs, lin.JVP(v)) }
}

// ggnFromJVP returns the GGN-vector product of ggnOperator from m = J_z v.
func ggnFromJVP(lin Linearization, probs, m *Node) Vec {
	pm := Mul(probs, m)
	cov := MulScalar(Sub(pm, Mul(probs, ExpandAxes(ReduceSum(pm, -1), -1))), 1/float64(probs.Shape().Dim(0)))
	return lin.VJP(cov)
}
