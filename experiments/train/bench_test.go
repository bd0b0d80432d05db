package train

import (
	"testing"

	"github.com/fgn-paper/fgn/experiments/method"
	"github.com/fgn-paper/fgn/features"
)

// BenchmarkCars196Head runs 50 training steps of each optimizer at the Cars196 head shape
// (b=128, d=2048, C=196, affine head, paper hyper-parameters) on synthetic features and
// reports the synchronised optimisation time per step (the loop's wall clock: no compilation
// or evaluation). Run it in the SIMD build:
//
//	GOEXPERIMENT=simd go test -run '^$' -bench Cars196 -benchtime 1x ./experiments/train
func BenchmarkCars196Head(b *testing.B) {
	const batch, dim, classes, steps = 128, 2048, 196, 50
	trainSet, err := features.GaussianMixture(1, 0, batch*steps, dim, classes, 0.05)
	if err != nil {
		b.Fatal(err)
	}
	evalSet, err := features.GaussianMixture(1, 1, batch, dim, classes, 0.05)
	if err != nil {
		b.Fatal(err)
	}
	for _, meth := range method.Methods {
		b.Run(string(meth), func(b *testing.B) {
			var seconds float64
			for range b.N {
				cfg := Config{Method: meth, Settings: method.DefaultSettings(meth), Classes: classes, BatchSize: batch, Epochs: 1, EvalEvery: steps, Seed: 1}
				tr, err := Run(testBackend, cfg, trainSet, evalSet)
				if err != nil {
					b.Fatal(err)
				}
				seconds += tr.Points[len(tr.Points)-1].OptSeconds
			}
			b.ReportMetric(1e3*seconds/float64(b.N*steps), "ms/step")
		})
	}
}
