package fgn

import (
	"math"
	"testing"

	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"

	"github.com/fgn-paper/fgn/internal/ref"
)

// exactCG makes CG run to convergence on a b-dimensional (or small d-dimensional) system.
var exactCG = Settings{Damping: 0.7, CG: CGSettings{MaxIterations: 40, Tolerance: 1e-14}}

// denseFGNStep returns the dense solution of (H_FGN + λI) d = −g.
func denseFGNStep(t *testing.T, dn denseOut, lambda float64) []float64 {
	neg := make([]float64, dn.d)
	for k := range neg {
		neg[k] = -dn.grad[k]
	}
	return denseSolve(t, dn.fgn, dn.d, lambda, neg)
}

// TestEquivalenceLemma checks that the back-projected whitened row-space CG solution equals the
// dense damped parameter-space solve (appendix D.1), for the generic closures (MLP and affine)
// and the closed-form affine Gram.
func TestEquivalenceLemma(t *testing.T) {
	p := newProblem(8, 6, 9, 5, 4, 1) // d > b for both models: the row space is the smaller one.
	for _, tc := range []struct {
		name string
		mlp  bool
		fn   func(in []*Node) *Direction
	}{
		{"mlp generic", true, func(in []*Node) *Direction { return FGNDirection(mlpLin(in), in[1], nil, exactCG) }},
		{"affine generic", false, func(in []*Node) *Direction {
			return FGNDirection(Linearize(affineLin(in).Logits(), Vec{in[2], in[3]}), in[1], nil, exactCG)
		}},
		{"affine matrix-free", false, func(in []*Node) *Direction {
			return FGNDirection(affineLin(in), in[1], nil, matrixFree(exactCG))
		}},
		{"affine closed-form Gram", false, func(in []*Node) *Direction { return FGNDirection(affineLin(in), in[1], nil, exactCG) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dn := runDense(t, p, tc.mlp)
			inputs := p.affineInputs(dtypes.Float64)
			if tc.mlp {
				inputs = p.mlpInputs(dtypes.Float64)
			}
			out := run(t, func(in []*Node) []*Node {
				dir := tc.fn(in)
				return []*Node{flattenVec(dir.D), dir.Iterations, dir.Residual}
			}, inputs...)
			check(t, "row-space CG vs dense (H_FGN+λI)⁻¹(−g)", ref.RelErr(out[0], denseFGNStep(t, dn, exactCG.Damping)), 1e-8)
			if out[1][0] > float64(p.b)+1 || out[2][0] > exactCG.CG.Tolerance {
				t.Errorf("CG used %v iterations, residual %v: want ≤ b+1 iterations and residual ≤ %g",
					out[1][0], out[2][0], exactCG.CG.Tolerance)
			}
		})
	}
}

