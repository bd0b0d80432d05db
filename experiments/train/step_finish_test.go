package train_test

import (
	"testing"
	"time"

	"github.com/gomlx/compute"

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
	profile := mechanism.PaperStepTime()
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
				go func() { done <- runSteps(be, cfg, 2) }()
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

// runSteps builds the step of cfg at b=128, d=256, C=256 (headStep) and runs it n times.
func runSteps(be compute.Backend, cfg train.StepConfig, n int) error {
	step, err := headStep(be, cfg, 128, 256, 256)
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
