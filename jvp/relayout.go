package jvp

import (
	"fmt"
	"slices"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/gobackend"
	. "github.com/gomlx/gomlx/core/graph"
)

// relayout is a pass (see passes) tuned to the matrix products of the pure-Go backend: it returns
// outs rebuilt with the operands of their matrix products laid out once for every application of
// a linearMap, which clones the nodes between in and outs per application (a CG iteration of an
// optimizer applies a JVP and a VJP): the nodes that do not depend on in are computed once,
// whatever the number of clones, and what is transposed among them is transposed once. Four
// rewrites, each exact algebra (the outputs keep their shapes and axis order; a sum over
// contracted axes may run in another order, so values agree to rounding):
//
//  1. Transpose(DotGeneral(a, b)) whose permutation only swaps the block of a's cross (free)
//     axes and the block of b's, batch axes kept first, is DotGeneral(b, a), which lists b's
//     cross axes first. GoMLX's VJP of z = h·W with respect to W is Transpose(DotGeneral(m, h))
//     (the C×d product transposed to d×C): the rewrite computes hᵀm, d×C, in place.
//  2. A DotGeneral with one operand that depends on in (v) and one that does not (u) has u
//     transposed, outside every clone, to [batch…, cross…, contracting…] (batch axes in the
//     order the product pairs them, cross axes in their order, contracting axes in the order of
//     their pairs), and its axis numbers changed to match; the pairs of contracting axes are
//     reordered to follow v's axes when that lets v be used as it is.
//  3. FusedDenseVJP, GoMLX's VJP of FusedDense (what layers.Dense builds on the pure-Go
//     backend), is one op of that backend that forms dx, dW and dbias on every execution,
//     transposing x (or dZ) for dW each time: it is rebuilt from its parts (denseVJPPart),
//     products laid out by rewrite 2, so that a clone computes only the parts it uses, and xᵀ
//     once.
//  4. A small product (smallProduct) of a varying lhs already in the backend's layout and an
//     invariant rhs, on the pure-Go backend's SIMD kernels (smallKernels), has the rhs laid out,
//     outside every clone, in whichever of the backend's two rhs layouts its small kernels run
//     faster at the product's sizes (smallRHSContractingFirst), whether or not it already was
//     in the other.
//
// The pure-Go backend (compute v0.1.14, dot.LayoutForDotGeneral) multiplies without copying an
// operand only when both have the batch axes first and in the same order, and the contracting
// axes, at least one and as many on both sides, paired in order, last on the lhs ([batch…,
// cross…, contracting…]) and either last or right after the batch axes on the rhs ([batch…,
// cross…, contracting…] or [batch…, contracting…, cross…]); otherwise each execution transposes
// each operand not already in [batch…, cross…, contracting…] into it. After rewrite 2, u is in
// that layout, so v alone may be copied per product, and not at all when v's axes allow: the VJP
// of z = h·W becomes hᵀm with hᵀ formed once, the product a hand-written affine head forms.
// Below 2²² multiply-adds the backend's SIMD build multiplies on small kernels instead of its
// packed one, and these run a product with the rhs as [batch…, contracting…, cross…] (a row of
// 64 outputs per tile) or as [batch…, cross…, contracting…] (a 4×4 tile of dot products) at
// speeds several times apart, the faster depending on the sizes (BENCHMARKS.md measures both):
// rewrite 4 chooses. The rewritten graph computes the same values on any backend; one that lays
// out its operands itself (XLA) merely gets them already laid out.
func relayout(outs, in []*Node) []*Node {
	s := newWalk(outs, in)
	varying := make(map[*Node]bool, len(s.nodes)+len(in))
	for _, n := range s.sources {
		varying[n] = true
	}
	uses := make(map[*Node]int, len(s.nodes))
	for _, n := range s.nodes {
		varying[n] = true
		for _, x := range n.Inputs() {
			uses[x]++
		}
	}
	for _, out := range outs {
		uses[out]++
	}
	// Products whose only use is a Transpose that swaps their cross axes (rewrite 1): they are
	// built swapped when their Transpose is reached.
	swapped := make(map[*Node]bool)
	for _, n := range s.nodes {
		if x := n.Inputs(); n.Type() == NodeTypeTranspose && x[0].Type() == NodeTypeDotGeneral && uses[x[0]] == 1 &&
			swapsCrossAxes(dotGeneralAxes(x[0]), x[0], permutation(n)) {
			swapped[x[0]] = true
		}
	}
	r := &relayouter{varying: varying, value: make(map[*Node]*Node), laidOut: make(map[string]*Node),
		dz: make(map[*Node]*Node), smallKernels: len(outs) > 0 && smallKernels(outs[0].Graph())}
	for _, n := range s.nodes {
		in := make([]*Node, len(n.Inputs()))
		changed := false
		for k, x := range n.Inputs() {
			in[k] = r.get(x)
			changed = changed || in[k] != x
		}
		switch {
		case swapped[n]:
		case n.Type() == NodeTypeTranspose && swapped[n.Inputs()[0]]:
			dot := n.Inputs()[0]
			a := dotGeneralAxes(dot)
			lhs, rhs := r.get(dot.Inputs()[0]), r.get(dot.Inputs()[1])
			r.value[n] = r.dot(rhs, lhs, a.swap(), varying[dot.Inputs()[1]], varying[dot.Inputs()[0]])
		case n.Type() == NodeTypeDotGeneral && r.laysOut(in[0], in[1], dotGeneralAxes(n), varying[n.Inputs()[0]], varying[n.Inputs()[1]]):
			r.value[n] = r.dot(in[0], in[1], dotGeneralAxes(n), varying[n.Inputs()[0]], varying[n.Inputs()[1]])
		case n.Type() == NodeTypeFusedDenseVJP && denseVJPDecomposes(n):
			r.dz[n] = nil // built part by part, as its SplitNodes ask
		case n.Type() == NodeTypeSplitNode && r.decomposed(n.Inputs()[0]):
			r.value[n] = r.denseVJPPart(n.Inputs()[0], splitIndex(n))
		case changed:
			r.value[n] = cloneNode(n, in)
		}
	}
	rebuilt := make([]*Node, len(outs))
	for k, out := range outs {
		rebuilt[k] = r.get(out)
	}
	return rebuilt
}

