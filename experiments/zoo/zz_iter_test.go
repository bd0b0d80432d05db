package zoo

import (
	"fmt"
	"testing"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"

	"github.com/fgn-paper/fgn/fgn"
)

func TestScratchIterations(t *testing.T) {
	for _, m := range Models {
		if m.Name != "relu-mlp" && m.Name != "tanh-mlp" && m.Name != "linear" && m.Name != "fnn" {
			continue
		}
		for _, method := range []string{"FGN", "SGN"} {
			trainDS, _, err := m.Task.load(testBackend, m.Batch, 1)
			if err != nil {
				t.Fatal(err)
			}
			store := model.NewStore()
			store.SetParam(model.ParamInitialSeed, int64(1))
			store.SetParams(m.Params)
			cfg := fgn.FGN()
			if method == "SGN" {
				cfg = fgn.SGN()
			}
			opt := cfg.Done()
			exec := model.MustNewExec(testBackend, store, func(scope *model.Scope, x, y *Node) []*Node {
				g := x.Graph()
				scope.Store().SetTraining(g, true)
				z := m.Fn(scope, x)
				var params []*Node
				for v := range scope.IterVariables() {
					if v.Trainable && v.InUseByGraph(g) {
						params = append(params, v.NodeValue(g))
					}
				}
				labels := Reshape(y, y.Shape().Dim(0))
				dir := opt.UpdateGraphWithLinearization(scope, fgn.Linearize(z, params), labels)
				return []*Node{dir.Iterations, dir.Damping.Noise, dir.Damping.Used}
			})
			total, steps := 0, 0
			var nus []float64
			for epoch := 0; epoch < 3; epoch++ {
				for batch, err := range trainDS.Iter() {
					if err != nil {
						t.Fatal(err)
					}
					out, err := exec.Exec(batch.Inputs[0], batch.Labels[0])
					if err != nil {
						t.Fatal(err)
					}
					total += int(tensors.ToScalar[int32](out[0]))
					steps++
					if steps%10 == 0 {
						nus = append(nus, float64(tensors.ToScalar[float32](out[1])))
					}
				}
			}
			fmt.Printf("%-10s %s: mean CG iterations %.2f over %d steps; ν samples %.3g\n", m.Name, method, float64(total)/float64(steps), steps, nus)
		}
	}
}