// TestRowSystemIdentities checks, on dense matrices, the similarity of the unwhitened and
// whitened row operators (eq. D.6) and the residual-transfer identity and bound (appendix D.4)
// for an arbitrary row-space iterate u.
func TestRowSystemIdentities(t *testing.T) {
	p := newProblem(9, 5, 3, 4, 3, 1)
	dn := runDense(t, p, true)
	b, d, lambda := p.b, dn.d, 0.3
	bl := float64(b) * lambda
	sq := make([]float64, b)
	for i := range sq {
		sq[i] = math.Sqrt(dn.q[i])
	}
	jjt := make([]float64, b*b)
	for i := range b {
		for j := range b {
			for k := range d {
				jjt[i*b+j] += dn.js[i*d+k] * dn.js[j*d+k]
			}
		}
	}
	var simErr, scale float64
	for i := range b {
		for j := range b {
			unwhitened := dn.q[i] * jjt[i*b+j]
			kij := sq[i] * jjt[i*b+j] * sq[j]
			similar := sq[i] * kij / sq[j]
			if i == j {
				unwhitened += bl
				similar += bl
			}
			simErr = math.Max(simErr, math.Abs(unwhitened-similar))
			scale = math.Max(scale, math.Abs(unwhitened))
		}
	}
	check(t, "QJJᵀ+bλI = Q^{1/2}(K+bλI)Q^{-1/2}", simErr/scale, 1e-14)

	// Arbitrary iterate u: residual e = (K+bλ)u − r̃, d = −J̃ᵀu, ε = (H+λ)d + g.
	u := []float64{0.3, -1.2, 0.5, 2.0, -0.7}[:b]
	e := make([]float64, b)
	for i := range b {
		e[i] = bl*u[i] - math.Sqrt(dn.pDagger[i]*dn.pDagger[i]/dn.q[i])
		for j := range b {
			e[i] += sq[i] * jjt[i*b+j] * sq[j] * u[j]
		}
	}
	dir := make([]float64, d)
	want := make([]float64, d)
	for k := range d {
		for i := range b {
			dir[k] -= dn.js[i*d+k] * sq[i] * u[i]
			want[k] -= dn.js[i*d+k] * sq[i] * e[i] / float64(b)
		}
	}
	eps := make([]float64, d)
	for k := range d {
		eps[k] = dn.grad[k] + lambda*dir[k]
		for l := range d {
			eps[k] += dn.fgn[k*d+l] * dir[l]
		}
	}
	check(t, "ε = −(1/b) J̃ᵀe", ref.RelErr(eps, want), 1e-12)
	kEig := make([]float64, b*b)
	for i := range b {
		for j := range b {
			kEig[i*b+j] = sq[i] * jjt[i*b+j] * sq[j]
		}
	}
	eigs := symEigen(t, kEig, b)
	bound := math.Sqrt(eigs[b-1]) * norm(e) / float64(b)
	if norm(eps) > bound*(1+1e-12) {
		t.Errorf("‖ε‖ = %g exceeds the bound ‖J̃‖‖e‖/b = %g", norm(eps), bound)
	}
}

func norm(x []float64) float64 { return math.Sqrt(dot(x, x)) }

var dot = ref.Dot

// TestClosures checks the generic JVP/VJP of the margin map against central finite differences
// (MLP), the adjoint identity ⟨a, Jβ⟩ = ⟨Jᵀa, β⟩, and the generic closures against the analytic
// affine-head Jacobian.
func TestClosures(t *testing.T) {
	p := newProblem(10, 4, 3, 5, 4, 1)
	beta := newProblem(11, 4, 3, 5, 4, 1) // its parameters serve as a direction
	a := []float64{0.5, -1, 2, 0.25}
	const h = 1e-5
	out := run(t, func(in []*Node) []*Node {
		lin := mlpLin(in)
		m := NewMargin(lin.Logits(), in[1])
		j := marginJacobian{lin: lin, gradS: m.GradS}
		dirs := Vec(in[6:10])
		shifted := func(sign float64) *Node {
			params := vecAxpy(Vec(in[2:6]), Scalar(in[0].Graph(), dtypes.Float64, sign*h), dirs)
			hidden := Tanh(Add(MatMul(in[0], params[0]), ExpandAxes(params[1], 0)))
			return NewMargin(Add(MatMul(hidden, params[2]), ExpandAxes(params[3], 0)), in[1]).S
		}
		fd := DivScalar(Sub(shifted(1), shifted(-1)), 2*h)
		return []*Node{j.jvp(dirs), fd, vecDot(j.vjp(in[10]), dirs)}
	}, append(p.mlpInputs(dtypes.Float64), beta.w1, beta.b1, beta.w2, beta.b2, a)...)
	check(t, "JVP vs central differences (MLP)", ref.RelErr(out[0], out[1]), 1e-8)
	check(t, "⟨a, Jβ⟩ = ⟨Jᵀa, β⟩", math.Abs(dot(a, out[0])-out[2][0])/math.Abs(out[2][0]), 1e-13)

	q := newProblem(12, 5, 6, 4, 2, 1)
	dirs := newProblem(13, 5, 6, 4, 2, 1)
	aff := run(t, func(in []*Node) []*Node {
		head := affineLin(in)
		generic := Linearize(head.Logits(), head.Params())
		v := Vec{in[4], in[5]}
		cot := Tanh(head.Logits()) // any b×C cotangent
		return []*Node{head.JVP(v), generic.JVP(v), flattenVec(head.VJP(cot)), flattenVec(generic.VJP(cot))}
	}, append(q.affineInputs(dtypes.Float64), dirs.w, dirs.bias)...)
	check(t, "generic JVP vs analytic affine J_z v", ref.RelErr(aff[1], aff[0]), 1e-14)
	check(t, "generic VJP vs analytic affine J_zᵀ m", ref.RelErr(aff[3], aff[2]), 1e-14)
}