// relayouter holds relayout's rewritten nodes.
type relayouter struct {
	varying      map[*Node]bool   // the nodes that depend on the map's inputs
	value        map[*Node]*Node  // rewritten node of each node that changed
	laidOut      map[string]*Node // transposed invariant operands, by node id and permutation
	dz           map[*Node]*Node  // decomposed FusedDenseVJP nodes: their dZ once built
	smallKernels bool             // rewrite 4 applies: the graph runs on the pure-Go backend's SIMD kernels
}

func (r *relayouter) decomposed(n *Node) bool {
	_, ok := r.dz[n]
	return ok
}

// denseVJPDecomposes reports whether relayout rebuilds FusedDenseVJP node n from its parts: x
// and the weights of rank 2 or more (x's last axis the inputs, its other axes the batch), all
// of one dtype, not half precision (whose products Dot accumulates in float32).
func denseVJPDecomposes(n *Node) bool {
	in := n.Inputs() // x, weight, y, dOutput[, bias]
	x, w, dOut := in[0], in[1], in[3]
	dtype := dOut.DType()
	return x.Rank() >= 2 && w.Rank() >= 2 && !dtype.IsHalfPrecision() && x.DType() == dtype && w.DType() == dtype
}

// denseVJPPart returns part (0: dx, 1: dW, 2: dbias) of FusedDenseVJP node v, the VJP of
// y = act(x·W + bias) (W [in, out…], or [out…, in] in the layout DenseLayoutOutputsInput) with
// cotangent dOutput (rewrite 3 of relayout): dZ = act'ᵀ dOutput, from y; dx = dZ·Wᵀ,
// dW = xᵀ·dZ (dZᵀ·x), dbias = Σ_batch dZ, each product laid out by rewrite 2.
func (r *relayouter) denseVJPPart(v *Node, part int) *Node {
	in := v.Inputs()
	x, w, y, dOut := r.get(in[0]), r.get(in[1]), r.get(in[2]), r.get(in[3])
	xVaries, wVaries, dzVaries := r.varying[in[0]], r.varying[in[1]], r.varying[in[2]] || r.varying[in[3]]
	cfg := denseConfig(v)
	dz := r.dz[v]
	if dz == nil {
		dz = dOut
		if cfg.Activation.Type != compute.ActivationNone {
			dz = BackendFusedActivationVJP(y, nil, dOut, cfg.Activation)
		}
		r.dz[v] = dz
	}
	nb, no := x.Rank()-1, w.Rank()-1
	batch, outs := axisRange(0, nb), axisRange(nb, no)
	inputsOutputs := cfg.WeightLayout == compute.DenseLayoutInputOutputs
	switch part {
	case 0:
		wOuts := axisRange(0, no)
		if inputsOutputs {
			wOuts = axisRange(1, no)
		}
		return r.dot(dz, w, dotAxes{lhsContracting: outs, rhsContracting: wOuts}, dzVaries, wVaries)
	case 1:
		if inputsOutputs {
			return r.dot(x, dz, dotAxes{lhsContracting: batch, rhsContracting: batch}, xVaries, dzVaries)
		}
		return r.dot(dz, x, dotAxes{lhsContracting: batch, rhsContracting: batch}, dzVaries, xVaries)
	}
	return ReduceSum(dz, batch...)
}

