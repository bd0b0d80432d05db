package train

import (
	"path"

	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/model/initializer"

	"github.com/fgn-paper/fgn/experiments/method"
	"github.com/fgn-paper/fgn/fgn"
)

// adamScope is the store scope of Adam's state: the step count and each parameter's moments.
const adamScope = "/adam"

// adamUpdate builds one step of Adam (Kingma and Ba, 2015), the algorithm of GoMLX's
// optimizer.Adam, on the parameters vars with their batch gradients grad (in the order of vars)
// and the hyper-parameters h (learning rate lr, β₁, β₂, ε; method.GoMLXAdam gives GoMLX's
// defaults). With the step count t ← t + 1, for each parameter w with gradient g,
//
//	m ← β₁m + (1−β₁)g,   v ← β₂v + (1−β₂)g²,   w ← w − s · m / (√v + ε̂),
//
// where s = lr √(1−β₂ᵗ)/(1−β₁ᵗ) and ε̂ = ε √(1−β₂ᵗ): the bias-corrected step lr m̂/(√v̂ + ε) with
// m̂ = m/(1−β₁ᵗ), v̂ = v/(1−β₂ᵗ), multiplied through by √(1−β₂ᵗ) so that the corrections are
// scalars.
//
// The step is taken only when the batch loss and ‖g‖² are finite; otherwise the parameters, the
// moments and t keep their values. It returns that condition (a boolean scalar). A finite ‖g‖²
// makes every g² finite, so finite moments stay finite; and the step is then finite too, since
// β₁² < β₂ bounds |m|/√v by (1−β₁)/√((1−β₂)(1−β₁²/β₂)) by the Cauchy-Schwarz inequality, whatever
// the gradients (only a parameter within one step of the largest float could overflow). The test
// therefore reads the squares of the gradient, which the second moment needs anyway, and nothing
// after the update.
//
// A step not taken runs the same arithmetic with the scalars (β₁, 1−β₁, β₂, 1−β₂, s) replaced by
// (1, 0, 1, 0, 0) and the non-finite g and g² by the finite w, so that it computes exactly m, v
// and w again (0·w = 0). The selections are of scalars, and of whole operands on a scalar
// condition (no mask the size of the parameters); m and v are each read once and no old value is
// needed once the new one is formed, so a backend may update the parameters and the moments in
// place. (An If on the condition would skip the arithmetic, but the pure-Go backend puts back into
// its pool a captured buffer that an If branch has updated in place and returned, so the next step
// overwrites the parameters the caller holds; see compat.go: compatIfCapturedBuffer in package fgn.)
func adamUpdate(scope *model.Scope, vars []*model.Variable, grad fgn.Vec, h method.AdamSettings, loss *Node) *Node {
	g := loss.Graph()
	state := scope.Store().Scope(adamScope).WithInitializer(initializer.Zero)
	stepVar := state.VariableWithShape("step", shapes.Make(loss.DType())).SetTrainable(false)
	before := stepVar.NodeValue(g)
	t := AddScalar(before, 1)
	one := OnesLike(t)
	correction1 := Sub(one, Pow(Scalar(g, t.DType(), h.Beta1), t))
	sqrtCorrection2 := Sqrt(Sub(one, Pow(Scalar(g, t.DType(), h.Beta2), t)))
	size := Div(MulScalar(sqrtCorrection2, h.LearningRate), correction1)
	epsilon := MulScalar(sqrtCorrection2, h.Epsilon)

	// One sum per tensor: a NaN or ±Inf entry makes the sum of squares NaN or +Inf.
	squares := make(fgn.Vec, len(grad))
	finite := IsFinite(loss)
	for k, x := range grad {
		squares[k] = Square(x)
		finite = LogicalAnd(finite, IsFinite(ReduceAllSum(squares[k])))
	}
	stepVar.SetNodeValue(Where(finite, t, before))
	for k, v := range vars {
		dtype := v.Shape().DType
		// taken returns x (a scalar) for a step taken, else skipped.
		taken := func(x *Node, skipped float64) *Node {
			return Where(finite, ConvertDType(x, dtype), Scalar(g, dtype, skipped))
		}
		beta1, rest1 := taken(Scalar(g, dtype, h.Beta1), 1), taken(Scalar(g, dtype, 1-h.Beta1), 0)
		beta2, rest2 := taken(Scalar(g, dtype, h.Beta2), 1), taken(Scalar(g, dtype, 1-h.Beta2), 0)
		moments := state.Store().Scope(path.Join(adamScope, v.Scope())).WithInitializer(initializer.Zero)
		mVar := moments.VariableWithShape(v.Name()+"_1st_moment", v.Shape()).SetTrainable(false)
		vVar := moments.VariableWithShape(v.Name()+"_2nd_moment", v.Shape()).SetTrainable(false)
		w := v.NodeValue(g)
		m := Add(Mul(beta1, mVar.NodeValue(g)), Mul(rest1, Where(finite, grad[k], w)))
		s := Add(Mul(beta2, vVar.NodeValue(g)), Mul(rest2, Where(finite, squares[k], w)))
		step := Mul(taken(size, 0), Div(m, Add(Sqrt(s), ConvertDType(epsilon, dtype))))
		v.SetNodeValue(Sub(w, step))
		mVar.SetNodeValue(m)
		vVar.SetNodeValue(s)
	}
	return finite
}
