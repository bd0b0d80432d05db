package paper

import (
	"math/rand/v2"
	"testing"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"gonum.org/v1/gonum/mat"

	"github.com/fgn-paper/fgn/fgn"
	"github.com/fgn-paper/fgn/fgn/backend"
	"github.com/fgn-paper/fgn/internal/graphrun"
	"github.com/fgn-paper/fgn/internal/ref"
)

var testBackend = backend.MustNew()

// problem is a small batch for an affine head z = h W + 1 biasᵀ.
type problem struct {
	b, d, c int
	h, w    [][]float64
	bias    []float64
	labels  []int32
}

func newProblem(seed uint64, b, d, c int, scale float64) problem {
	rng := rand.New(rand.NewPCG(seed, 7))
	return problem{b: b, d: d, c: c, h: ref.RandMatrix(rng, b, d, 1), w: ref.RandMatrix(rng, d, c, scale),
		bias: ref.RandMatrix(rng, 1, c, scale)[0], labels: ref.RandLabels(rng, b, c)}
}

// inputs are the Exec inputs: features, labels, W, bias.
func (p problem) inputs() []any { return []any{p.h, p.labels, p.w, p.bias} }

// head is the affine head of inputs laid out as above.
func head(in []*Node) *fgn.AffineHead { return fgn.NewAffineHead(in[0], in[2], in[3]) }

func f32(m [][]float64) [][]float32 {
	out := make([][]float32, len(m))
	for i, row := range m {
		out[i] = make([]float32, len(row))
		for j, x := range row {
			out[i][j] = float32(x)
		}
	}
	return out
}

func run(t *testing.T, fn func(in []*Node) []*Node, inputs ...any) [][]float64 {
	t.Helper()
	return graphrun.MustRun(t, testBackend, fn, inputs...)
}

// flat64 returns a tensor's values as a flat float64 slice.
func flat64(t *tensors.Tensor) []float64 {
	out, err := graphrun.Floats(t)
	if err != nil {
		panic(err)
	}
	return out
}

// flatten concatenates the parameters of v into one vector, row-major.
func flatten(v fgn.Vec) *Node {
	parts := make([]*Node, len(v))
	for k, x := range v {
		parts[k] = Reshape(x, x.Shape().Size())
	}
	return Concatenate(parts, 0)
}

// check fails the test when err > tol, printing both; dot is the inner product.
var check, dot = ref.Check, ref.Dot

// matVec returns A x + λx for a flat row-major n×n A.
func matVec(a []float64, lambda float64, x []float64) []float64 {
	n := len(x)
	out := make([]float64, n)
	for r := range n {
		out[r] = lambda*x[r] + dot(a[r*n:(r+1)*n], x)
	}
	return out
}

// solve returns the solution of (A + λI) x = rhs for a flat row-major n×n A.
func solve(t *testing.T, a []float64, lambda float64, rhs []float64) []float64 {
	t.Helper()
	n := len(rhs)
	m := mat.NewDense(n, n, append([]float64(nil), a...))
	for i := range n {
		m.Set(i, i, m.At(i, i)+lambda)
	}
	var x mat.VecDense
	if err := x.SolveVec(m, mat.NewVecDense(n, append([]float64(nil), rhs...))); err != nil {
		t.Fatalf("dense solve: %v", err)
	}
	return x.RawVector().Data
}