func (r *relayouter) get(x *Node) *Node {
	if v, ok := r.value[x]; ok {
		return v
	}
	return x
}

// laysOut reports whether rewrite 2 or 4 of relayout applies to the product of lhs and rhs with
// axes a (lhsVaries, rhsVaries tell which depend on the map's inputs).
func (r *relayouter) laysOut(lhs, rhs *Node, a dotAxes, lhsVaries, rhsVaries bool) bool {
	_, small := r.smallRHS(lhs, rhs, a, lhsVaries, rhsVaries)
	return small || a.layOut(lhs.Rank(), rhs.Rank(), lhsVaries, rhsVaries)
}

// smallRHS returns the axes of the product of lhs and rhs with axes a with its contracting pairs
// ordered to follow lhs's axes, and whether rewrite 4 of relayout applies: the graph runs on the
// small kernels, lhs alone varies and is then in the backend's layout, and the product is small.
func (r *relayouter) smallRHS(lhs, rhs *Node, a dotAxes, lhsVaries, rhsVaries bool) (dotAxes, bool) {
	if !r.smallKernels || !lhsVaries || rhsVaries || len(a.lhsContracting) == 0 {
		return a, false
	}
	a.lhsContracting, a.rhsContracting = orderPairs(a.lhsContracting, a.rhsContracting, a.lhsBatch, lhs.Rank(), false)
	nb, nc := len(a.lhsBatch), len(a.lhsContracting)
	inLayout := slices.Equal(a.lhsBatch, axisRange(0, nb)) && slices.Equal(a.lhsContracting, axisRange(lhs.Rank()-nc, nc))
	return a, inLayout && smallProduct(a.sizes(lhs, rhs))
}

