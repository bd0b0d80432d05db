package jvp

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gomlx/compute"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"

	"github.com/fgn-paper/fgn/internal/ref"
)

// relayoutCase is a linear map made of one DotGeneral, optionally transposed, whose operands
// vary with the map's inputs (vary: "lhs", "rhs" or "both") or not.
type relayoutCase struct {
	name                       string
	lhs, rhs                   []int // dimensions
	lhsC, lhsB, rhsC, rhsB     []int // contracting and batch axes
	vary                       string
	perm                       []int // Transpose of the product; nil for none
	alsoPlain                  bool  // the product is also an output by itself (two uses)
	wantTransposes, wantBefore int   // Transpose nodes in the map's clone after and before relayout
	wantLayout                 bool  // the clone's product is in the pure-Go backend's layout
	wantLaidOut                bool  // its invariant operand is transposed, outside the clone
}

var relayoutCases = []relayoutCase{
	{name: "VJP of h·W: Transpose(DotGeneral(m, h)) becomes hᵀm", lhs: []int{5, 3}, rhs: []int{5, 4},
		lhsC: []int{0}, rhsC: []int{0}, vary: "lhs", perm: []int{1, 0}, wantBefore: 1, wantLayout: true, wantLaidOut: true},
	{name: "invariant rhs laid out, varying lhs not in layout", lhs: []int{5, 3}, rhs: []int{5, 4},
		lhsC: []int{0}, rhsC: []int{0}, vary: "lhs", wantLaidOut: true},
	{name: "already in layout: unchanged", lhs: []int{5, 4}, rhs: []int{4, 3},
		lhsC: []int{1}, rhsC: []int{0}, vary: "rhs", wantLayout: true},
	{name: "invariant lhs laid out, rhs [K, M]", lhs: []int{5, 4}, rhs: []int{5, 3},
		lhsC: []int{0}, rhsC: []int{0}, vary: "rhs", wantLayout: true, wantLaidOut: true},
	{name: "invariant lhs laid out, rhs [M, K]", lhs: []int{5, 4}, rhs: []int{3, 5},
		lhsC: []int{0}, rhsC: []int{1}, vary: "rhs", wantLayout: true, wantLaidOut: true},
	{name: "batch axes, invariant lhs", lhs: []int{2, 5, 4}, rhs: []int{2, 5, 3},
		lhsB: []int{0}, lhsC: []int{1}, rhsB: []int{0}, rhsC: []int{1}, vary: "rhs", wantLayout: true, wantLaidOut: true},
	{name: "batch axes, invariant rhs with its batch axis second", lhs: []int{2, 3, 5}, rhs: []int{5, 2, 4},
		lhsB: []int{0}, lhsC: []int{2}, rhsB: []int{1}, rhsC: []int{0}, vary: "lhs", wantLayout: true, wantLaidOut: true},
	{name: "two batch axes in reverse order on the invariant side", lhs: []int{2, 3, 4, 5}, rhs: []int{3, 2, 5, 6},
		lhsB: []int{0, 1}, lhsC: []int{3}, rhsB: []int{1, 0}, rhsC: []int{2}, vary: "lhs", wantLayout: true, wantLaidOut: true},
	{name: "several contracting axes, pairs reordered", lhs: []int{3, 2, 4}, rhs: []int{4, 2, 5},
		lhsC: []int{2, 1}, rhsC: []int{0, 1}, vary: "lhs", wantLayout: true, wantLaidOut: true},
	{name: "several contracting axes, varying rhs not in layout", lhs: []int{4, 2, 3}, rhs: []int{2, 5, 4},
		lhsC: []int{0, 1}, rhsC: []int{2, 0}, vary: "rhs", wantLaidOut: true},
	{name: "Transpose with batch axes first becomes the swapped product", lhs: []int{2, 5, 3}, rhs: []int{2, 5, 4},
		lhsB: []int{0}, lhsC: []int{1}, rhsB: []int{0}, rhsC: []int{1}, vary: "lhs", perm: []int{0, 2, 1},
		wantBefore: 1, wantLayout: true, wantLaidOut: true},
	{name: "Transpose moving the batch axis is kept", lhs: []int{2, 5, 3}, rhs: []int{2, 5, 4},
		lhsB: []int{0}, lhsC: []int{1}, rhsB: []int{0}, rhsC: []int{1}, vary: "lhs", perm: []int{1, 0, 2},
		wantTransposes: 1, wantBefore: 1, wantLaidOut: true},
	{name: "Transpose of a product used twice is kept", lhs: []int{5, 3}, rhs: []int{5, 4},
		lhsC: []int{0}, rhsC: []int{0}, vary: "lhs", perm: []int{1, 0}, alsoPlain: true,
		wantTransposes: 1, wantBefore: 1, wantLaidOut: true},
	{name: "both operands varying: Transpose swapped, no layout", lhs: []int{5, 3}, rhs: []int{5, 4},
		lhsC: []int{0}, rhsC: []int{0}, vary: "both", perm: []int{1, 0}, wantBefore: 1},
	{name: "no contracting axis: outer product unchanged", lhs: []int{3}, rhs: []int{4},
		vary: "lhs"},
}

