package fgn

import (
	"fmt"
	"math/rand/v2"
	"testing"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/layers"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// BenchmarkTrainerDenseHead times one train.Trainer step of a layers.DenseWithBias softmax head
// on fixed features (float32, synthetic features and labels of the given shape), as a user writes
// a linear probe: Adam; FGN and SGN, which recognise the affine head and step on its exact
// products (FGN with the closed-form margin Gram); and, for reference, SGN and FGN on the autodiff
// linearisation of the same logits (Linearize, recorded with RecordLinearization). The optimizers' settings are the paper's (α = 1 and
// λ = 1 as in Figure 1(a), CG ≤ 5 iterations); each step draws a fresh batch tensor, outside the
// timer (the Trainer takes ownership of it).
//
//	GOEXPERIMENT=simd go test -run X -bench TrainerDenseHead -count 3 ./fgn
func BenchmarkTrainerDenseHead(b *testing.B) {
	for _, shape := range []struct{ b, d, c int }{{128, 2048, 50}, {512, 2048, 4096}} {
		for _, m := range []struct {
			name     string
			opt      func() optimizer.Interface
			autodiff bool
		}{
			{"Adam", func() optimizer.Interface { return optimizer.Adam().LearningRate(0.001).Done() }, false},
			{"FGN", func() optimizer.Interface { return FGN().LearningRate(1).Done() }, false},
			{"SGN", func() optimizer.Interface { return SGN().LearningRate(1).Done() }, false},
			{"SGN-autodiff", func() optimizer.Interface { return SGN().LearningRate(1).Done() }, true},
			{"FGN-autodiff", func() optimizer.Interface { return FGN().LearningRate(1).Done() }, true},
		} {
			b.Run(fmt.Sprintf("b=%d,d=%d,C=%d/%s", shape.b, shape.d, shape.c, m.name), func(b *testing.B) {
				rng := rand.New(rand.NewPCG(1, 2))
				x := make([]float32, shape.b*shape.d)
				for k := range x {
					x[k] = float32(rng.NormFloat64())
				}
				labels := make([]int32, shape.b)
				for k := range labels {
					labels[k] = int32(rng.IntN(shape.c))
				}
				modelFn := func(scope *model.Scope, h *Node) *Node {
					logits := layers.DenseWithBias(scope, h, shape.c)
					if m.autodiff {
						_, params := trainableVariables(scope, h.Graph())
						RecordLinearization(Linearize(logits, params))
					}
					return logits
				}
				trainer := train.NewTrainer(testBackend, model.NewStore(), modelFn, Loss, m.opt(), nil, nil)
				batch := func() train.Batch {
					return train.Batch{Inputs: []*tensors.Tensor{tensors.FromFlatDataAndDimensions(x, shape.b, shape.d)},
						Labels: []*tensors.Tensor{tensors.FromValue(labels)}}
				}
				for range 2 { // compile and warm up
					if _, err := trainer.TrainStep(batch()); err != nil {
						b.Fatal(err)
					}
				}
				b.ResetTimer()
				for range b.N {
					b.StopTimer()
					next := batch()
					b.StartTimer()
					if _, err := trainer.TrainStep(next); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Microseconds())/1e3/float64(b.N), "ms/step")
			})
		}
	}
}
