package fgn

import (
	. "github.com/gomlx/gomlx/core/graph"

	"github.com/fgn-paper/fgn/fgn/internal/gn"
)

// sgnDirection is SGN's GNConfig.Direction, from x0 (nil for zero), with the damping λ chosen by
// damping from the batch's curvature scale μ = gᵀ(H_GGN + D)g/‖g‖² and gradient noise ν
// (batchScale) when damping is not nil (cfg.Damping otherwise), for the loss L = (1/b)Σφ(s_i) + R
// with the regulariser reg (nil for none): (H_GGN + D + λI) d = −(g + g_R), D the Hessian of R's L2
// terms added to the product and g_R = ∇R to the right-hand side (see regularisation). (H_GGN + D)
// g is the product of CG's first iteration, which starts from p_0 = −g and takes it
// (gn.CGSystem.RHSProduct), and ν comes from its JVP; with a warm start they cost one product more.
func sgnDirection(lin Linearization, labels *Node, x0 Vec, cfg Settings, damping dampingFn, reg *regularisation) *Direction {
	cfg.mustValidateSolve()
	m := gn.NewMargin(lin.Logits(), labels)
	b := float64(m.S.Shape().Dim(0))
	probs := Softmax(lin.Logits(), -1)
	// −g = Jᵀ(y − p)/b: the scale and sign go into the b×C cotangent.
	negGrad := lin.VJP(MulScalar(Sub(m.OneHot, probs), 1/b))
	if reg != nil {
		negGrad = subtract(negGrad, reg.grad)
	}
	// product returns (H_GGN + D) v from m = J_z v.
	product := func(v Vec, m *Node) Vec {
		out := gn.GGN(lin, probs, m)
		if reg != nil {
			for k, dk := range reg.hessian {
				if dk > 0 {
					out[k] = Add(out[k], MulScalar(v[k], dk))
				}
			}
		}
		return out
	}
	sys := gn.CGSystem{Curvature: func(v Vec) Vec { return product(v, lin.JVP(v)) }, RHS: negGrad, X0: x0}
	var scale batchScale
	if x0 == nil || damping != nil || cfg.CG.StopAtNoise {
		jz := lin.JVP(negGrad)
		sys.RHSProduct = product(negGrad, jz)
		scale.curvature = curvatureScale(gn.VecDot(negGrad, sys.RHSProduct), gn.VecDot(negGrad, negGrad))
		// Example i's gradient of L along −g is ∇_z ℓ_iᵀ(J_z v)_i + g_Rᵀv = (p_i − y_i)ᵀ(J_z v)_i + g_Rᵀv
		// for v = −g (eq. 2.11).
		along := ReduceSum(Mul(Sub(probs, m.OneHot), jz), -1)
		if reg != nil {
			along = Add(along, gn.VecDot(orZerosLike(reg.grad, negGrad), negGrad))
		}
		scale.noise = gradientNoise(along)
	}
	sys.Shift = cfg.damping(damping, scale, m.S.Graph(), m.S.DType())
	if cfg.CG.StopAtNoise && scale.noise != nil {
		sys.Tolerance = noiseTolerance(scale.noise)
	}
	sol := gn.SolveCG(sys, cfg.CG.MaxIterations, cfg.CG.Tolerance, inWhileLoop(lin))
	dir := newDirection(sol.X, m, sol)
	dir.Method.Curvature = SGNCurvature
	dir.lambda, dir.scale = sys.Shift, scale
	return dir
}
