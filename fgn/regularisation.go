package fgn

import (
	"fmt"
	"slices"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/support/exceptions"

	"github.com/fgn-paper/fgn/jvp"
)

// regularisation is the part R of the loss to minimise that GoMLX's regularisers add to Loss's
// cross-entropy, L(w) = (1/b) Σ_i φ(s_i) + R(w) (train.AddRegularizationLoss; the Trainer hands
// the optimizer their sum), recognised in the graph by recogniseRegularisation as a sum of
//
//	L2 terms   c·‖w_k‖²      (regularizer.L2 on a variable: c·ReduceAllSum(Square(w_k))),
//	L1 terms   c·‖A(w)‖₁     (regularizer.L1, c·ReduceAllSum(Abs(w_k)), and KAN's ConstantL1 on
//	                          consecutive differences: A affine in the parameters),
//
// with constant c (c > 0 for L2). FGN and SGN step on the exact gradient of L, g + ∇R(w), and on
// the curvature H + D, D the exact Hessian of the L2 terms: 2c on every entry of w_k, so
// D = diag(D_k I) with one constant D_k = 2 Σ c per parameter tensor, which joins the damping,
// Λ = λI + D. An L1 term has no Hessian where it is differentiable (almost everywhere: where no
// entry of A(w) is 0) and is piecewise linear, so it enters the step through its exact gradient
// (GoMLX's subgradient c·Aᵀ sign(A(w)), sign(0) = 0) with zero curvature. GoMLX's L1 also zeroes
// the weights below c after each step (train.AddPerStepUpdateGraphFn), whatever the optimizer.
type regularisation struct {
	// loss is R(w) (scalar), the sum of the recognised terms.
	loss *Node
	// grad is ∇R(w), shaped like the parameters, nil for a parameter R does not read.
	grad Vec
	// hessian holds D_k, the Hessian of the L2 terms on parameter k per entry (0 for none).
	hessian []float64
	params  Vec
}

// lossTerms returns the terms that loss, the loss to minimise, adds to ce, the cross-entropy Loss
// returned: loss must be a sum (Add nodes) in which ce appears once. It panics otherwise.
// optimizer names the optimizer in messages.
func lossTerms(loss, ce *Node, optimizer string) []*Node {
	var terms []*Node
	found := 0
	var split func(n *Node)
	split = func(n *Node) {
		switch {
		case n == ce:
			found++
		case n.Type() == NodeTypeAdd:
			split(n.Inputs()[0])
			split(n.Inputs()[1])
		default:
			terms = append(terms, n)
		}
	}
	split(loss)
	if found != 1 {
		exceptions.Panicf("fgn: the loss to minimise is not the one fgn.Loss returned plus regularisation terms (another "+
			"loss, or fgn.Loss's loss scaled; it holds it %d times); %s's curvature is that of fgn.Loss's cross-entropy",
			found, optimizer)
	}
	return terms
}