// TestAffineClosedFormMatchesGeneric checks that the closed-form affine Gram (appendix F.2)
// reproduces the generic matrix-free path: the same Gram and, with the paper's truncated CG
// (5 iterations), the same direction and iteration count.
func TestAffineClosedFormMatchesGeneric(t *testing.T) {
	p := newProblem(14, 16, 12, 7, 2, 0.5)
	out := run(t, func(in []*Node) []*Node {
		head := NewAffineHead(in[0], in[2], in[3])
		generic := Linearize(head.Logits(), head.Params())
		m := NewMargin(head.Logits(), in[1])
		sqrtQ := Sqrt(m.Q)
		whiten := func(v *Node) *Node { return Mul(sqrtQ, v) }
		k := Mul(Mul(head.MarginGram(m.GradS), ExpandAxes(sqrtQ, -1)), ExpandAxes(sqrtQ, 0))
		j := marginJacobian{generic, m.GradS}
		op := func(v *Node) *Node { return whiten(j.jvp(j.vjp(whiten(v)))) }
		probe := Iota(in[0].Graph(), k.Shape(), 0) // columns of the identity, via equality below
		eye := ConvertDType(Equal(probe, Iota(in[0].Graph(), k.Shape(), 1)), dtypes.Float64)
		cols := make([]*Node, p.b)
		for i := range p.b {
			cols[i] = ExpandAxes(op(Reshape(Slice(eye, AxisRange(), AxisElem(i)), p.b)), -1)
		}
		closed := FGNDirection(head, in[1], nil, DefaultSettings())
		gen := FGNDirection(generic, in[1], nil, DefaultSettings())
		return []*Node{k, Concatenate(cols, 1), flattenVec(closed.D), flattenVec(gen.D), closed.Iterations, gen.Iterations}
	}, p.affineInputs(dtypes.Float64)...)
	check(t, "closed-form K vs Q^{1/2}JJᵀQ^{1/2} of the closures", ref.RelErr(out[0], out[1]), 1e-13)
	check(t, "closed-form vs generic direction (5 CG iterations)", ref.RelErr(out[2], out[3]), 1e-10)
	if out[4][0] != out[5][0] {
		t.Errorf("iterations differ: closed form %v, generic %v", out[4][0], out[5][0])
	}
}

// TestSGNDirection checks the SGN direction against the dense solve of (H_GGN + λI) d = −g,
// from a zero and from a warm start.
func TestSGNDirection(t *testing.T) {
	p := newProblem(15, 4, 2, 4, 3, 1) // d = 2·3+3+3·4+4 = 25
	dn := runDense(t, p, true)
	neg := make([]float64, dn.d)
	for k := range neg {
		neg[k] = -dn.grad[k]
	}
	want := denseSolve(t, dn.ggn, dn.d, exactCG.Damping, neg)
	for _, warm := range []bool{false, true} {
		out := run(t, func(in []*Node) []*Node {
			lin := mlpLin(in)
			var x0 Vec
			if warm {
				x0 = vecScale(Scalar(in[0].Graph(), dtypes.Float64, 0.1), Vec(in[2:6])) // any start
			}
			dir := SGNDirection(lin, in[1], x0, exactCG)
			return []*Node{flattenVec(dir.D)}
		}, p.mlpInputs(dtypes.Float64)...)
		check(t, "SGN vs dense (H_GGN+λI)⁻¹(−g)", ref.RelErr(out[0], want), 1e-8)
	}
}
