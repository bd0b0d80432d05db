package fgn

import (
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/nn"

	"github.com/fgn-paper/fgn/fgn/backend"
	"github.com/fgn-paper/fgn/internal/graphrun"
	"github.com/fgn-paper/fgn/internal/ref"
)

// The reproduction tests of the entries of compat.go, one TestCompat<Entry> each. Each passes
// while the upstream bug is present; its failure means the bug is fixed, and says which
// workaround to delete.

// fixed fails the test for entry, naming what to delete.
func fixed(t *testing.T, entry, what string) {
	t.Helper()
	t.Fatalf("the upstream bug of compat.go's entry %q is fixed (%s): delete the entry and the workarounds "+
		"that cite it (grep -rn '%s' .), then this test", entry, what, compatName(entry))
}

// compatName returns the name of the compat.go constant whose value is entry.
func compatName(entry string) string {
	for name, value := range map[string]string{
		"compatWhileGradient": compatWhileGradient, "compatWhileEarlyOutputs": compatWhileEarlyOutputs,
		"compatScalarCache": compatScalarCache, "compatIfCapturedBuffer": compatIfCapturedBuffer,
		"compatParallelExecutorDeadlock": compatParallelExecutorDeadlock,
		"compatSIMDNaN":                  compatSIMDNaN, "compatMultiOutputClone": compatMultiOutputClone, "compatVariablesAsConstants": compatVariablesAsConstants,
		"compatConvVJPNotDifferentiable": compatConvVJPNotDifferentiable,
		"compatFusedDenseVJPNoGradient":  compatFusedDenseVJPNoGradient,
		"compatFusedActivationVJPClone":  compatFusedActivationVJPClone,
		"compatPadVJPNegative":           compatPadVJPNegative, "compatDotVJPAxesOrder": compatDotVJPAxesOrder,
	} {
		if value == entry {
			return name
		}
	}
	return entry
}

// whileLoopOf returns the outputs (k, x) of a While loop over the state (k int32, x) that applies
// extra to x three times.
func whileLoopOf(x *Node, extra func(*Node) *Node) []*Node {
	g := x.Graph()
	three := Const(g, int32(3))
	params := func(g *Graph) (*Node, *Node) {
		return Parameter(g, "k", shapes.Make(dtypes.Int32)), Parameter(g, "x", x.Shape())
	}
	cond := NewClosure(g, func(g *Graph) []*Node {
		k, _ := params(g)
		return []*Node{LessThan(k, three)}
	})
	body := NewClosure(g, func(g *Graph) []*Node {
		k, v := params(g)
		return []*Node{AddScalar(k, 1), extra(v)}
	})
	return While(cond, body, Const(g, int32(0)), x)
}

func TestCompatWhileEarlyOutputs(t *testing.T) {
	a := [][]float64{{4, 1, 0}, {1, 3, 1}, {0, 1, 2}}
	_, err := graphrun.Run(testBackend, func(a, rhs *Node) []*Node {
		g := a.Graph()
		sys := cgSystem{curvature: func(v Vec) Vec { return Vec{MatMul(a, v[0])} }, rhs: Vec{rhs}}
		rr := vecDot(sys.rhs, sys.rhs)
		st := cgState{k: Const(g, int32(0)), x: vecZerosLike(sys.rhs), r: sys.rhs, p: sys.rhs, rr: rr,
			res2: rr, stop: Const(g, false)}
		maxIter, threshold := Const(g, int32(3)), MulScalar(rr, 1e-20)
		out := whileLoop(st, func(st cgState) *Node { return LogicalNot(st.stop) },
			func(st cgState) cgState { return cgIteration(sys, st, maxIter, threshold) })
		return out.r // an early output only
	}, a, []float64{1, 2, 3})
	present(t, compatWhileEarlyOutputs, err, "index out of range", "a graph whose only output is an early output of CG's While loop runs")
}

func TestCompatWhileGradient(t *testing.T) {
	x := []float64{1, 2, 3}
	_, err := graphrun.Run(testBackend, func(x *Node) *Node {
		return whileLoopOf(x, func(v *Node) *Node { return Gradient(ReduceAllSum(Mul(v, v)), v)[0] })[1]
	}, x)
	present(t, compatWhileGradient, err, "not computed yet", "a Gradient built inside a While body runs")
}