// recogniseRegularisation returns the regulariser R whose terms (lossTerms) the loss to minimise
// adds to Loss's cross-entropy, for the parameters params, or nil when there is none. It panics, naming the term, on
// any other term than those of regularisation. optimizer names the optimizer in messages.
func recogniseRegularisation(terms []*Node, params Vec, optimizer string) *regularisation {
	if len(terms) == 0 {
		return nil
	}
	index := make(map[*Node]int, len(params))
	for k, p := range params {
		index[p] = k
	}
	// The walk from the parameters to the terms: a node depends on the parameters iff it is in it
	// (the parameters, listed among the outputs, make sure the walk reaches one).
	dependent := map[*Node]bool{}
	for _, n := range jvp.Dependents(append(slices.Clone(terms), params...), params) {
		dependent[n] = true
	}
	for _, p := range params {
		dependent[p] = true
	}
	r := &regularisation{hessian: make([]float64, len(params)), params: params}
	read := make([]bool, len(params))
	var parse func(n *Node, scale float64) error
	parse = func(n *Node, scale float64) error {
		in := n.Inputs()
		switch {
		case !dependent[n]: // a constant term
			return nil
		case n.Type() == NodeTypeAdd:
			if err := parse(in[0], scale); err != nil {
				return err
			}
			return parse(in[1], scale)
		case n.Type() == NodeTypeMul && len(in) == 2:
			for k := range 2 {
				if c, ok := scalarConstant(in[k]); ok {
					return parse(in[1-k], scale*c)
				}
			}
		case n.Type() == NodeTypeReduceSum && n.Shape().IsScalar():
			x := in[0]
			xin := x.Inputs()
			if x.Type() == NodeTypeMul && len(xin) == 2 && xin[0] == xin[1] {
				k, isParam := index[xin[0]]
				if !isParam {
					break
				}
				if !(scale > 0) {
					return fmt.Errorf("an L2 term %g·Σw² on parameter %d (%s) with an amount that is not > 0", scale, k, xin[0].Shape())
				}
				r.hessian[k] += 2 * scale
				read[k] = true
				return nil
			}
			if x.Type() == NodeTypeAbs && affine(xin[0], index, dependent, read) {
				return nil
			}
		}
		return fmt.Errorf("a term %s (%s) that is not c·Σw² of a parameter w, c·Σ|A(w)| of an affine A, or a sum of them",
			n.Type(), n.Shape())
	}
	for _, term := range terms {
		if err := parse(term, 1); err != nil {
			exceptions.Panicf("fgn: the loss to minimise adds to fgn.Loss's cross-entropy %v; %s takes GoMLX's L2 and L1 "+
				"regularisation terms (train.AddRegularizationLoss) and no other loss", err, optimizer)
		}
	}
	var readParams Vec
	for k, p := range params {
		if read[k] {
			readParams = append(readParams, p)
		}
	}
	if len(readParams) == 0 {
		return nil // constant terms only: they change neither the gradient nor the curvature
	}
	r.loss = terms[0]
	for _, term := range terms[1:] {
		r.loss = Add(r.loss, term)
	}
	grads := Gradient(r.loss, readParams...)
	r.grad = make(Vec, len(params))
	for k, j := 0, 0; k < len(params); k++ {
		if read[k] {
			r.grad[k] = grads[j]
			j++
		}
	}
	return r
}

// affine reports whether n is affine in the parameters (index): a parameter, a node that does not
// depend on one, or one of the linear ops GoMLX's regularisers build (sums, differences, negation,
// products with a constant, slices, reshapes, transposes, concatenations, broadcasts) of affine
// nodes. It marks the parameters it reads.
func affine(n *Node, index map[*Node]int, dependent map[*Node]bool, read []bool) bool {
	if k, ok := index[n]; ok {
		read[k] = true
		return true
	}
	if !dependent[n] {
		return true
	}
	in := n.Inputs()
	switch n.Type() {
	case NodeTypeAdd, NodeTypeSub, NodeTypeNeg, NodeTypeSlice, NodeTypeReshape, NodeTypeTranspose,
		NodeTypeConcatenate, NodeTypeBroadcastInDim:
		for _, x := range in {
			if !affine(x, index, dependent, read) {
				return false
			}
		}
		return true
	case NodeTypeMul:
		return len(in) == 2 && (!dependent[in[0]] && affine(in[1], index, dependent, read) ||
			!dependent[in[1]] && affine(in[0], index, dependent, read))
	}
	return false
}

// scalarConstant returns the value of a constant holding one number (possibly broadcast, reshaped
// or converted), and whether n is one.
func scalarConstant(n *Node) (float64, bool) {
	switch n.Type() {
	case NodeTypeConstant:
		t := n.ConstantValue()
		if t.Shape().Size() != 1 {
			return 0, false
		}
		var v float64
		ok := true
		t.ConstFlatData(func(flat any) {
			switch x := flat.(type) {
			case []float32:
				v = float64(x[0])
			case []float64:
				v = x[0]
			default:
				ok = false
			}
		})
		return v, ok
	case NodeTypeBroadcastInDim, NodeTypeReshape, NodeTypeConvertDType:
		return scalarConstant(n.Inputs()[0])
	}
	return 0, false
}

