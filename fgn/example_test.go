package fgn_test

import (
	"fmt"
	"math"
	"math/rand/v2"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"

	"github.com/fgn-paper/fgn/fgn"
	"github.com/fgn-paper/fgn/fgn/backend"
)

// Example_mlp trains a two-layer tanh network with FGN through the generic JVP/VJP closures:
// any GoMLX logits function of model variables works, not only linear heads.
func Example_mlp() {
	const n, dim, hidden, classes = 256, 8, 16, 4
	be, err := backend.New()
	if err != nil {
		panic(err)
	}

	// Points on a noisy ring whose 2·classes sectors alternate between the classes, so that each
	// class owns two opposite sectors: no linear head separates them.
	rng := rand.New(rand.NewPCG(1, 2))
	x := make([][]float64, n)
	y := make([]int32, n)
	for i := range x {
		angle := 2 * math.Pi * rng.Float64()
		y[i] = int32(int(angle/(math.Pi/classes)) % classes)
		x[i] = make([]float64, dim)
		for k := range x[i] {
			x[i][k] = 0.1 * rng.NormFloat64()
		}
		x[i][0] += math.Cos(angle)
		x[i][1] += math.Sin(angle)
	}
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

	// The model's parameters are ordinary trainable GoMLX variables.
	store := model.NewStore()
	scope := store.RootScope().In("mlp")
	vars := []*model.Variable{
		scope.VariableWithValue("W1", init(dim, hidden)), scope.VariableWithValue("b1", make([]float64, hidden)),
		scope.VariableWithValue("W2", init(hidden, classes)), scope.VariableWithValue("b2", make([]float64, classes)),
	}

	opt := fgn.FGN().LearningRate(1).Damping(0.1).Done() // CG ≤ 5 iterations, tolerance 1e-5
	step := model.MustNewExec(be, store, func(scope *model.Scope, x, labels *Node) (*Node, *Node) {
		g := x.Graph()
		params := make(fgn.Vec, len(vars))
		for k, v := range vars {
			params[k] = v.NodeValue(g)
		}
		h := Tanh(Add(MatMul(x, params[0]), ExpandAxes(params[1], 0)))
		logits := Add(MatMul(h, params[2]), ExpandAxes(params[3], 0))
		// Linearize builds the VJP (reverse mode) and JVP (double VJP) closures of the logits.
		dir := opt.UpdateGraph(scope, fgn.Linearize(logits, params), labels)
		return dir.Loss, dir.Iterations
	})
	for i := range 60 {
		loss, its := step.MustCall2(x, y)
		if i%20 == 0 || i == 59 {
			fmt.Printf("step %2d: loss %.3f (CG iterations %d)\n", i, loss.Value(), its.Value())
		}
	}
	// Output:
	// step  0: loss 1.437 (CG iterations 5)
	// step 20: loss 0.301 (CG iterations 5)
	// step 40: loss 0.171 (CG iterations 5)
	// step 59: loss 0.130 (CG iterations 5)
}
