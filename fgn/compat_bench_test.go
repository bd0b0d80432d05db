package fgn

import (
	"fmt"
	"math/rand/v2"
	"testing"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
)

// BenchmarkCompatRowDotsLargeKernel reproduces compatRowDotsLargeKernel: the row-wise squared
// norms of a b×C float32 matrix by a batched DotGeneral, Einsum("ic,ic->i", a, a), against
// ReduceSum(Square(a), -1), a reduction of an element-wise product as NewMargin forms it, at C = 4096 (b·C at the backend's threshold
// for its small-product kernel) and C = 32768 (above it).
//
//	GOEXPERIMENT=simd go test -run '^$' -bench CompatRowDots ./fgn
func BenchmarkCompatRowDotsLargeKernel(b *testing.B) {
	const rows = 512
	for _, numClasses := range []int{4096, 32768} {
		rng := rand.New(rand.NewPCG(5, 6))
		data := make([]float32, rows*numClasses)
		for i := range data {
			data[i] = float32(rng.NormFloat64())
		}
		a := tensors.FromFlatDataAndDimensions(data, rows, numClasses)
		for _, v := range []struct {
			name string
			fn   func(*Node) *Node
		}{
			{"Einsum", func(a *Node) *Node { return Einsum("ic,ic->i", a, a) }},
			{"ReduceSumSquare", func(a *Node) *Node { return ReduceSum(Square(a), -1) }},
		} {
			b.Run(fmt.Sprintf("b=%d/C=%d/%s", rows, numClasses, v.name), func(b *testing.B) {
				exec := MustNewExec(testBackend, v.fn)
				defer exec.Finalize()
				exec.MustCall(a)[0].FinalizeAll()
				b.ResetTimer()
				for range b.N {
					exec.MustCall(a)[0].FinalizeAll()
				}
				b.ReportMetric(float64(b.Elapsed().Microseconds())/1e3/float64(b.N), "ms/op")
			})
		}
	}
}
