package fgn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
)

// BenchmarkRowOperator times one FGN direction on an affine head (float32, random features and
// weights of scale 1/√d, CG always at its cap of 5 iterations) with each row operator, on shapes
// (b, d, C) either side of CheaperRowOperator's crossover b(d + C + N + 2) = 2N·d·C: the MNIST
// linear model (600, 784, 10), the paper's Cars196 head (128, 2048, 196), and b from 32 to 256 at
// d = 256, C = 10 (crossover b ≈ 94). Each sub-benchmark reports the mean and the fastest
// direction's time (ms/direction, min-ms/direction: on a loaded machine the fastest is the least
// disturbed) and the cost model's ratio of the closed form's multiply-adds to the matrix-free
// products' (model-ratio).
//
//	GOEXPERIMENT=simd go test -run '^$' -bench RowOperator ./fgn
func BenchmarkRowOperator(b *testing.B) {
	const maxIter = 5
	for _, shape := range [][3]int{{600, 784, 10}, {128, 2048, 196}, {32, 256, 10}, {64, 256, 10}, {128, 256, 10}, {256, 256, 10}} {
		n, d, c := shape[0], shape[1], shape[2]
		rng := rand.New(rand.NewPCG(uint64(n), uint64(d)))
		randn := func(size int, scale float64) []float32 {
			out := make([]float32, size)
			for i := range out {
				out[i] = float32(scale * rng.NormFloat64())
			}
			return out
		}
		labels := make([]int32, n)
		for i := range labels {
			labels[i] = int32(rng.IntN(c))
		}
		inputs := []any{tensors.FromFlatDataAndDimensions(randn(n*d, 1), n, d), labels,
			tensors.FromFlatDataAndDimensions(randn(d*c, 1/float64(d)), d, c), randn(c, 0)}
		nf, df, cf := float64(n), float64(d), float64(c)
		ratio := nf * nf * (df + cf + maxIter + 2) / (2 * maxIter * nf * df * cf)
		for _, op := range []RowOperator{ClosedFormGram, MatrixFree} {
			b.Run(fmt.Sprintf("b=%d,d=%d,C=%d/%s", n, d, c, op), func(b *testing.B) {
				cfg := Settings{Damping: 1, RowOperator: op, CG: CGSettings{MaxIterations: maxIter, Tolerance: 0}}
				exec := MustNewExec(testBackend, func(in []*Node) []*Node {
					return FGNDirection(NewAffineHead(in[0], in[2], in[3]), in[1], nil, cfg).D
				})
				run := func() {
					for _, t := range exec.MustCall(inputs...) {
						t.FinalizeAll()
					}
				}
				run()
				fastest := time.Duration(math.MaxInt64)
				b.ResetTimer()
				for range b.N {
					start := time.Now()
					run()
					fastest = min(fastest, time.Since(start))
				}
				b.ReportMetric(float64(b.Elapsed().Microseconds())/1e3/float64(b.N), "ms/direction")
				b.ReportMetric(float64(fastest.Microseconds())/1e3, "min-ms/direction")
				b.ReportMetric(ratio, "model-ratio")
			})
		}
	}
}
