package fgn

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/layers"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// BenchmarkTrainerDenseHead times train.Trainer steps of a layers.DenseWithBias softmax head on
// fixed features (float32; synthetic features and labels of the given shape), as a user writes a
// linear probe, for: Adam; FGN and SGN, which recognise the affine head and step on its exact
// products (FGN with the closed-form margin Gram); and SGN and FGN on the autodiff linearisation
// of the same logits (Linearize, recorded with RecordLinearization). Settings are the paper's
// (α = 1 and λ = 1 as in Figure 1(a), CG ≤ 5 iterations, tolerance 1e-5; Adam's learning rate
// 0.001).
//
// Each iteration runs one step of every method in turn, so that the ratios compare steps taken
// under the same load; it reports each method's median ms per step and the ratios FGN/Adam and
// SGN/SGN-autodiff of the medians. Each step draws a fresh batch tensor outside the timing (the
// Trainer takes ownership of it).
//
//	GOEXPERIMENT=simd go test -run X -bench TrainerDenseHead -benchtime 20x ./fgn
func BenchmarkTrainerDenseHead(b *testing.B) {
	methods := []struct {
		name     string
		opt      func() optimizer.Interface
		autodiff bool
	}{
		{"Adam", func() optimizer.Interface { return optimizer.Adam().LearningRate(0.001).Done() }, false},
		{"FGN", func() optimizer.Interface { return FGN().LearningRate(1).Done() }, false},
		{"SGN", func() optimizer.Interface { return SGN().LearningRate(1).Done() }, false},
		{"FGN-autodiff", func() optimizer.Interface { return FGN().LearningRate(1).Done() }, true},
		{"SGN-autodiff", func() optimizer.Interface { return SGN().LearningRate(1).Done() }, true},
	}
	for _, shape := range []struct{ b, d, c int }{{128, 2048, 50}, {512, 2048, 4096}} {
		b.Run(fmt.Sprintf("b=%d,d=%d,C=%d", shape.b, shape.d, shape.c), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			x := make([]float32, shape.b*shape.d)
			for k := range x {
				x[k] = float32(rng.NormFloat64())
			}
			labels := make([]int32, shape.b)
			for k := range labels {
				labels[k] = int32(rng.IntN(shape.c))
			}
			batch := func() train.Batch {
				return train.Batch{Inputs: []*tensors.Tensor{tensors.FromFlatDataAndDimensions(slices.Clone(x), shape.b, shape.d)},
					Labels: []*tensors.Tensor{tensors.FromValue(slices.Clone(labels))}}
			}
			trainers := make([]*train.Trainer, len(methods))
			for k, m := range methods {
				modelFn := func(scope *model.Scope, h *Node) *Node {
					logits := layers.DenseWithBias(scope, h, shape.c)
					if m.autodiff {
						_, params := trainableVariables(scope, h.Graph())
						RecordLinearization(Linearize(logits, params))
					}
					return logits
				}
				trainers[k] = train.NewTrainer(testBackend, model.NewStore(), modelFn, Loss, m.opt(), nil, nil)
				for range 2 { // compile and warm up
					if _, err := trainers[k].TrainStep(batch()); err != nil {
						b.Fatalf("%s: %+v", m.name, err)
					}
				}
			}
			times := make([][]float64, len(methods))
			b.ResetTimer()
			for range b.N {
				for k, trainer := range trainers {
					next := batch()
					start := time.Now()
					if _, err := trainer.TrainStep(next); err != nil {
						b.Fatalf("%s: %+v", methods[k].name, err)
					}
					times[k] = append(times[k], float64(time.Since(start).Microseconds())/1e3)
				}
			}
			medians := make([]float64, len(methods))
			for k, m := range methods {
				slices.Sort(times[k])
				medians[k] = times[k][len(times[k])/2]
				b.ReportMetric(medians[k], m.name+"-ms/step")
			}
			b.ReportMetric(medians[1]/medians[0], "FGN/Adam")
			b.ReportMetric(medians[2]/medians[4], "SGN/SGN-autodiff")
		})
	}
}
