package fgn_test

import (
	"testing"

	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/layers"
	"github.com/gomlx/gomlx/ml/layers/activation"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train"

	"github.com/fgn-paper/fgn/data/digits"
	"github.com/fgn-paper/fgn/fgn"
	"github.com/fgn-paper/fgn/fgn/backend"
)

// cnn is a classifier written with GoMLX's layers alone, as a user would: two 3×3 convolutions
// (PadSame) with ReLU and a DenseWithBias head, on 8×8 grey images.
func cnn(scope *model.Scope, x *graph.Node) *graph.Node {
	h := graph.Reshape(graph.DivScalar(x, 16), -1, 8, 8, 1)
	h = activation.Relu(layers.Convolution(scope.In("conv1"), h).Filters(8).KernelSize(3).PadSame().Done())
	h = activation.Relu(layers.Convolution(scope.In("conv2"), h).Filters(8).KernelSize(3).PadSame().Done())
	return layers.DenseWithBias(scope.In("head"), graph.Reshape(h, h.Shape().Dim(0), -1), digits.Classes)
}

// TestTrainerCNN checks that the CNN trains through train.Trainer with fgn.Loss and FGN, with the
// default settings and with Levenberg-Marquardt damping (the logits at the trial point come from
// the same model graph, nothing recorded): a few steps on one batch of the shipped digits lower
// its loss.
func TestTrainerCNN(t *testing.T) {
	set, err := digits.Load()
	if err != nil {
		t.Fatal(err)
	}
	const b, steps = 128, 6
	batch := func() train.Batch {
		return train.Batch{Inputs: []*tensors.Tensor{tensors.FromFlatDataAndDimensions(set.X[:b*digits.Pixels], b, digits.Pixels)},
			Labels: []*tensors.Tensor{tensors.FromFlatDataAndDimensions(set.Y[:b], b)}}
	}
	be := backend.MustNew()
	for _, tc := range []struct {
		name string
		opt  fgn.Optimizer
	}{
		{"FGN().Done()", fgn.FGN().Done()},
		{"FGN Levenberg-Marquardt", fgn.FGN().LearningRate(1).DampingPolicy(fgn.LevenbergMarquardt()).Done()},
		{"SGN Levenberg-Marquardt", fgn.SGN().LearningRate(1).DampingPolicy(fgn.LevenbergMarquardt()).Done()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := model.NewStore()
			store.SetParam(model.ParamInitialSeed, int64(1)) // the same initial weights in every run
			trainer := train.NewTrainer(be, store, cnn, fgn.Loss, tc.opt, nil, nil)
			var losses []float32
			for range steps {
				metrics, err := trainer.TrainStep(batch())
				if err != nil {
					t.Fatalf("%+v", err)
				}
				losses = append(losses, tensors.ToScalar[float32](metrics[0]))
			}
			if first, last := losses[0], losses[steps-1]; !(last < first) {
				t.Errorf("batch loss over %d steps %v: did not decrease", steps, losses)
			} else {
				t.Logf("batch loss over %d steps: %v", steps, losses)
			}
		})
	}
}
