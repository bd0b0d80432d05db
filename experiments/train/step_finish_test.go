package train_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"

	"github.com/fgn-paper/fgn/experiments/mechanism"
	"github.com/fgn-paper/fgn/experiments/train"
	"github.com/fgn-paper/fgn/fgn/backend"
)

// TestStepsFinish runs two steps of every benchmarked step graph (benchSteps: Adam, SGN and FGN's
// CG loops, FGN by autodiff) at b=128, d=256, C=256, where every product with the features
// (b·d·C = 8.4e6 multiply-adds) takes the pure-Go backend's large matrix kernel, inside and
// outside While loops, on the project's default backend and with sequential operations. A step
// that has not finished after two minutes is a deadlock (the Go backend's parallel executors
// once held every worker a large product in a While body waited for); this is not a timing.
func TestStepsFinish(t *testing.T) {
	const batch, dim, numClasses = 128, 256, 256
	profile, err := mechanism.StepTimeProfile("full")
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	hData := make([]float32, batch*dim)
	for i := range hData {
		hData[i] = float32(rng.NormFloat64())
	}
	labelData := make([]int32, batch)
	for i := range labelData {
		labelData[i] = int32(rng.IntN(numClasses))
	}
	for _, config := range []string{"", "go:ops_sequential"} {
		be, err := backend.NewWithConfig(config)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range benchSteps {
			finished := t.Run(config+"/"+s.name, func(t *testing.T) {
				cfg := profile.StepConfig(s.m)
				cfg.Linearization = s.lin
				done := make(chan error, 1)
				h := tensors.FromFlatDataAndDimensions(hData, batch, dim) // a tensor belongs to one backend
				go func() { done <- runSteps(be, cfg, h, tensors.FromValue(labelData), dim, numClasses, 2) }()
				select {
				case err := <-done:
					if err != nil {
						t.Fatal(err)
					}
				case <-time.After(2 * time.Minute):
					t.Fatalf("backend %q: %s's steps did not finish within two minutes (deadlock)", config, s.name)
				}
			})
			if !finished {
				return // a deadlocked backend holds its workers: the next steps would wait too
			}
		}
	}
}

// runSteps builds the step of cfg for a zero-initialised linear head and runs it n times.
func runSteps(be compute.Backend, cfg train.StepConfig, h, labels *tensors.Tensor, dim, numClasses, n int) error {
	store := model.NewStore()
	scope := store.RootScope()
	vars := []*model.Variable{
		scope.VariableWithValue("W", tensors.FromShape(shapes.Make(dtypes.Float32, dim, numClasses))),
		scope.VariableWithValue("bias", tensors.FromShape(shapes.Make(dtypes.Float32, numClasses))),
	}
	step, err := train.NewStep(be, store, vars, cfg, []*tensors.Tensor{h}, []*tensors.Tensor{labels})
	if err != nil {
		return err
	}
	defer step.Finalize()
	for range n {
		if _, err := step.Run(0); err != nil {
			return err
		}
	}
	return nil
}