func TestCompatScalarCache(t *testing.T) {
	x := []float64{1, 2, 3}
	_, err := graphrun.Run(testBackend, func(x *Node) *Node {
		out := whileLoopOf(x, func(v *Node) *Node { return MulScalar(v, 2.5) })[1]
		return MulScalar(out, 2.5) // the scalar 2.5 was first created inside the body
	}, x)
	present(t, compatScalarCache, err, "different function scope", "a scalar created in a While body and then in the main function builds")
}

// present fails the test unless err (the reproduction's error) shows entry's bug: nil means the bug
// is fixed; an error without want is another failure than the one compat.go documents.
func present(t *testing.T, entry string, err error, want, fixedWhat string) {
	t.Helper()
	switch {
	case err == nil:
		fixed(t, entry, fixedWhat)
	case !strings.Contains(err.Error(), want):
		t.Fatalf("compat.go's entry %q: the reproduction fails with %v, not with the documented %q", entry, err, want)
	default:
		t.Logf("still present: %s", firstLine(err))
	}
}

func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

// TestCompatIfCapturedBuffer: the taken branch of an If adds 1 to a = 2x, which only the branch
// reads; the If's output then reads the values of a later sum.
func TestCompatIfCapturedBuffer(t *testing.T) {
	x := []float64{1, 2, 3, 4}
	out, err := graphrun.Run(testBackend, func(x *Node) []*Node {
		g := x.Graph()
		a := MulScalar(x, 2)
		pred := GreaterThan(ReduceAllSum(x), ScalarZero(g, x.DType()))
		taken := NewClosure(g, func(g *Graph) []*Node { return []*Node{AddScalar(a, 1)} })
		other := NewClosure(g, func(g *Graph) []*Node { return []*Node{Zeros(g, x.Shape())} })
		y := If(pred, taken, other)[0]
		b := MulScalar(x, 10)
		return []*Node{y, b, Add(y, b)}
	}, x)
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{3, 5, 7, 9}
	if ref.RelErr(out[0], want) == 0 {
		fixed(t, compatIfCapturedBuffer, "an If's output keeps its values when a later operation reads it")
	}
	t.Logf("still present: the If's output reads %v, want %v", out[0], want)
}

// slowCompat skips a reproduction that may hang or is intermittent unless FGN_COMPAT_SLOW=1.
func slowCompat(t *testing.T, why string) {
	if os.Getenv("FGN_COMPAT_SLOW") != "1" {
		t.Skipf("%s: set FGN_COMPAT_SLOW=1 to run it", why)
	}
}

// TestCompatParallelExecutorDeadlock runs a While loop of large products on the pure-Go backend
// with its default executors and passes if it has not finished after a minute. The deadlocked
// execution is abandoned, with its goroutines.
func TestCompatParallelExecutorDeadlock(t *testing.T) {
	slowCompat(t, "the reproduction deadlocks (it passes after a one-minute timeout)")
	be, err := backend.NewWithConfig("go:num_executors=0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := graphrun.Run(be, func(x *Node) *Node {
			return whileLoopOf(x, func(v *Node) *Node { return DivScalar(MatMul(v, v), 512) })[1]
		}, tensors.FromShape(shapes.Make(dtypes.Float32, 512, 512)))
		done <- err
	}()
	select {
	case err := <-done:
		fixed(t, compatParallelExecutorDeadlock, fmt.Sprintf("the While loop finished, error %v", err))
	case <-time.After(time.Minute):
		t.Log("still present: the While loop of 512×512 products has not finished after a minute")
	}
}

func TestCompatSIMDNaN(t *testing.T) {
	if !backend.SIMDBuild {
		t.Skip("the vectorised kernels are in the SIMD build (GOEXPERIMENT=simd) only")
	}
	in := make([]float32, 64)
	in[5] = float32(math.NaN())
	var swallowed []string
	for _, op := range []struct {
		name string
		f    func(*Node) *Node
	}{{"Exp", Exp}, {"Tanh", Tanh}, {"Logistic", Logistic}} {
		out, err := graphrun.Run(testBackend, op.f, in)
		if err != nil {
			t.Fatal(err)
		}
		if !math.IsNaN(out[0][5]) {
			swallowed = append(swallowed, fmt.Sprintf("%s(NaN) = %g", op.name, out[0][5]))
		}
	}
	if len(swallowed) == 0 {
		fixed(t, compatSIMDNaN, "Exp, Tanh and Logistic of NaN are NaN in the SIMD build")
	}
	t.Logf("still present: %s", strings.Join(swallowed, ", "))
}

