package fgn

import (
	"fmt"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/support/exceptions"
)

// Vec is a point or a direction in parameter space: one node per model parameter tensor,
// in a fixed order. It is the parameter-space vector type of every operator in this package.
type Vec []*Node

// Linearization is the logit map z(w) linearised at the current parameters: the logits and
// products with the logit Jacobian J_z (b·C × d). It is built once per step; VJP and JVP may be
// called any number of times and reuse the forward pass.
//
// Linearize provides it for any model by autodiff and NewAffineHead in closed form for an affine
// head; a model whose Jacobian products have another closed form implements it and hands it to
// the optimizers with RecordLinearization (or UpdateGraphWithLinearization). It may also
// implement GramLinearization (a closed-form margin Gram, for FGN's ClosedFormGram row operator)
// and LogitsEvaluator (the logits at other parameters, for adaptive damping).
type Linearization interface {
	// Logits returns z (b×C) at the linearisation point.
	Logits() *Node
	// Params returns the parameter nodes w that the Jacobian is taken with respect to.
	Params() Vec
	// VJP returns J_zᵀ m for a cotangent m (b×C), shaped like Params.
	VJP(m *Node) Vec
	// JVP returns J_z v (b×C) for a tangent v shaped like Params.
	JVP(v Vec) *Node
}

// whileSafe is implemented by the linearisations of this package whose products may be built
// inside a GoMLX While body, so that CG runs in an in-graph While loop on them; CG's loop is
// unrolled for every other linearisation, autodiff products included (see whileLoop). FGN's
// closed-form Gram needs no mark: it is formed before the loop, whose body then holds b×b
// products only.
type whileSafe interface {
	whileSafe()
}

// inWhileLoop reports whether CG may iterate on lin's products in a While loop.
func inWhileLoop(lin Linearization) bool {
	_, ok := lin.(whileSafe)
	return ok
}

// Linearize returns the generic linearisation of any logits node computed from params, using
// GoMLX reverse-mode autodiff. VJP is one reverse pass, VJP(m) = ∇_w⟨z(w), m⟩. GoMLX has no
// forward mode, so JVP uses the double-VJP identity: a ↦ J_zᵀa is linear, hence
// J_z v = ∇_a⟨J_zᵀa, v⟩ at any a (here a = 0).
//
// Both reuse the forward nodes of logits, so the forward pass is computed once per step,
// whatever the number of products.
//
// The double VJP needs the gradient of every op's gradient between params and logits. A fused
// op whose VJP is itself a fused op without a gradient breaks it: layers.Dense builds GoMLX's
// FusedDense on backends that implement it (the pure-Go backend does), and JVP then panics
// naming the op. Build such layers from MatMul and Add (as the examples do), or set the
// environment variable GOMLX_FUSION=false before the graph is built to make GoMLX decompose
// every fused op.
func Linearize(logits *Node, params Vec) Linearization {
	if logits.Rank() != 2 {
		exceptions.Panicf("fgn.Linearize: logits must be b×C, got %s", logits.Shape())
	}
	if len(params) == 0 {
		exceptions.Panicf("fgn.Linearize: no parameters given")
	}
	return &autodiffLinearization{logits: logits, params: params}
}

type autodiffLinearization struct {
	logits *Node
	params Vec
}

func (l *autodiffLinearization) Logits() *Node { return l.logits }
func (l *autodiffLinearization) Params() Vec   { return l.params }

// VJP treats m as a constant: cotangents built from the logits (such as a ⊙ ∇_z s) must not be
// differentiated.
func (l *autodiffLinearization) VJP(m *Node) Vec {
	return l.vjp(StopGradient(m))
}

func (l *autodiffLinearization) JVP(v Vec) *Node {
	a := ZerosLike(l.logits)
	var jv *Node
	if err := exceptions.TryCatch[error](func() { jv = Gradient(vecDot(l.vjp(a), v), a)[0] }); err != nil {
		panic(fmt.Errorf("fgn.Linearize: J_z v by double VJP needs the gradient of every op's gradient "+
			"(build fused layers such as layers.Dense from MatMul and Add, or set GOMLX_FUSION=false): %w", err))
	}
	return jv
}

func (l *autodiffLinearization) vjp(m *Node) Vec {
	return Gradient(ReduceAllSum(Mul(l.logits, m)), l.params...)
}

// vecDot returns Σ_k ⟨a_k, b_k⟩ as a scalar node.
func vecDot(a, b Vec) *Node {
	var sum *Node
	for k := range a {
		term := ReduceAllSum(Mul(a[k], b[k]))
		if sum == nil {
			sum = term
		} else {
			sum = Add(sum, term)
		}
	}
	return sum
}

// vecAxpy returns x + alpha·y, alpha a scalar node.
func vecAxpy(x Vec, alpha *Node, y Vec) Vec {
	out := make(Vec, len(x))
	for k := range x {
		out[k] = Add(x[k], Mul(ConvertDType(alpha, y[k].DType()), y[k]))
	}
	return out
}

// vecScale returns alpha·x, alpha a scalar node.
func vecScale(alpha *Node, x Vec) Vec {
	out := make(Vec, len(x))
	for k := range x {
		out[k] = Mul(ConvertDType(alpha, x[k].DType()), x[k])
	}
	return out
}

func vecZerosLike(x Vec) Vec {
	out := make(Vec, len(x))
	for k := range x {
		out[k] = ZerosLike(x[k])
	}
	return out
}
