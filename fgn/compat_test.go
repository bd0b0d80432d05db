package fgn

import (
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"

	"github.com/fgn-paper/fgn/fgn/backend"
	"github.com/fgn-paper/fgn/internal/compatcheck"
	"github.com/fgn-paper/fgn/internal/graphrun"
	"github.com/fgn-paper/fgn/internal/ref"
)

// The reproduction tests of the entries of compat.go, one TestCompat<Entry> each. Each passes
// while the upstream bug is present; its failure means the bug is fixed, and says which
// workaround to delete.

// fixed and present report a reproduction's outcome (see package compatcheck).
var fixed, present = compatcheck.Fixed, compatcheck.Present

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
			return compatcheck.WhileLoop(x, func(v *Node) *Node { return DivScalar(MatMul(v, v), 512) })[1]
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

func TestCompatSIMDExpUnderflow(t *testing.T) {
	if !backend.SIMDBuild {
		t.Skip("the vectorised kernels are in the SIMD build (GOEXPERIMENT=simd) only")
	}
	in := []float64{math.Inf(-1), -800, -750}
	out, err := graphrun.Run(testBackend, Exp, in)
	if err != nil {
		t.Fatal(err)
	}
	if out[0][0] == 0 && out[0][1] == 0 && out[0][2] == 0 {
		fixed(t, compatSIMDExpUnderflow, "Exp(−∞), Exp(−800) and Exp(−750) are 0 in float64 in the SIMD build")
	}
	t.Logf("still present: Exp of %v = %v in float64", in, out[0])
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
// Markdown files is an entry of a compat.go, and that every entry of this one is cited outside the
// compat files.
func TestCompatCitations(t *testing.T) { compatcheck.Citations(t) }
