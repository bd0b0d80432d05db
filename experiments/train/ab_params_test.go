package train_test

import (
	"math/rand/v2"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"

	"github.com/fgn-paper/fgn/experiments/mechanism"
	"github.com/fgn-paper/fgn/experiments/method"
	"github.com/fgn-paper/fgn/experiments/train"
)

// TestABParamsChange: scratch check for the upgrade A/B that two steps change W each time.
func TestABParamsChange(t *testing.T) {
	profile, _ := mechanism.StepTimeProfile("full")
	for _, s := range benchSteps {
		cfg := profile.StepConfig(s.m)
		cfg.Linearization = s.lin
		const b, d, c = 64, 32, 16
		rng := rand.New(rand.NewPCG(1, 2))
		hData := make([]float32, b*d)
		for i := range hData {
			hData[i] = float32(rng.NormFloat64())
		}
		lab := make([]int32, b)
		for i := range lab {
			lab[i] = int32(rng.IntN(c))
		}
		store := model.NewStore()
		scope := store.RootScope()
		vars := []*model.Variable{
			scope.VariableWithValue("W", tensors.FromShape(shapes.Make(dtypes.Float32, d, c))),
			scope.VariableWithValue("bias", tensors.FromShape(shapes.Make(dtypes.Float32, c))),
		}
		step, err := train.NewStep(benchBackend, store, vars, cfg, []*tensors.Tensor{tensors.FromFlatDataAndDimensions(hData, b, d)}, []*tensors.Tensor{tensors.FromValue(lab)})
		if err != nil {
			t.Fatal(err)
		}
		prev := tensors.MustCopyFlatData[float32](vars[0].MustValue())
		var losses []float64
		for k := range 3 {
			r, err := step.Run(0)
			if err != nil {
				t.Fatal(err)
			}
			losses = append(losses, r.Loss)
			cur := tensors.MustCopyFlatData[float32](vars[0].MustValue())
			var diff float64
			for i := range cur {
				diff = max(diff, float64(cur[i]-prev[i]), float64(prev[i]-cur[i]))
			}
			if diff == 0 {
				t.Errorf("%s (%s): W unchanged by step %d", s.name, method.Method(s.m), k+1)
			}
			prev = cur
		}
		t.Logf("%s: losses %v", s.name, losses)
		if !(losses[2] < losses[0]) {
			t.Errorf("%s: loss did not fall: %v", s.name, losses)
		}
		step.Finalize()
	}
}