func TestCompatVariablesAsConstants(t *testing.T) {
	store := model.NewStore()
	v := store.RootScope().VariableWithValue("w", []float64{1, 2})
	var nodeType NodeType
	exec := model.MustNewExec(testBackend, store, func(scope *model.Scope, x *Node) *Node {
		w := v.NodeValue(x.Graph())
		nodeType = w.Type()
		return Add(x, w)
	})
	exec.MustCall([]float64{0, 0})
	if nodeType != NodeTypeConstant {
		fixed(t, compatVariablesAsConstants, fmt.Sprintf("a variable read by a graph not marked as training is a %s node", nodeType))
	}
	t.Logf("still present: the variable is a %s node", nodeType)
}

// TestCompatCitations checks that every compat.go name (compatX) cited in the module's Go and
// Markdown files is an entry of compat.go, and that every entry is cited outside compat.go and its
// tests.
func TestCompatCitations(t *testing.T) {
	src, err := os.ReadFile("compat.go")
	if err != nil {
		t.Fatal(err)
	}
	entries := map[string]int{}
	for _, m := range regexp.MustCompile(`(?m)^\t(compat[A-Z]\w*) = `).FindAllStringSubmatch(string(src), -1) {
		entries[m[1]] = 0
	}
	cite := regexp.MustCompile(`\bcompat[A-Z]\w*`)
	err = filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && path != ".." {
			return filepath.SkipDir
		}
		name := filepath.Base(path)
		if d.IsDir() || !(strings.HasSuffix(name, ".go") || strings.HasSuffix(name, ".md")) ||
			(strings.HasPrefix(name, "compat") && filepath.Base(filepath.Dir(path)) == "fgn") {
			return nil
		}
		text, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, c := range cite.FindAllString(string(text), -1) {
			if _, ok := entries[c]; !ok {
				t.Errorf("%s cites %s, which is not an entry of compat.go", path, c)
				continue
			}
			entries[c]++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) < 14 {
		t.Errorf("compat.go has %d entries, want the 14 it documents", len(entries))
	}
	for name, n := range entries {
		if n == 0 {
			t.Errorf("compat.go's entry %s is cited nowhere (delete it, or cite it where its workaround is)", name)
		}
	}
}

// doubleVJPError returns the error of building J v = ∇_a⟨J_wᵀa, v⟩ for y = op(x, w) by two
// reverse passes, nil if GoMLX builds and runs it.
func doubleVJPError(op func(x, w *Node) *Node, xShape, wShape shapes.Shape) error {
	_, err := graphrun.Run(testBackend, func(x, w, v *Node) *Node {
		y := op(x, w)
		a := ZerosLike(y)
		vjp := Gradient(ReduceAllSum(Mul(y, a)), w)[0]
		return Gradient(ReduceAllSum(Mul(vjp, v)), a)[0]
	}, tensors.FromShape(xShape), tensors.FromShape(wShape), tensors.FromShape(wShape))
	return err
}

func TestCompatConvVJPNotDifferentiable(t *testing.T) {
	x, k := shapes.Make(dtypes.Float64, 2, 5, 5, 3), shapes.Make(dtypes.Float64, 3, 3, 3, 4)
	err := doubleVJPError(func(x, k *Node) *Node { return Convolve(x, k).PadSame().Done() }, x, k)
	present(t, compatConvVJPNotDifferentiable, err, "ConvGeneral", "the VJP of a convolution is differentiated again")
}

func TestCompatFusedDenseVJPNoGradient(t *testing.T) {
	if !testBackend.Capabilities().Operations[compute.OpTypeFusedDenseVJP] {
		t.Skipf("backend %s does not fuse Dense", testBackend.Name())
	}
	x, w := shapes.Make(dtypes.Float64, 4, 3), shapes.Make(dtypes.Float64, 3, 2)
	err := doubleVJPError(func(x, w *Node) *Node { return nn.Dense(x, w, nil, compute.DenseLayoutInputOutputs) }, x, w)
	present(t, compatFusedDenseVJPNoGradient, err, "FusedDenseVJP", "FusedDenseVJP is differentiated")
}

