// Package dense assembles the dense curvature matrices of a small classification batch, for
// fgn/paper's Dense and for the tests of package fgn (which cannot import fgn/paper: paper
// imports fgn). It takes the batch's logit VJP and margin quantities as arguments, so that it
// imports neither.
package dense

import (
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
)

// Margin holds the margin quantities of section 2 of the paper that the dense forms use, as
// fgn.Margin computes them: q, p_†, ρ (b×C, 0 at the true class), ∇_z s (b×C) and the one-hot
// labels (b×C).
type Margin struct {
	Q, PDagger, Rho, GradS, OneHot *Node
}

// Matrices are the dense forms documented by fgn/paper's Dense.
type Matrices struct {
	JZ, JS, Grad, Cov, Kept, DroppedOut, GGN, FGN, Dropped *Node
}

// New assembles the dense forms of the batch whose logits (b×C) have the VJP vjp (m ↦ J_zᵀ m,
// shaped like the parameters) and the margin quantities m, with b·C calls of vjp.
func New(logits *Node, vjp func(m *Node) []*Node, m Margin) Matrices {
	g := logits.Graph()
	b, numClasses := logits.Shape().Dim(0), logits.Shape().Dim(1)
	probs := Softmax(logits, -1)

	rows := make([]*Node, 0, b*numClasses)
	for i := range b {
		for c := range numClasses {
			unit := Reshape(OneHot(Const(g, int32(i*numClasses+c)), b*numClasses, logits.DType()), b, numClasses)
			rows = append(rows, flatten(vjp(unit)))
		}
	}
	d := rows[0].Shape().Dim(0)
	jz := Reshape(Concatenate(rows, 0), b, numClasses, d)
	js := Einsum("bc,bcd->bd", m.GradS, jz)

	cov := Sub(diagEmbed(probs), outer(probs))
	kept := Mul(Reshape(m.Q, b, 1, 1), outer(m.GradS))
	droppedOut := Mul(Reshape(m.PDagger, b, 1, 1), Sub(diagEmbed(m.Rho), outer(m.Rho)))
	invB := 1 / float64(b)
	project := func(outCov *Node) *Node {
		return MulScalar(Einsum("bcd,bce->de", jz, Einsum("bcf,bfe->bce", outCov, jz)), invB)
	}
	return Matrices{
		JZ:         jz,
		JS:         js,
		Grad:       MulScalar(Einsum("bc,bcd->d", Sub(probs, m.OneHot), jz), invB),
		Cov:        cov,
		Kept:       kept,
		DroppedOut: droppedOut,
		GGN:        project(cov),
		FGN:        MulScalar(Einsum("bd,be->de", Mul(ExpandAxes(m.Q, -1), js), js), invB),
		Dropped:    project(droppedOut),
	}
}

// flatten concatenates the tensors of v into one vector, in order, row-major.
func flatten(v []*Node) *Node {
	parts := make([]*Node, len(v))
	for k, x := range v {
		parts[k] = Reshape(x, x.Shape().Size())
	}
	return Concatenate(parts, 0)
}

// outer returns x_i x_iᵀ for each row of x (b×C → b×C×C).
func outer(x *Node) *Node {
	return Mul(ExpandAxes(x, -1), ExpandAxes(x, 1))
}

// diagEmbed returns diag(x_i) for each row of x (b×C → b×C×C).
func diagEmbed(x *Node) *Node {
	n := x.Shape().Dim(1)
	square := shapes.Make(dtypes.Int32, n, n)
	eye := ConvertDType(Equal(Iota(x.Graph(), square, 0), Iota(x.Graph(), square, 1)), x.DType())
	return Mul(ExpandAxes(x, -1), ExpandAxes(eye, 0))
}
