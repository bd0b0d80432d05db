package fgn

import (
	"fmt"
	"math/rand/v2"
	"testing"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
)

// BenchmarkCGLoop compares three ways to run FGN's b-dimensional row-space CG (5 iterations,
// float32, K a b×b SPD Gram as in FGN's closed-form Gram): the in-graph While loop (one compiled
// graph, early exit possible), the unrolled loop (one graph, masked iterations) and a host-driven
// loop (one compiled iteration called 5 times, the residual read back after each call).
//
//	GOEXPERIMENT=simd go test -run '^$' -bench CGLoop ./fgn
func BenchmarkCGLoop(b *testing.B) {
	for _, n := range []int{128, 512} {
		rng := rand.New(rand.NewPCG(3, 4))
		feat := make([]float32, n*64)
		for i := range feat {
			feat[i] = float32(rng.NormFloat64())
		}
		rhs := make([]float32, n)
		for i := range rhs {
			rhs[i] = float32(rng.NormFloat64())
		}
		h, r := tensors.FromFlatDataAndDimensions(feat, n, 64), tensors.FromFlatDataAndDimensions(rhs, n)
		settings := CGSettings{MaxIterations: 5, Tolerance: 0} // always 5 iterations: compare loop overheads only
		gram := func(h *Node) *Node { return MatMul(h, Transpose(h, 0, 1)) }
		for _, variant := range []string{"While", "Unrolled", "Host"} {
			b.Run(fmt.Sprintf("b=%d/%s", n, variant), func(b *testing.B) {
				if variant == "Host" {
					benchmarkHostCG(b, h, r, gram, settings)
					return
				}
				exec := MustNewExec(testBackend, func(h, rhs *Node) *Node {
					k := gram(h)
					op := func(v Vec) Vec { return Vec{rowOp(k, v[0])} }
					return solveCG(cgSystem{curvature: op, rhs: Vec{rhs}}, settings, variant == "While").X[0]
				})
				exec.MustCall(h, r)[0].FinalizeAll()
				b.ResetTimer()
				for range b.N {
					exec.MustCall(h, r)[0].FinalizeAll()
				}
				b.ReportMetric(float64(b.Elapsed().Microseconds())/1e3/float64(b.N), "ms/solve")
			})
		}
	}
}

// rowOp is (K + bλI) v with λ = 1.
func rowOp(k, v *Node) *Node { return Add(MatMul(k, v), MulScalar(v, float64(v.Shape().Dim(0)))) }

// benchmarkHostCG drives CG from the host: the Gram is computed once, then every iteration is
// one call of a compiled single-iteration graph whose state comes back to the host.
func benchmarkHostCG(b *testing.B, h, r *tensors.Tensor, gram func(*Node) *Node, s CGSettings) {
	gramExec := MustNewExec(testBackend, gram)
	shape := cgState{x: Vec{nil}}
	iterExec := MustNewExec(testBackend, func(in []*Node) []*Node {
		k, g := in[0], in[0].Graph()
		sys := cgSystem{curvature: func(v Vec) Vec { return Vec{rowOp(k, v[0])} }}
		maxIter, threshold := Const(g, int32(s.MaxIterations)), ScalarZero(g, k.DType())
		return cgIteration(sys, shape.unflatten(in[1:]), cgProducts{}, maxIter, threshold).flatten()
	})
	initExec := MustNewExec(testBackend, func(rhs *Node) []*Node {
		g, rr := rhs.Graph(), vecDot(Vec{rhs}, Vec{rhs})
		return cgState{k: Const(g, int32(0)), rr: rr, res2: rr, stop: Const(g, false),
			x: Vec{ZerosLike(rhs)}, r: Vec{rhs}, p: Vec{rhs}}.flatten()
	})
	solve := func() {
		k := gramExec.MustCall(h)[0]
		st := initExec.MustCall(r)
		for range s.MaxIterations {
			next := iterExec.MustCall(append([]any{k}, tensorsAsAny(st)...)...)
			_ = next[1].Value() // the host reads ‖r‖² to decide whether to continue
			for _, t := range st {
				t.FinalizeAll()
			}
			st = next
		}
		for _, t := range st {
			t.FinalizeAll()
		}
		k.FinalizeAll()
	}
	solve()
	b.ResetTimer()
	for range b.N {
		solve()
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1e3/float64(b.N), "ms/solve")
}

func tensorsAsAny(ts []*tensors.Tensor) []any {
	out := make([]any, len(ts))
	for i, t := range ts {
		out[i] = t
	}
	return out
}
