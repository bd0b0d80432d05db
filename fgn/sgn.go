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

// sgnDirection is SGNDirection with the damping λ chosen by damping from the batch's curvature
// scale μ = gᵀ(H_GGN + D)g/‖g‖² and gradient noise ν (batchScale) when damping is not nil
// (cfg.Damping otherwise), for the loss L = (1/b)Σφ(s_i) + R with the regulariser reg (nil for
// none): (H_GGN + D + λI) d = −(g + g_R), D the Hessian of R's L2 terms added to the product and
// g_R = ∇R to the right-hand side (see regularisation). (H_GGN + D) g is the product of CG's first
// iteration, which starts from p_0 = −g and takes it (cgSystem.rhsProduct), and ν comes from its
// JVP; with a warm start they cost one product more.
func sgnDirection(lin Linearization, labels *Node, x0 Vec, cfg Settings, damping dampingFn, reg *regularisation) *Direction {
	cfg.mustValidateSolve()
	m := NewMargin(lin.Logits(), labels)
	b := float64(m.S.Shape().Dim(0))
	probs := Softmax(lin.Logits(), -1)
	// −g = Jᵀ(y − p)/b: the scale and sign go into the b×C cotangent.
	negGrad := lin.VJP(MulScalar(Sub(m.OneHot, probs), 1/b))
	if reg != nil {
		negGrad = subtract(negGrad, reg.grad)
	}
	// product returns (H_GGN + D) v from m = J_z v.
	product := func(v Vec, m *Node) Vec {
		out := ggnFromJVP(lin, probs, m)
		if reg != nil {
			for k, dk := range reg.hessian {
				if dk > 0 {
					out[k] = Add(out[k], MulScalar(v[k], dk))
				}
			}
		}
		return out
	}
	sys := cgSystem{curvature: func(v Vec) Vec { return product(v, lin.JVP(v)) }, rhs: negGrad, x0: x0}
	var scale batchScale
	if x0 == nil || damping != nil || cfg.CG.StopAtNoise {
		jz := lin.JVP(negGrad)
		sys.rhsProduct = product(negGrad, jz)
		scale.curvature = curvatureScale(vecDot(negGrad, sys.rhsProduct), vecDot(negGrad, negGrad))
		// Example i's gradient of L along −g is ∇_z ℓ_iᵀ(J_z v)_i + g_Rᵀv = (p_i − y_i)ᵀ(J_z v)_i + g_Rᵀv
		// for v = −g (eq. 2.11).
		along := ReduceSum(Mul(Sub(probs, m.OneHot), jz), -1)
		if reg != nil {
			along = Add(along, vecDot(orZerosLike(reg.grad, negGrad), negGrad))
		}
		scale.noise = gradientNoise(along)
	}
	sys.shift = cfg.damping(damping, scale, m.S.Graph(), m.S.DType())
	if cfg.CG.StopAtNoise && scale.noise != nil {
		sys.tolerance = noiseTolerance(scale.noise)
	}
	sol := solveCG(sys, cfg.CG, inWhileLoop(lin))
	dir := newDirection(sol.X, m, sol)
	dir.lambda, dir.scale = sys.shift, scale
	return dir
}

// ggnFromJVP returns the full softmax GGN-vector product used by SGN,
//
//	v ↦ (1/b) J_zᵀ (diag(p) - p pᵀ) J_z v        (eq. 3.1, batched),
//
// from m = J_z v, where the softmax covariance is applied per example as p⊙m - p (pᵀm). probs are
// the softmax probabilities (b×C).
func ggnFromJVP(lin Linearization, probs, m *Node) Vec {
	pm := Mul(probs, m)
	cov := MulScalar(Sub(pm, Mul(probs, ExpandAxes(ReduceSum(pm, -1), -1))), 1/float64(probs.Shape().Dim(0)))
	return lin.VJP(cov)
}