// dot builds the product of lhs and rhs with axes a, the invariant one of them (lhsVaries,
// rhsVaries tell which depend on the map's inputs) laid out by rewrite 4 of relayout where it
// applies, else transposed to [batch…, cross…, contracting…] where rewrite 2 applies.
func (r *relayouter) dot(lhs, rhs *Node, a dotAxes, lhsVaries, rhsVaries bool) *Node {
	if small, ok := r.smallRHS(lhs, rhs, a, lhsVaries, rhsVaries); ok {
		a = small
		_, _, m, k := a.sizes(lhs, rhs)
		rhs, a.rhsContracting, a.rhsBatch = r.laidOutAs(rhs, a.rhsContracting, a.rhsBatch, smallRHSContractingFirst(m, k))
	} else if a.layOut(lhs.Rank(), rhs.Rank(), lhsVaries, rhsVaries) {
		if lhsVaries {
			a.lhsContracting, a.rhsContracting = orderPairs(a.lhsContracting, a.rhsContracting, a.lhsBatch, lhs.Rank(), false)
			rhs, a.rhsContracting, a.rhsBatch = r.laidOutAs(rhs, a.rhsContracting, a.rhsBatch, false)
		} else {
			a.rhsContracting, a.lhsContracting = orderPairs(a.rhsContracting, a.lhsContracting, a.rhsBatch, rhs.Rank(), true)
			lhs, a.lhsContracting, a.lhsBatch = r.laidOutAs(lhs, a.lhsContracting, a.lhsBatch, false)
		}
	}
	return Dot(lhs, rhs).WithAccumulatorDType(a.config.AccumulatorDType).WithOutputDType(a.config.OutputDType).
		General(a.lhsContracting, a.lhsBatch, a.rhsContracting, a.rhsBatch)
}

// laidOutAs returns the invariant operand u transposed to [batch…, contracting…, cross…] if
// contractingFirst, else to [batch…, cross…, contracting…], and its contracting and batch axes
// there. Each transposition is built once per linearMap.
func (r *relayouter) laidOutAs(u *Node, contracting, batch []int, contractingFirst bool) (*Node, []int, []int) {
	cross := crossAxes(u.Rank(), contracting, batch)
	perm := slices.Concat(batch, cross, contracting)
	nb := len(batch)
	newBatch, newContracting := axisRange(0, nb), axisRange(nb+len(cross), len(contracting))
	if contractingFirst {
		perm, newContracting = slices.Concat(batch, contracting, cross), axisRange(nb, len(contracting))
	}
	if slices.Equal(perm, axisRange(0, u.Rank())) {
		return u, newContracting, newBatch
	}
	key := fmt.Sprint(u.Id(), perm)
	t, ok := r.laidOut[key]
	if !ok {
		t = TransposeAllAxes(u, slices.Clone(perm)...)
		r.laidOut[key] = t
	}
	return t, newContracting, newBatch
}

// swap returns the axes of the product with lhs and rhs exchanged.
func (a dotAxes) swap() dotAxes {
	return dotAxes{lhsContracting: a.rhsContracting, lhsBatch: a.rhsBatch,
		rhsContracting: a.lhsContracting, rhsBatch: a.lhsBatch, config: a.config}
}

// layOut reports whether rewrite 2 of relayout applies to a product with axes a of operands of
// these ranks: one of them varies, and they are contracted but not in the backend's layout.
func (a dotAxes) layOut(lhsRank, rhsRank int, lhsVaries, rhsVaries bool) bool {
	return lhsVaries != rhsVaries && len(a.lhsContracting) > 0 && !a.backendLayout(lhsRank, rhsRank)
}

// backendLayout reports whether the pure-Go backend multiplies operands of these ranks with
// axes a without copying either (see relayout).
func (a dotAxes) backendLayout(lhsRank, rhsRank int) bool {
	nb, nc := len(a.lhsBatch), len(a.lhsContracting)
	if nc == 0 || !slices.Equal(a.lhsBatch, axisRange(0, nb)) || !slices.Equal(a.rhsBatch, axisRange(0, nb)) {
		return false
	}
	return slices.Equal(a.lhsContracting, axisRange(lhsRank-nc, nc)) &&
		(slices.Equal(a.rhsContracting, axisRange(nb, nc)) || slices.Equal(a.rhsContracting, axisRange(rhsRank-nc, nc)))
}

