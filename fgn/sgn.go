package fgn

import (
	. "github.com/gomlx/gomlx/core/graph"

	"github.com/fgn-paper/fgn/fgn/internal/gn"
)

// sgnDirection is SGN's GNConfig.Direction, from x0 (nil for zero), with the damping λ chosen by
// damping from the batch's curvature scale μ = gᵀ(H_GGN + D)g/‖g‖² and gradient noise ν
// (batchScale) when damping is not nil (cfg.Damping otherwise), for the loss L = (1/b)Σφ(s_i) + R
// with the regulariser reg (nil for none) and the cross-entropy's batch gradient ceGrad where the
// caller formed it (nil otherwise: one VJP here): (H_GGN + D + λI) d = −(g + g_R), D the Hessian
// of R's L2 terms added to the product and g_R = ∇R to the right-hand side (see regularisation).
// (H_GGN + D) g is the product of CG's first iteration, which starts from p_0 = −g and takes it
// (gn.CGSystem.RHSProduct), and ν comes from its JVP; with a warm start they cost one product more.
//
// With the damping metric S (metric holds its scales s_k, Settings.ScaledDamping; nil for S = I)
// the system is (H_GGN + D + λS) d = −(g + g_R), which CG solves in the rescaled parameters
// e = S^{1/2}d: (S^{-1/2}(H_GGN + D)S^{-1/2} + λI) e = −S^{-1/2}(g + g_R), so that μ and ν are
// measured along S⁻¹(g + g_R) in the norm of S.
func sgnDirection(lin Linearization, labels *Node, x0 Vec, cfg Settings, damping dampingFn, reg *regularisation,
	metric, ceGrad Vec) *Direction {
	cfg.mustValidateSolve()
	m := marginOf(lin.Logits(), labels)
	b := float64(m.S.Shape().Dim(0))
	probs := probabilitiesOf(lin.Logits())
	var negGrad Vec
	if ceGrad != nil {
		negGrad = gn.VecScale(Scalar(m.S.Graph(), m.S.DType(), -1), ceGrad)
	} else { // −g = Jᵀ(y − p)/b: the scale and sign go into the b×C cotangent.
		negGrad = lin.VJP(MulScalar(Sub(m.OneHot, probs), 1/b))
	}
	if reg != nil {
		negGrad = subtract(negGrad, reg.grad)
	}
	var grad Vec // g + g_R, for the damping metric's moving averages
	if metric != nil {
		grad = gn.VecScale(Scalar(m.S.Graph(), m.S.DType(), -1), negGrad)
	}
	sqrtInvS := sqrtEach(reciprocals(metric))
	negGrad = scaleEach(negGrad, sqrtInvS)
	// product returns S^{-1/2}(H_GGN + D)S^{-1/2} v from m = J_z S^{-1/2} v.
	product := func(v Vec, m *Node) Vec {
		v = scaleEach(v, sqrtInvS)
		out := gn.GGN(lin, probs, m)
		if reg != nil {
			for k, dk := range reg.hessian {
				if dk > 0 {
					out[k] = Add(out[k], MulScalar(v[k], dk))
				}
			}
		}
		return scaleEach(out, sqrtInvS)
	}
	if x0 != nil && metric != nil {
		x0 = scaleEach(x0, sqrtEach(metric))
	}
	sys := gn.CGSystem{Curvature: func(v Vec) Vec { return product(v, lin.JVP(scaleEach(v, sqrtInvS))) }, RHS: negGrad, X0: x0}
	var scale batchScale
	if x0 == nil || damping != nil || cfg.CG.StopAtNoise {
		jz := lin.JVP(scaleEach(negGrad, sqrtInvS))
		sys.RHSProduct = product(negGrad, jz)
		scale.curvature = curvatureScale(gn.VecDot(negGrad, sys.RHSProduct), gn.VecDot(negGrad, negGrad))
		// Example i's gradient of L along v = −S⁻¹g is ∇_z ℓ_iᵀ(J_z v)_i + g_Rᵀv = (p_i − y_i)ᵀ(J_z v)_i +
		// g_Rᵀv (eq. 2.11).
		along := ReduceSum(Mul(Sub(probs, m.OneHot), jz), -1)
		if reg != nil {
			v := scaleEach(negGrad, sqrtInvS)
			along = Add(along, gn.VecDot(orZerosLike(reg.grad, v), v))
		}
		scale.noise = gradientNoise(along)
	}
	sys.Shift = cfg.damping(damping, scale, m.S.Graph(), m.S.DType())
	if cfg.CG.StopAtNoise && scale.noise != nil {
		sys.Tolerance = noiseTolerance(scale.noise)
	}
	sol := gn.SolveCG(sys, cfg.CG.MaxIterations, cfg.CG.Tolerance, inWhileLoop(lin))
	dir := newDirection(scaleEach(sol.X, sqrtInvS), m, sol)
	dir.Solution = dir.D // the warm start's state is the direction, whatever S the next step takes
	dir.Method.Curvature = SGNCurvature
	dir.lambda, dir.scale, dir.metric, dir.grad = sys.Shift, scale, metric, grad
	return dir
}
