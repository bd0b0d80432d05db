package fgn

import (
	"path"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
)

// stepAverage is the state of Settings.Momentum: an optimizer with β > 0 steps along the
// bias-corrected exponential average of its steps,
//
//	m_t = β m_{t−1} + (1 − β) τ_t d_t,      s_t = α m_t / (1 − βᵗ),
//
// d_t the step's direction, τ_t its step length (FGN's GGN step length, else 1) and α the step
// size, as Adam averages its gradients (its first moment, with the same bias correction). The
// average keeps the length of a direction that the batches agree on and shrinks, by up to
// √((1 − β)/(1 + β)), the part that each batch's gradient noise puts in its own direction.
// It keeps m per parameter and t under the optimizer's scope.
type stepAverage struct {
	beta  float64
	vars  []*model.Variable // m per parameter, in the parameters' dtypes
	count *model.Variable   // t, float64 scalar
	prev  Vec               // m_{t−1}
	next  Vec               // m_t
	t     *Node             // t = (t − 1) + 1
}

// newStepAverage reads the average's state for the parameters params (of the variables vars),
// created at zero on first use.
func (o *gnOptimizer) newStepAverage(scope *model.Scope, g *Graph, vars []*model.Variable, params Vec) *stepAverage {
	a := &stepAverage{beta: o.c.s.Momentum, vars: make([]*model.Variable, len(params)), prev: make(Vec, len(params))}
	state := func(dir, name string, shape shapes.Shape) *model.Variable {
		return stateVariable(scope.Store(), dir, name, shape, "momentum state")
	}
	root := path.Join("/", o.c.scopeName)
	a.count = state(root, "momentum_steps", shapes.Make(dtypes.Float64))
	a.t = OnePlus(a.count.NodeValue(g))
	for k, p := range params {
		a.vars[k] = state(path.Join(root, vars[k].Scope()), vars[k].Name()+"_momentum", p.Shape())
		a.prev[k] = a.vars[k].NodeValue(g)
	}
	return a
}

// step returns the step s_t for the direction d, its logits' JVP z_d = J_z d, its length tau and
// the step size alpha (scalars), and z_s = J_z s_t = α(β J_z m_{t−1} + (1 − β) τ z_d)/(1 − βᵗ),
// one JVP of lin.
func (a *stepAverage) step(lin Linearization, d Vec, zd, tau, alpha *Node) (s Vec, zs *Node) {
	g := zd.Graph()
	scale := Div(ConvertDType(alpha, dtypes.Float64), OneMinus(Pow(Scalar(g, dtypes.Float64, a.beta), a.t)))
	weight := MulScalar(ConvertDType(tau, dtypes.Float64), 1-a.beta) // (1 − β)τ
	a.next, s = make(Vec, len(d)), make(Vec, len(d))
	for k, dk := range d {
		dtype := dk.DType()
		a.next[k] = Add(MulScalar(a.prev[k], a.beta), Mul(ConvertDType(weight, dtype), dk))
		s[k] = Mul(ConvertDType(scale, dtype), a.next[k])
	}
	dtype := zd.DType()
	zm := Add(MulScalar(lin.JVP(a.prev), a.beta), Mul(ConvertDType(weight, dtype), zd))
	return s, Mul(ConvertDType(scale, dtype), zm)
}

// update keeps m_t and t where the step was taken (accepted), restarts the average (m = 0,
// t = 0) where a finite step was rejected, and leaves it as it was where the step was not
// finite: a bad batch changes nothing.
func (a *stepAverage) update(finite, accepted *Node) {
	count := a.count.NodeValue(finite.Graph())
	a.count.SetNodeValue(Where(accepted, a.t, Where(finite, ZerosLike(count), count)))
	for k, v := range a.vars {
		v.SetNodeValue(Where(accepted, StopGradient(a.next[k]), Where(finite, ZerosLike(a.prev[k]), a.prev[k])))
	}
}