// orderPairs returns the pairs of contracting axes (vAxes[i], uAxes[i]) of the varying operand v
// (of rank vRank, batch axes vBatch) and the invariant one u, reordered to follow v's axes when
// v may then be used as it is: its batch axes first and its contracting axes last or, when v is
// the rhs, right after the batch axes; otherwise in their order.
func orderPairs(vAxes, uAxes, vBatch []int, vRank int, vIsRHS bool) (v, u []int) {
	nb, nc := len(vBatch), len(vAxes)
	order := axisRange(0, nc)
	slices.SortFunc(order, func(i, j int) int { return vAxes[i] - vAxes[j] })
	v, u = make([]int, nc), make([]int, nc)
	for k, i := range order {
		v[k], u[k] = vAxes[i], uAxes[i]
	}
	if !slices.Equal(vBatch, axisRange(0, nb)) ||
		!(slices.Equal(v, axisRange(vRank-nc, nc)) || vIsRHS && slices.Equal(v, axisRange(nb, nc))) {
		return vAxes, uAxes
	}
	return v, u
}

// swapsCrossAxes reports whether permutation perm of the output of DotGeneral node n (axes a),
// [batch…, lhs cross…, rhs cross…], is [batch…, rhs cross…, lhs cross…] with both cross blocks
// non-empty.
func swapsCrossAxes(a dotAxes, n *Node, perm []int) bool {
	lhs, rhs := n.Inputs()[0], n.Inputs()[1]
	nb := len(a.lhsBatch)
	nl := lhs.Rank() - nb - len(a.lhsContracting)
	nr := rhs.Rank() - nb - len(a.rhsContracting)
	if nl == 0 || nr == 0 {
		return false
	}
	want := slices.Concat(axisRange(0, nb), axisRange(nb+nl, nr), axisRange(nb, nl))
	return slices.Equal(want, perm)
}

// crossAxes returns the axes of a rank-rank operand that are neither contracting nor batch, in
// order.
func crossAxes(rank int, contracting, batch []int) []int {
	var out []int
	for axis := range rank {
		if !slices.Contains(contracting, axis) && !slices.Contains(batch, axis) {
			out = append(out, axis)
		}
	}
	return out
}

// smallKernels reports whether graph g runs on the pure-Go backend in a build with its SIMD
// matrix kernels, where rewrite 4 of relayout applies. (Without them, its portable small kernel
// runs an rhs laid out [batch…, cross…, contracting…] at least as fast as the other layout.)
func smallKernels(g *Graph) bool {
	return simdBuild && g.Backend().String() == gobackend.BackendName
}

// smallMatMulThreshold is the number of multiply-adds below which the pure-Go backend (compute
// v0.1.14, matmul.SmallMatMulSizeThreshold) multiplies on its small kernels. Its AVX-512 build
// counts them with the batch, its AVX2 build without; counted with it, a product below the
// threshold is small on both.
const smallMatMulThreshold = 4 << 20

// smallProduct reports whether a product of batch size b, lhs cross size n, rhs cross size m and
// contracting size k runs on the pure-Go backend's small kernels.
func smallProduct(b, n, m, k int) bool { return b*n*m*k < smallMatMulThreshold }

// smallRHSContractingFirst reports whether the pure-Go backend's small SIMD kernels multiply
// by an rhs of cross size m and contracting size k faster laid out [batch…, contracting…,
// cross…] than [batch…, cross…, contracting…]: when m fills whole rows of 16 outputs, or the
// contraction is shorter than two vectors of 16 for the other layout's dot products. Chosen from
// BenchmarkSmallProductLayout on both vector widths (BENCHMARKS.md).
func smallRHSContractingFirst(m, k int) bool { return m%16 == 0 || k < 32 }

// sizes returns the product's batch size b, lhs cross size n, rhs cross size m and contracting
// size k, for operands lhs and rhs.
func (a dotAxes) sizes(lhs, rhs *Node) (b, n, m, k int) {
	b, k = 1, 1
	for _, axis := range a.lhsBatch {
		b *= lhs.Shape().Dimensions[axis]
	}
	for _, axis := range a.lhsContracting {
		k *= lhs.Shape().Dimensions[axis]
	}
	if b*k == 0 {
		return b, 0, 0, k
	}
	return b, lhs.Shape().Size() / (b * k), rhs.Shape().Size() / (b * k), k
}