// TestRelayout checks that a linearMap of one product, built with relayout, computes the product
// (a float64 reference by loops), and that relayout rewrote it as the case says: the Transpose
// nodes its clone computes per application, and whether the clone's product is in a layout the
// pure-Go backend multiplies without copying an operand.
func TestRelayout(t *testing.T) {
	for _, tc := range relayoutCases {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(3, 11))
			lhs, rhs := ref.RandVec(rng, size(tc.lhs)), ref.RandVec(rng, size(tc.rhs))
			var m *linearMap
			before := -1
			out := run(t, func(in []*Node) []*Node {
				varying := []*Node{}
				if tc.vary != "rhs" {
					varying = append(varying, in[0])
				}
				if tc.vary != "lhs" {
					varying = append(varying, in[1])
				}
				ph := placeholders(varying...)
				build := func() []*Node {
					l, r := in[0], in[1]
					if tc.vary != "rhs" {
						l = ph[0]
					}
					if tc.vary != "lhs" {
						r = ph[len(ph)-1]
					}
					prod := DotGeneral(l, tc.lhsC, tc.lhsB, r, tc.rhsC, tc.rhsB)
					if tc.perm == nil {
						return []*Node{prod}
					}
					outs := []*Node{TransposeAllAxes(prod, slices.Clone(tc.perm)...)}
					if tc.alsoPlain {
						outs = append(outs, prod)
					}
					return outs
				}
				before = countType(newWalk(build(), ph).nodes, NodeTypeTranspose)
				m = newLinearMap(ph, build)
				return m.apply(varying)
			}, tensors.FromFlatDataAndDimensions(lhs, tc.lhs...), tensors.FromFlatDataAndDimensions(rhs, tc.rhs...))

			want, dims := refDotGeneral(lhs, tc.lhs, tc.lhsC, tc.lhsB, rhs, tc.rhs, tc.rhsC, tc.rhsB)
			wants := [][]float64{want}
			if tc.perm != nil {
				wants = [][]float64{refTranspose(want, dims, tc.perm)}
				if tc.alsoPlain {
					wants = append(wants, want)
				}
			}
			for k := range wants {
				ref.Check(t, "output vs loops (relative)", ref.RelErr(out[k], wants[k]), 1e-12)
			}
			if before != tc.wantBefore {
				t.Errorf("the map without relayout clones %d Transpose nodes, the case says %d", before, tc.wantBefore)
			}
			if got := countType(m.walk.nodes, NodeTypeTranspose); got != tc.wantTransposes {
				t.Errorf("the clone computes %d Transpose nodes per application, want %d", got, tc.wantTransposes)
			}
			dots := nodesOfType(m.walk.nodes, NodeTypeDotGeneral)
			if len(dots) != 1 {
				t.Fatalf("the clone holds %d DotGeneral nodes, want 1", len(dots))
			}
			x := dots[0].Inputs()
			if got := dotGeneralAxes(dots[0]).backendLayout(x[0].Rank(), x[1].Rank()); got != tc.wantLayout {
				t.Errorf("clone's product %s in the backend's layout: %v, want %v", dots[0], got, tc.wantLayout)
			}
			laidOut := false
			for _, operand := range x {
				laidOut = laidOut || operand.Type() == NodeTypeTranspose && !slices.Contains(m.walk.nodes, operand)
			}
			if laidOut != tc.wantLaidOut {
				t.Errorf("clone's product %s has its invariant operand transposed: %v, want %v", dots[0], laidOut, tc.wantLaidOut)
			}
		})
	}
}

