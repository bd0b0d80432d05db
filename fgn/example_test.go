package fgn_test

import (
	"fmt"
	"math"
	"math/rand/v2"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train"

	"github.com/fgn-paper/fgn/fgn"
	"github.com/fgn-paper/fgn/fgn/backend"
)

// ring returns n points on a noisy ring in dim dimensions whose 2·classes sectors alternate
// between the classes, so that each class owns two opposite sectors: no linear head separates
// them.
func ring(rng *rand.Rand, n, dim, classes int) ([][]float64, []int32) {
	x := make([][]float64, n)
	y := make([]int32, n)
	for i := range x {
		angle := 2 * math.Pi * rng.Float64()
		y[i] = int32(int(angle/(math.Pi/float64(classes))) % classes)
		x[i] = make([]float64, dim)
		for k := range x[i] {
			x[i][k] = 0.1 * rng.NormFloat64()
		}
		x[i][0] += math.Cos(angle)
		x[i][1] += math.Sin(angle)
	}
	return x, y
}

// Example_trainer trains a two-layer tanh network with FGN through GoMLX's train.Trainer:
// fgn.FGN().Done() is a GoMLX optimizer, and fgn.Loss, the softmax cross-entropy, records the
// logits and labels that FGN's curvature needs. FGN linearises the model by autodiff, so any
// GoMLX model of trainable variables works, not only linear heads.
func Example_trainer() {
	const n, dim, hidden, classes = 256, 8, 16, 4
	be, err := backend.New()
	if err != nil {
		panic(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	x, y := ring(rng, n, dim, classes)
	init := func(rows, cols int) [][]float64 {
		w := make([][]float64, rows)
		for i := range w {
			w[i] = make([]float64, cols)
			for j := range w[i] {
				w[i][j] = rng.NormFloat64() / math.Sqrt(float64(rows))
			}
		}
		return w
	}
	w1, w2 := init(dim, hidden), init(hidden, classes)

	mlp := func(scope *model.Scope, x *Node) *Node {
		scope = scope.In("mlp")
		layer := func(name string, x *Node, w [][]float64) *Node {
			weights := scope.VariableWithValue("W"+name, w).NodeValue(x.Graph())
			bias := scope.VariableWithValue("b"+name, make([]float64, len(w[0]))).NodeValue(x.Graph())
			return Add(MatMul(x, weights), ExpandAxes(bias, 0))
		}
		return layer("2", Tanh(layer("1", x, w1)), w2)
	}
	opt := fgn.FGN().Damping(0.1).Done() // α = 1, λ from 0.1 by Levenberg-Marquardt, CG ≤ 5 iterations
	trainer := train.NewTrainer(be, model.NewStore(), mlp, fgn.Loss, opt, nil, nil)
	for i := range 46 {
		batch := train.Batch{Inputs: []*tensors.Tensor{tensors.FromValue(x)}, Labels: []*tensors.Tensor{tensors.FromValue(y)}}
		metrics, err := trainer.TrainStep(batch)
		if err != nil {
			panic(err)
		}
		if i%15 == 0 {
			fmt.Printf("step %2d: loss %.2f\n", i, metrics[0].Value())
		}
	}
	// What the optimizer keeps of its steps (its String form also gives λ): the last gain ratio ρ
	// and step length τ, and the rejected and skipped steps.
	tel := opt.Telemetry(trainer.Store())
	fmt.Printf("ρ %.1f, τ %.1f, rejected %d, skipped %d\n", tel.GainRatio, tel.StepLength, tel.RejectedSteps, tel.SkippedSteps)
	// Output:
	// step  0: loss 1.44
	// step 15: loss 0.31
	// step 30: loss 0.14
	// step 45: loss 0.07
	// ρ 1.0, τ 0.9, rejected 0, skipped 0
}

// Example_closedForm supplies a closed-form linearisation: the model records its affine head
// z = x W + 1 bᵀ with fgn.RecordLinearization, and FGN solves the damped system with the head's
// closed-form row Gram (appendix F.2) instead of autodiff products. A model whose Jacobian
// products are known in closed form records its own fgn.Linearization the same way.
func Example_closedForm() {
	const n, dim, classes = 256, 8, 4
	be, err := backend.New()
	if err != nil {
		panic(err)
	}
	// Gaussian classes around random means.
	rng := rand.New(rand.NewPCG(3, 4))
	means := make([][]float64, classes)
	for c := range means {
		means[c] = make([]float64, dim)
		for k := range means[c] {
			means[c][k] = rng.NormFloat64()
		}
	}
	x := make([][]float64, n)
	y := make([]int32, n)
	for i := range x {
		y[i] = int32(rng.IntN(classes))
		x[i] = make([]float64, dim)
		for k := range x[i] {
			x[i][k] = means[y[i]][k] + rng.NormFloat64()
		}
	}

	head := func(scope *model.Scope, x *Node) *Node {
		g := x.Graph()
		scope = scope.In("head")
		w := make([][]float64, dim)
		for k := range w {
			w[k] = make([]float64, classes)
		}
		lin := fgn.NewAffineHead(x, scope.VariableWithValue("W", w).NodeValue(g),
			scope.VariableWithValue("bias", make([]float64, classes)).NodeValue(g))
		fgn.RecordLinearization(lin)
		return lin.Logits()
	}
	trainer := train.NewTrainer(be, model.NewStore(), head, fgn.Loss, fgn.FGN().Done(), nil, nil)
	for i := range 30 {
		batch := train.Batch{Inputs: []*tensors.Tensor{tensors.FromValue(x)}, Labels: []*tensors.Tensor{tensors.FromValue(y)}}
		metrics, err := trainer.TrainStep(batch)
		if err != nil {
			panic(err)
		}
		if i%10 == 0 || i == 29 {
			fmt.Printf("step %2d: loss %.2f\n", i, metrics[0].Value())
		}
	}
	// Output:
	// step  0: loss 1.39
	// step 10: loss 0.17
	// step 20: loss 0.15
	// step 29: loss 0.15
}