func TestCompatMultiOutputClone(t *testing.T) {
	q := make([]float64, 2*3*1*2)
	for k := range q {
		q[k] = float64(k%5) - 1.5
	}
	out := run(t, func(in []*Node) []*Node {
		x := Reshape(in[0], 2, 3, 1, 2)
		att, _ := BackendFusedScaledDotProductAttention(x, MulScalar(x, 0.5), OnesLike(x),
			compute.AttentionAxesLayoutBSHD, &compute.ScaledDotProductAttentionConfig{})
		return []*Node{att, att.CloneWithInputs(att.Inputs()...)}
	}, q)
	if ref.RelErr(out[1], out[0]) < 1e-12 {
		fixed(t, compatMultiOutputClone, "a FusedScaledDotProductAttention node cloned with its own inputs computes the same")
	}
	t.Logf("still present: attention %v, its clone %v (the query %v)", out[0], out[1], q)
}

func TestCompatFusedActivationVJPClone(t *testing.T) {
	x := []float64{-1.5, -0.3, 0.4, 2}
	out := run(t, func(in []*Node) []*Node {
		x, dOut := in[0], OnesLike(in[0])
		cfg := compute.ActivationConfig{Type: compute.ActivationGelu}
		vjp := BackendFusedActivationVJP(BackendFusedActivation(x, cfg), x, dOut, cfg)
		return []*Node{vjp, vjp.CloneWithInputs(vjp.Inputs()...)}
	}, x)
	if ref.RelErr(out[1], out[0]) < 1e-12 {
		fixed(t, compatFusedActivationVJPClone, "a FusedActivationVJP node cloned with its own inputs computes the same")
	}
	t.Logf("still present: GELU'(x) = %v, its clone %v", out[0], out[1])
}

// TestCompatPadVJPNegative reproduces compatPadVJPNegative: the gradient of a crop, a Pad with
// negative paddings, cannot be built.
func TestCompatPadVJPNegative(t *testing.T) {
	_, err := graphrun.Run(testBackend, func(x *Node) *Node {
		y := Pad(x, ScalarZero(x.Graph(), x.DType()), PadAxis{Start: -1, End: -2})
		return Gradient(ReduceAllSum(y), x)[0]
	}, []float64{1, 2, 3, 4, 5, 6})
	present(t, compatPadVJPNegative, err, "out of bounds", "the gradient of a Pad with negative paddings builds")
}

// TestCompatDotVJPAxesOrder reproduces compatDotVJPAxesOrder: with the rhs's contracting axes out
// of order, the VJP with respect to the lhs is not the transpose of the product, ⟨J v, u⟩ ≠
// ⟨v, Jᵀu⟩ for y = DotGeneral(x, w) contracting x's axes (1, 2) with w's (1, 0), all of size 3.
func TestCompatDotVJPAxesOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	x, w, v, u := randVec(rng, 2*3*3), randVec(rng, 3*3*4), randVec(rng, 2*3*3), randVec(rng, 2*4)
	out := run(t, func(in []*Node) []*Node {
		x, w, v, u := in[0], in[1], in[2], in[3]
		product := func(x *Node) *Node { return DotGeneral(x, []int{1, 2}, nil, w, []int{1, 0}, nil) }
		return []*Node{product(v), Gradient(ReduceAllSum(Mul(product(x), u)), x)[0]}
	}, tensors.FromFlatDataAndDimensions(x, 2, 3, 3), tensors.FromFlatDataAndDimensions(w, 3, 3, 4),
		tensors.FromFlatDataAndDimensions(v, 2, 3, 3), tensors.FromFlatDataAndDimensions(u, 2, 4))
	jv, jtu := dot(out[0], u), dot(v, out[1])
	if math.Abs(jv-jtu) <= 1e-12*math.Max(math.Abs(jv), math.Abs(jtu)) {
		fixed(t, compatDotVJPAxesOrder, "the VJP of DotGeneral with unordered rhs contracting axes is the product's transpose")
	}
	t.Logf("still present: ⟨J v, u⟩ = %.6g, ⟨v, Jᵀu⟩ = %.6g", jv, jtu)
}