// TestRelayoutLinearizeHead checks that Linearize's VJP of an affine head z = h·W + b clones no
// Transpose, and multiplies the cotangent by hᵀ laid out once, as a hand-written affine head does;
// its JVP, h·V, is in the backend's layout as built, and relayout leaves it as it is.
func TestRelayoutLinearizeHead(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 7))
	run(t, func(in []*Node) []*Node {
		w := in[1:]
		l := Linearize([]*Node{Add(MatMul(in[0], w[0]), ExpandAxes(w[1], 0))}, w)
		tangents := placeholders(w...)
		jv := l.walk.tangent(tangents)
		if got := relayout(jv, tangents); got[0] != jv[0] {
			t.Errorf("relayout rebuilt the JVP %s as %s", jv[0], got[0])
		}
		l.products()
		for name, m := range map[string]*linearMap{"VJP": l.vjp, "JVP": l.jvp} {
			if got := countType(m.walk.nodes, NodeTypeTranspose); got != 0 {
				t.Errorf("%s clones %d Transpose nodes, want 0", name, got)
			}
			for _, d := range nodesOfType(m.walk.nodes, NodeTypeDotGeneral) {
				x := d.Inputs()
				if !dotGeneralAxes(d).backendLayout(x[0].Rank(), x[1].Rank()) {
					t.Errorf("%s clones %s, not in the backend's layout", name, d)
				}
			}
		}
		return l.Outputs()
	}, ref.RandMatrix(rng, 6, 5, 1), ref.RandMatrix(rng, 5, 3, 1), ref.RandVec(rng, 3))
}

func size(dims []int) int {
	n := 1
	for _, d := range dims {
		n *= d
	}
	return n
}

// forEachIndex calls fn with every multi-index of dims in row-major order.
func forEachIndex(dims []int, fn func(idx []int)) {
	idx := make([]int, len(dims))
	for range size(dims) {
		fn(idx)
		for k := len(dims) - 1; k >= 0; k-- {
			if idx[k]++; idx[k] < dims[k] {
				break
			}
			idx[k] = 0
		}
	}
}

func flatIndex(idx, dims []int) int {
	f := 0
	for k := range dims {
		f = f*dims[k] + idx[k]
	}
	return f
}

// refDotGeneral is DotGeneral by loops: out[batch…, lhs free…, rhs free…] = Σ over the contracted
// index pairs of lhs·rhs.
func refDotGeneral(lhs []float64, ld, lc, lb []int, rhs []float64, rd, rc, rb []int) ([]float64, []int) {
	free := func(rank int, c, b []int) []int {
		var out []int
		for a := range rank {
			if !slices.Contains(c, a) && !slices.Contains(b, a) {
				out = append(out, a)
			}
		}
		return out
	}
	lf, rf := free(len(ld), lc, lb), free(len(rd), rc, rb)
	var dims, cdims []int
	for _, a := range lb {
		dims = append(dims, ld[a])
	}
	for _, a := range lf {
		dims = append(dims, ld[a])
	}
	for _, a := range rf {
		dims = append(dims, rd[a])
	}
	for _, a := range lc {
		cdims = append(cdims, ld[a])
	}
	out := make([]float64, size(dims))
	li, ri := make([]int, len(ld)), make([]int, len(rd))
	forEachIndex(dims, func(o []int) {
		k := 0
		for j := range lb {
			li[lb[j]], ri[rb[j]] = o[k], o[k]
			k++
		}
		for _, a := range lf {
			li[a] = o[k]
			k++
		}
		for _, a := range rf {
			ri[a] = o[k]
			k++
		}
		sum := 0.0
		forEachIndex(cdims, func(c []int) {
			for j := range lc {
				li[lc[j]], ri[rc[j]] = c[j], c[j]
			}
			sum += lhs[flatIndex(li, ld)] * rhs[flatIndex(ri, rd)]
		})
		out[flatIndex(o, dims)] = sum
	})
	return out, dims
}

// refTranspose is TransposeAllAxes by loops: out[i] = x at the index whose axis perm[k] is i[k].
func refTranspose(x []float64, dims, perm []int) []float64 {
	odims := make([]int, len(perm))
	for k, a := range perm {
		odims[k] = dims[a]
	}
	out := make([]float64, len(x))
	xi := make([]int, len(dims))
	forEachIndex(odims, func(o []int) {
		for k, a := range perm {
			xi[a] = o[k]
		}
		out[flatIndex(o, odims)] = x[flatIndex(xi, dims)]
	})
	return out
}

