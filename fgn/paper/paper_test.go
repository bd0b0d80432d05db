package paper

import (
	"math"
	"testing"

	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"

	"github.com/fgn-paper/fgn/fgn"
	"github.com/fgn-paper/fgn/internal/ref"
)

// TestParameterOperators checks FGNOperator, GGNOperator (through autodiff products) and CG on
// FGNOperator against the dense float64 matrices of NewDense: (H + λI) g for the batch gradient
// g, and the solution of (H_FGN + λI) x = −g by gonum.
func TestParameterOperators(t *testing.T) {
	p := newProblem(21, 6, 4, 5, 1)
	for _, lambda := range []float64{0, 0.7} {
		out := run(t, func(in []*Node) []*Node {
			lin := fgn.Linearize(head(in).Logits(), head(in).Params())
			dn := NewDense(lin, in[1])
			_, grad := LossGradient(lin, in[1])
			l := Scalar(in[0].Graph(), dtypes.Float64, lambda)
			neg := fgn.Vec{Neg(grad[0]), Neg(grad[1])}
			damped := Scalar(in[0].Graph(), dtypes.Float64, lambda+0.5)
			sol := CG(FGNOperator(lin, in[1], damped), neg, nil, fgn.CGSettings{MaxIterations: 40, Tolerance: 1e-13})
			probs := Softmax(lin.Logits(), -1)
			return []*Node{dn.FGN, dn.GGN, dn.Grad, flatten(FGNOperator(lin, in[1], l)(grad)),
				flatten(GGNOperator(lin, probs, l)(grad)), flatten(sol.X), sol.Residual}
		}, p.inputs()...)
		fgnMat, ggnMat, grad := out[0], out[1], out[2]
		check(t, "FGNOperator(g) vs dense (H_FGN+λI) g", ref.RelErr(out[3], matVec(fgnMat, lambda, grad)), 1e-13)
		check(t, "GGNOperator(g) vs dense (H_GGN+λI) g", ref.RelErr(out[4], matVec(ggnMat, lambda, grad)), 1e-13)
		neg := make([]float64, len(grad))
		for k, g := range grad {
			neg[k] = -g
		}
		check(t, "CG on FGNOperator vs dense solve", ref.RelErr(out[5], solve(t, fgnMat, lambda+0.5, neg)), 1e-10)
		check(t, "CG residual", out[6][0], 1e-12)
	}
}

// TestRowSpace checks the columns of FGNRowOperator (with bλ = 0, on autodiff products) against
// AffineRowGram, and RowRHS against r/√q and the row system that the direction's solution solves.
func TestRowSpace(t *testing.T) {
	const lambda = 0.3
	p := newProblem(14, 7, 5, 4, 0.5)
	out := run(t, func(in []*Node) []*Node {
		h := head(in)
		generic := fgn.Linearize(h.Logits(), h.Params())
		m := NewMargin(h.Logits(), in[1])
		sqrtQ := Sqrt(m.Q)
		k := AffineRowGram(FeatureGram(in[0]), m.GradS, sqrtQ)
		op := FGNRowOperator(MarginJacobian{Lin: generic, GradS: m.GradS}, sqrtQ, ScalarZero(in[0].Graph(), dtypes.Float64))
		cols := make([]*Node, p.b)
		for i := range p.b {
			e := OneHot(Const(in[0].Graph(), int32(i)), p.b, dtypes.Float64)
			cols[i] = ExpandAxes(op(e), -1)
		}
		cfg := fgn.Settings{Damping: lambda, CG: fgn.CGSettings{MaxIterations: 50, Tolerance: 1e-14}}
		dir := fgn.FGN().WithSettings(cfg).Direction(h, in[1], nil)
		return []*Node{k, Concatenate(cols, 1), RowRHS(m), dir.Solution[0], m.PDagger, m.Q}
	}, p.inputs()...)
	check(t, "AffineRowGram vs columns of FGNRowOperator", ref.RelErr(out[0], out[1]), 1e-13)
	rTilde := make([]float64, p.b)
	for i := range rTilde {
		rTilde[i] = out[4][i] / math.Sqrt(out[5][i])
	}
	check(t, "RowRHS vs r/√q", ref.RelErr(out[2], rTilde), 1e-14)
	ku := matVec(out[0], float64(p.b)*lambda, out[3])
	check(t, "(K + bλI) Solution vs RowRHS", ref.RelErr(ku, rTilde), 1e-10)
}
