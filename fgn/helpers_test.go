package fgn

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"gonum.org/v1/gonum/mat"

	"github.com/fgn-paper/fgn/fgn/backend"
	densemat "github.com/fgn-paper/fgn/fgn/internal/dense"
	"github.com/fgn-paper/fgn/internal/graphrun"
	"github.com/fgn-paper/fgn/internal/ref"
)

var testBackend = backend.MustNew()

// problem is a small classification batch with an affine head (W, bias) and an MLP
// (W1, b1, W2, b2) over the same features.
type problem struct {
	b, d, c, hidden int
	h               [][]float64
	labels          []int32
	w, w1, w2       [][]float64
	bias, b1, b2    []float64
}

func newProblem(seed uint64, b, d, c, hidden int, scale float64) *problem {
	rng := rand.New(rand.NewPCG(seed, 7))
	mat2 := func(r, k int, s float64) [][]float64 { return ref.RandMatrix(rng, r, k, s) }
	vec := func(k int, s float64) []float64 { return mat2(1, k, s)[0] }
	p := &problem{b: b, d: d, c: c, hidden: hidden, h: mat2(b, d, 1),
		w: mat2(d, c, scale), bias: vec(c, scale), w1: mat2(d, hidden, scale), b1: vec(hidden, scale),
		w2: mat2(hidden, c, scale), b2: vec(c, scale)}
	p.labels = ref.RandLabels(rng, b, c)
	return p
}

// affineInputs and mlpInputs are the Exec inputs: features, labels, then parameters.
func (p *problem) affineInputs(dtype dtypes.DType) []any {
	return []any{cast(p.h, dtype), p.labels, cast(p.w, dtype), cast(p.bias, dtype)}
}

func (p *problem) mlpInputs(dtype dtypes.DType) []any {
	return []any{cast(p.h, dtype), p.labels, cast(p.w1, dtype), cast(p.b1, dtype), cast(p.w2, dtype), cast(p.b2, dtype)}
}

func cast(x any, dtype dtypes.DType) any {
	if dtype == dtypes.Float64 {
		return x
	}
	switch v := x.(type) {
	case []float64:
		out := make([]float32, len(v))
		for i := range v {
			out[i] = float32(v[i])
		}
		return out
	case [][]float64:
		out := make([][]float32, len(v))
		for i := range v {
			out[i] = cast(v[i], dtype).([]float32)
		}
		return out
	}
	panic(fmt.Sprintf("cast: unsupported %T", x))
}

// affineLin and mlpLin build the linearisations from Exec inputs laid out as above.
func affineLin(in []*Node) Linearization { return NewAffineHead(in[0], in[2], in[3]) }

func mlpLin(in []*Node) Linearization {
	return Linearize(mlpLogits(in[0], Vec(in[2:6])), Vec(in[2:6]))
}

// mlpLogits is the MLP's model function: tanh(h W1 + b1) W2 + b2 for w = (W1, b1, W2, b2).
func mlpLogits(h *Node, w Vec) *Node {
	hidden := Tanh(Add(MatMul(h, w[0]), ExpandAxes(w[1], 0)))
	return Add(MatMul(hidden, w[2]), ExpandAxes(w[3], 0))
}

// run compiles and runs fn on the test backend and returns its outputs as flat float64 slices.
func run(t testing.TB, fn func(in []*Node) []*Node, inputs ...any) [][]float64 {
	t.Helper()
	return graphrun.MustRun(t, testBackend, fn, inputs...)
}

// flat64 returns a tensor's values as a flat float64 slice; it panics on a dtype graphrun.Floats
// cannot widen.
func flat64(t *tensors.Tensor) []float64 {
	out, err := graphrun.Floats(t)
	if err != nil {
		panic(err)
	}
	return out
}

func sub(a, b []float64) []float64 {
	out := make([]float64, len(a))
	for i := range a {
		out[i] = a[i] - b[i]
	}
	return out
}

// check fails the test when err > tol, printing both.
var check = ref.Check

// dense wraps a flat row-major n×n slice as a gonum matrix.
func dense(flat []float64, n int) *mat.Dense {
	return mat.NewDense(n, n, append([]float64(nil), flat...))
}

// denseSolve returns the solution of (A + λI) x = rhs.
func denseSolve(t *testing.T, a []float64, n int, lambda float64, rhs []float64) []float64 {
	t.Helper()
	m := dense(a, n)
	for i := range n {
		m.Set(i, i, m.At(i, i)+lambda)
	}
	var x mat.VecDense
	if err := x.SolveVec(m, mat.NewVecDense(n, append([]float64(nil), rhs...))); err != nil {
		t.Fatalf("dense solve: %v", err)
	}
	return x.RawVector().Data
}

// symEigen returns the eigenvalues of the symmetric part of a flat n×n matrix, ascending.
func symEigen(t *testing.T, a []float64, n int) []float64 {
	t.Helper()
	s := mat.NewSymDense(n, nil)
	for i := range n {
		for j := range n {
			s.SetSym(i, j, 0.5*(a[i*n+j]+a[j*n+i]))
		}
	}
	var e mat.EigenSym
	if !e.Factorize(s, false) {
		t.Fatal("eigen decomposition failed")
	}
	return e.Values(nil)
}

func shapesF32(dims ...int) shapes.Shape { return shapes.Make(dtypes.Float32, dims...) }

// matrixFree returns s with FGN's matrix-free row operator.
func matrixFree(s Settings) Settings {
	s.RowOperator = MatrixFree
	return s
}

// flattenVec concatenates the parameters of v into one vector, in order, row-major.
func flattenVec(v Vec) *Node {
	parts := make([]*Node, len(v))
	for k, x := range v {
		parts[k] = Reshape(x, x.Shape().Size())
	}
	return Concatenate(parts, 0)
}

// newDense assembles the dense forms of fgn/paper's Dense (which this package's tests cannot
// import) for the linearisation lin and the labels, with the margin quantities of NewMargin.
func newDense(lin Linearization, labels *Node) (densemat.Matrices, *Margin) {
	m := NewMargin(lin.Logits(), labels)
	return densemat.New(lin.Logits(), func(c *Node) []*Node { return lin.VJP(c) },
		densemat.Margin{Q: m.Q, PDagger: m.PDagger, Rho: m.Rho, GradS: m.GradS, OneHot: m.OneHot}), m
}