// TestRelayoutDenseVJP checks Linearize's VJP of a fused dense layer y = act(x·W + bias)
// (BackendFusedDense, what layers.Dense builds on the pure-Go backend) against GoMLX's reverse
// mode of the same logits, and that relayout rebuilt the FusedDenseVJP from products: its
// clone holds no FusedDenseVJP and no Transpose, and as many of its products as the case says
// are not in the backend's layout (dZᵀx, whose dZ the backend copies, for weights [out, in]).
func TestRelayoutDenseVJP(t *testing.T) {
	for _, tc := range []struct {
		name       string
		x          []int // features
		layout     compute.DenseLayout
		act        compute.ActivationType
		backbone   bool // x = tanh(features·V), V a parameter, so the VJP uses dx
		wantCopied int  // products not in the backend's layout
	}{
		{"head [in, out]", []int{5, 4}, compute.DenseLayoutInputOutputs, compute.ActivationNone, false, 0},
		{"head [out, in]", []int{5, 4}, compute.DenseLayoutOutputsInput, compute.ActivationNone, false, 1},
		{"tanh on a backbone, [in, out]", []int{5, 4}, compute.DenseLayoutInputOutputs, compute.ActivationTanh, true, 0},
		{"ReLU on a backbone, [out, in]", []int{5, 4}, compute.DenseLayoutOutputsInput, compute.ActivationRelu, true, 1},
		{"sigmoid, two batch axes, [in, out]", []int{2, 3, 4}, compute.DenseLayoutInputOutputs, compute.ActivationSigmoid, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const in, classes = 4, 3
			rng := rand.New(rand.NewPCG(8, 1))
			wDims := []int{in, classes}
			if tc.layout == compute.DenseLayoutOutputsInput {
				wDims = []int{classes, in}
			}
			rows := size(tc.x) / in
			inputs := []any{
				tensors.FromFlatDataAndDimensions(ref.RandVec(rng, size(tc.x)), tc.x...),
				tensors.FromFlatDataAndDimensions(ref.RandVec(rng, in*classes), wDims...),
				tensors.FromFlatDataAndDimensions(ref.RandVec(rng, classes), classes),
				tensors.FromFlatDataAndDimensions(ref.RandVec(rng, in*in), in, in),
				tensors.FromFlatDataAndDimensions(ref.RandVec(rng, rows*classes), rows, classes),
			}
			var vjp *linearMap
			out := run(t, func(n []*Node) []*Node {
				x, params := n[0], []*Node{n[1], n[2]}
				if tc.backbone {
					x = Tanh(Dot(x, n[3]).General([]int{x.Rank() - 1}, nil, []int{0}, nil))
					params = append(params, n[3])
				}
				y := BackendFusedDense(x, n[1], n[2], compute.DenseConfig{
					Activation: compute.ActivationConfig{Type: tc.act}, WeightLayout: tc.layout})
				logits := Reshape(y, rows, classes)
				l := Linearize([]*Node{logits}, params)
				got := l.VJP(n[4])
				vjp = l.vjp
				want := Gradient(ReduceAllSum(Mul(logits, StopGradient(n[4]))), params...)
				return append(got, want...)
			}, inputs...)
			half := len(out) / 2
			for k := range half {
				ref.Check(t, fmt.Sprintf("VJP part %d vs reverse mode (relative)", k), ref.RelErr(out[k], out[half+k]), 1e-12)
			}
			for _, typ := range []NodeType{NodeTypeFusedDenseVJP, NodeTypeTranspose} {
				if got := countType(vjp.walk.nodes, typ); got != 0 {
					t.Errorf("the VJP clones %d %s nodes, want 0", got, typ)
				}
			}
			var copied []*Node
			for _, d := range nodesOfType(vjp.walk.nodes, NodeTypeDotGeneral) {
				if x := d.Inputs(); !dotGeneralAxes(d).backendLayout(x[0].Rank(), x[1].Rank()) {
					copied = append(copied, d)
				}
			}
			if len(copied) != tc.wantCopied {
				t.Errorf("the VJP clones %d products not in the backend's layout, want %d: %v", len(copied), tc.wantCopied, copied)
			}
		})
	}
}

