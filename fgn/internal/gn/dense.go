package gn

import (
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
)

// Dense holds the dense forms of the curvature matrices for a small problem, over the flattened
// parameter vector of dimension d (the parameters concatenated in order, row-major). They are
// for diagnostics, tests and notebooks: building JZ takes b·C reverse passes.
type Dense struct {
	// JZ holds the logit Jacobians J_z,i (b×C×d).
	JZ *Node
	// JS is the margin Jacobian J (b×d), row i = ∇_z s_iᵀ J_z,i (eq. 2.9).
	JS *Node
	// Grad is the mean-loss gradient (d), computed as (1/b) J_zᵀ(p − y).
	Grad *Node
	// Cov, Kept and DroppedOut are the per-example output-space matrices of Theorem 3.1 (b×C×C),
	// in the original class order: the softmax covariance diag(p) − p pᵀ, the kept term
	// q ∇_z s ∇_z sᵀ and the dropped term p_†(diag(ρ) − ρρᵀ) (ρ is 0 at the true class).
	Cov, Kept, DroppedOut *Node
	// GGN, FGN and Dropped are the batch-mean parameter-space matrices (d×d): H_GGN (eq. 3.1),
	// H_FGN = (1/b) Jᵀ Q J (eq. 3.8), and (1/b) Σ_i p_† J_z,iᵀ (diag ρ − ρρᵀ) J_z,i (eq. 3.4's last
	// term). Each is assembled from its own definition, so GGN = FGN + Dropped is a check of
	// Theorem 3.1, not a construction.
	GGN, FGN, Dropped *Node
	// Margin holds the margin quantities of the batch.
	Margin *Margin
}

// NewDense assembles the dense forms of the batch whose logits (b×C) lin linearises, for the
// labels (b), with b·C VJPs of lin.
func NewDense(lin Products, labels *Node) *Dense {
	logits := lin.Logits()
	m := NewMargin(logits, labels)
	g := logits.Graph()
	b, numClasses := logits.Shape().Dim(0), logits.Shape().Dim(1)
	probs := Softmax(logits, -1)

	rows := make([]*Node, 0, b*numClasses)
	for i := range b {
		for c := range numClasses {
			unit := Reshape(OneHot(Const(g, int32(i*numClasses+c)), b*numClasses, logits.DType()), b, numClasses)
			rows = append(rows, flatten(lin.VJP(unit)))
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
	return &Dense{
		JZ:         jz,
		JS:         js,
		Grad:       MulScalar(Einsum("bc,bcd->d", Sub(probs, m.OneHot), jz), invB),
		Cov:        cov,
		Kept:       kept,
		DroppedOut: droppedOut,
		GGN:        project(cov),
		FGN:        MulScalar(Einsum("bd,be->de", Mul(ExpandAxes(m.Q, -1), js), js), invB),
		Dropped:    project(droppedOut),
		Margin:     m,
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