// inverseMetric returns, per parameter, 1/m_k with m_k = s_k + D_k/λ, the metric M = Λ/λ of the
// damped L2 curvature Λ = λS + D (nil for m_k = 1: no L2 term and no scale on the parameter),
// for the scalar λ and the damping metric's scales s_k (scale, Settings.ScaledDamping; nil for
// S = I).
func (r *regularisation) inverseMetric(lambda *Node, scale Vec) Vec {
	inv := make(Vec, len(r.hessian))
	for k, dk := range r.hessian {
		var m *Node
		if dk > 0 {
			m = Div(Scalar(lambda.Graph(), lambda.DType(), dk), lambda)
		}
		switch {
		case scale != nil && m != nil:
			inv[k] = Reciprocal(Add(ConvertDType(scale[k], m.DType()), m))
		case scale != nil:
			inv[k] = Reciprocal(scale[k])
		case m != nil:
			inv[k] = Reciprocal(OnePlus(m))
		}
	}
	return inv
}

// addGradient returns g + g_R, the gradient of the regularised loss, for the gradient g of the
// cross-entropy (a new Vec; g is left as it is).
func (r *regularisation) addGradient(g Vec) Vec {
	out := slices.Clone(g)
	for k, x := range r.grad {
		if x != nil {
			out[k] = Add(out[k], x)
		}
	}
	return out
}

// model returns ∇R(w)ᵀs + ½ sᵀD s for a step s, the regulariser's part of the quadratic model
// m(s) of an adaptive damping policy.
func (r *regularisation) model(s Vec) *Node {
	return Add(r.slope(s), MulScalar(r.curvature(s), 0.5))
}

// slope returns ∇R(w)ᵀs for a step s.
func (r *regularisation) slope(s Vec) *Node {
	var terms []*Node
	for k, gk := range r.grad {
		if gk != nil {
			terms = append(terms, ReduceAllSum(Mul(gk, s[k])))
		}
	}
	return sumOrZero(terms, s)
}

// curvature returns sᵀD s for a step s, D the Hessian of R's L2 terms.
func (r *regularisation) curvature(s Vec) *Node {
	var terms []*Node
	for k, dk := range r.hessian {
		if dk > 0 {
			terms = append(terms, MulScalar(ReduceAllSum(Square(s[k])), dk))
		}
	}
	return sumOrZero(terms, s)
}

// sumOrZero returns the sum of the scalars terms, or a zero of s[0]'s dtype when there are none.
func sumOrZero(terms []*Node, s Vec) *Node {
	if len(terms) == 0 {
		return ScalarZero(s[0].Graph(), s[0].DType())
	}
	sum := terms[0]
	for _, t := range terms[1:] {
		sum = Add(sum, t)
	}
	return sum
}

// at returns R at the parameters w (shaped like the parameters R was recognised for).
func (r *regularisation) at(w Vec) *Node {
	return jvp.Substitute([]*Node{r.loss}, r.params, w)[0]
}

// orZerosLike returns v with each nil entry replaced by zeros shaped like the parameter.
func orZerosLike(v, params Vec) Vec {
	out := slices.Clone(v)
	for k, x := range out {
		if x == nil {
			out[k] = ZerosLike(params[k])
		}
	}
	return out
}

// subtract returns a − b, b's nil entries (or a nil b) taken as zeros.
func subtract(a, b Vec) Vec {
	if b == nil {
		return a
	}
	out := slices.Clone(a)
	for k, x := range b {
		if x != nil {
			out[k] = Sub(out[k], x)
		}
	}
	return out
}

// scaleEach returns v with parameter k multiplied by inv[k] (unchanged where inv[k] is nil, and v
// itself for a nil inv); nil entries of v stay nil.
func scaleEach(v, inv Vec) Vec {
	if inv == nil {
		return v
	}
	out := make(Vec, len(v))
	for k, x := range v {
		if x != nil && inv[k] != nil {
			x = Mul(x, ConvertDType(inv[k], x.DType()))
		}
		out[k] = x
	}
	return out
}