// TestRelayoutSmallProducts checks rewrite 4 of relayout: a linearMap of one product of a
// varying lhs, in the backend's layout, by an invariant rhs computes the product (a float64
// reference by loops), and its clone multiplies by the rhs laid out as the case says on the
// pure-Go backend's SIMD kernels ([k, m]: contracting axes after the batch axes), and as given
// (or as rewrite 2 lays it out) elsewhere and for products above the small kernels' threshold.
func TestRelayoutSmallProducts(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		lhs, rhs               []int
		lhsC, lhsB, rhsC, rhsB []int
		rewritten              bool // rewrite 4 applies on the SIMD kernels
		wantContractingFirst   bool // the rhs [batch…, contracting…, cross…] in the clone where it applies
		elseContractingFirst   bool // and where it does not (as given, or by rewrite 2)
	}{
		{name: "10 classes into 64 units, rhs [m, k] to [k, m]", lhs: []int{32, 10}, rhs: []int{64, 10},
			lhsC: []int{1}, rhsC: []int{1}, rewritten: true, wantContractingFirst: true},
		{name: "10 classes into 64 units, rhs [k, m] kept", lhs: []int{32, 10}, rhs: []int{10, 64},
			lhsC: []int{1}, rhsC: []int{0}, rewritten: true, wantContractingFirst: true, elseContractingFirst: true},
		{name: "64 units into 10 classes, rhs [k, m] to [m, k]", lhs: []int{32, 64}, rhs: []int{64, 10},
			lhsC: []int{1}, rhsC: []int{0}, rewritten: true, elseContractingFirst: true},
		{name: "64 units into 20 classes, rhs [m, k] kept", lhs: []int{32, 64}, rhs: []int{20, 64},
			lhsC: []int{1}, rhsC: []int{1}, rewritten: true},
		{name: "64 units into 48, rhs [m, k] to [k, m]", lhs: []int{8, 64}, rhs: []int{48, 64},
			lhsC: []int{1}, rhsC: []int{1}, rewritten: true, wantContractingFirst: true},
		{name: "batch axes, rhs [batch, m, k] to [batch, k, m]", lhs: []int{2, 8, 10}, rhs: []int{2, 32, 10},
			lhsB: []int{0}, lhsC: []int{2}, rhsB: []int{0}, rhsC: []int{2}, rewritten: true, wantContractingFirst: true},
		{name: "batch axis second on the rhs, to [batch, m, k]", lhs: []int{3, 4, 40}, rhs: []int{40, 3, 5},
			lhsB: []int{0}, lhsC: []int{2}, rhsB: []int{1}, rhsC: []int{0}, rewritten: true},
		{name: "two contracting axes, pairs reordered", lhs: []int{4, 2, 3}, rhs: []int{3, 2, 16},
			lhsC: []int{2, 1}, rhsC: []int{0, 1}, rewritten: true, wantContractingFirst: true},
		{name: "above the threshold: rhs [m, k] kept", lhs: []int{1024, 64}, rhs: []int{64, 64},
			lhsC: []int{1}, rhsC: []int{1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(5, 13))
			lhs, rhs := ref.RandVec(rng, size(tc.lhs)), ref.RandVec(rng, size(tc.rhs))
			var m *linearMap
			applies := false
			out := run(t, func(in []*Node) []*Node {
				applies = tc.rewritten && smallKernels(in[0].Graph())
				ph := placeholders(in[0])
				m = newLinearMap(ph, func() []*Node {
					return []*Node{DotGeneral(ph[0], tc.lhsC, tc.lhsB, in[1], tc.rhsC, tc.rhsB)}
				})
				return m.apply(in[:1])
			}, tensors.FromFlatDataAndDimensions(lhs, tc.lhs...), tensors.FromFlatDataAndDimensions(rhs, tc.rhs...))
			want, _ := refDotGeneral(lhs, tc.lhs, tc.lhsC, tc.lhsB, rhs, tc.rhs, tc.rhsC, tc.rhsB)
			ref.Check(t, "output vs loops (relative)", ref.RelErr(out[0], want), 1e-12)

			dots := nodesOfType(m.walk.nodes, NodeTypeDotGeneral)
			if len(dots) != 1 {
				t.Fatalf("the clone holds %d DotGeneral nodes, want 1", len(dots))
			}
			a, x := dotGeneralAxes(dots[0]), dots[0].Inputs()
			nb, nc := len(a.rhsBatch), len(a.rhsContracting)
			if !a.backendLayout(x[0].Rank(), x[1].Rank()) {
				t.Errorf("clone's product %s is not in the backend's layout", dots[0])
			}
			first := slices.Equal(a.rhsContracting, axisRange(nb, nc))
			wantFirst := tc.elseContractingFirst
			if applies {
				wantFirst = tc.wantContractingFirst
			}
			if first != wantFirst {
				t.Errorf("clone's product %s has the rhs's contracting axes first: %v, want %v (rewrite 4 applies: %v)",
					dots[0], first, wantFirst, applies)
			}
		})
	}
}
