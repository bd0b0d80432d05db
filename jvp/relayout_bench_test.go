package jvp

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
)

// smallProductRepeats is the number of products of one shape that one call of
// BenchmarkSmallProductLayout's graphs makes (each of its own lhs), so that the call's fixed cost
// is shared.
const smallProductRepeats = 16

// BenchmarkSmallProductLayout times, on the test backend, float32 products of a lhs [n, k] by a
// rhs laid out [k, m] (contracting axis first) and [m, k] (last), at the sizes of small models'
// layers and heads (n the batch, k and m their widths and classes), all below the small-kernel
// threshold (smallProduct): what rewrite 4 of relayout (smallRHSContractingFirst) is chosen from.
// Each call makes smallProductRepeats products, of distinct lhs, each summed; each iteration
// calls the two layouts' graphs in turn, so that both see the same load. It reports both in µs
// per product, their ratio, and pass-picks, 1 when rewrite 4 lays the rhs out [k, m], else 0.
// Run it in the SIMD build: GOEXPERIMENT=simd go test -run '^$' -bench SmallProductLayout ./jvp
// (with GODEBUG=cpu.avx512f=off for the AVX2 kernels).
func BenchmarkSmallProductLayout(b *testing.B) {
	for _, n := range []int{32, 128} {
		for _, k := range []int{10, 16, 20, 32, 64, 128} {
			for _, m := range []int{10, 16, 20, 32, 48, 64, 128} {
				b.Run(fmt.Sprintf("n=%d,k=%d,m=%d", n, k, m), func(b *testing.B) {
					benchSmallProduct(b, n, k, m)
				})
			}
		}
	}
}

func benchSmallProduct(b *testing.B, n, k, m int) {
	if !smallProduct(1, n, m, k) {
		b.Fatalf("n=%d, k=%d, m=%d is not a small product", n, k, m)
	}
	build := func(contractingFirst bool) *Exec {
		return MustNewExec(testBackend, func(in []*Node) *Node {
			w, sum := in[0], (*Node)(nil)
			for _, x := range in[1:] {
				var y *Node
				if contractingFirst {
					y = DotGeneral(x, []int{1}, nil, w, []int{0}, nil)
				} else {
					y = DotGeneral(x, []int{1}, nil, w, []int{1}, nil)
				}
				if y = ReduceAllSum(y); sum == nil {
					sum = y
				} else {
					sum = Add(sum, y)
				}
			}
			return sum
		})
	}
	rng := rand.New(rand.NewPCG(1, 2))
	xs := make([]any, smallProductRepeats)
	for i := range xs {
		xs[i] = randTensor(rng, []int{n, k})
	}
	first, last := build(true), build(false)
	wFirst, wLast := randTensor(rng, []int{k, m}), randTensor(rng, []int{m, k})
	call := func(e *Exec, w *tensors.Tensor) time.Duration {
		start := time.Now()
		for _, r := range e.MustCall(append([]any{w}, xs...)...) {
			r.MustFinalizeAll()
		}
		return time.Since(start)
	}
	call(first, wFirst) // compiles
	call(last, wLast)
	var tFirst, tLast time.Duration
	b.ResetTimer()
	for range b.N {
		tFirst += call(first, wFirst)
		tLast += call(last, wLast)
	}
	us := func(d time.Duration) float64 {
		return float64(d.Nanoseconds()) / 1e3 / float64(b.N*smallProductRepeats)
	}
	b.ReportMetric(us(tFirst), "[k,m]-µs")
	b.ReportMetric(us(tLast), "[m,k]-µs")
	b.ReportMetric(float64(tLast)/float64(tFirst), "[m,k]/[k,m]")
	picks := 0.0
	if smallRHSContractingFirst(m, k) {
		picks = 1
	}
	b.ReportMetric(picks, "pass-picks-[k,m]")
}
