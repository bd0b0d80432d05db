package fgn

import (
	"fmt"
	"math"
	"path"
	"strings"

	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// Telemetry is what an FGN or SGN optimizer keeps of its steps in its state variables, under its
// scope ("/FGNOptimizer" or "/SGNOptimizer" by default, see GNConfig.Scope), for a caller that
// steps through UpdateGraph (train.Trainer, train.Loop), which returns no Direction. Read it with
// Optimizer.Telemetry between steps, e.g. in a train.Loop hook; a checkpoint keeps it.
//
// What to watch: λ at the curvature's scale and ρ near 1 are a model the damped Gauss-Newton
// model fits; a λ that keeps growing with ρ far below 1, or rejected steps piling up, are steps
// the model does not predict; skipped steps are batches whose loss or step was not finite, which
// the optimizer leaves out. An FGN step length τ that stays far below 1 means FGN's true-vs-rest
// curvature misses most of the multiclass GGN's along its steps: take SGN there (see
// GNConfig.GGNStepLength).
type Telemetry struct {
	// Damping is the λ the next step starts from: an adaptive policy's state variable "damping",
	// or the constant λ (Settings.Damping).
	Damping float64
	// GainRatio is the last step's ρ, actual over predicted decrease of the loss (state variable
	// "gain_ratio"); NaN for a constant λ, before the first step, when the step was not finite or
	// when its model predicted no decrease.
	GainRatio float64
	// StepLength is the last FGN step's length τ ∈ [0, 1] at the GGN's step length (state
	// variable "step_length", Settings.GGNStepLength); NaN for SGN, without GGNStepLength, before
	// the first step or when the step was not finite.
	StepLength float64
	// RejectedSteps counts the finite steps an adaptive policy rejected (ρ below its threshold,
	// or a step that raised the batch loss): "rejected_steps".
	RejectedSteps int64
	// SkippedSteps counts the steps not taken because their loss, direction or CG residual was
	// not finite (Direction.Finite false): "skipped_steps".
	SkippedSteps int64
}

// String formats t as "λ 0.14, ρ 1.03, τ 0.84, rejected 0, skipped 0", leaving out ρ and τ where
// they are NaN.
func (t Telemetry) String() string {
	parts := []string{fmt.Sprintf("λ %.3g", t.Damping)}
	if !math.IsNaN(t.GainRatio) {
		parts = append(parts, fmt.Sprintf("ρ %.2f", t.GainRatio))
	}
	if !math.IsNaN(t.StepLength) {
		parts = append(parts, fmt.Sprintf("τ %.2f", t.StepLength))
	}
	parts = append(parts, fmt.Sprintf("rejected %d", t.RejectedSteps), fmt.Sprintf("skipped %d", t.SkippedSteps))
	return strings.Join(parts, ", ")
}

func (o *gnOptimizer) Telemetry(store *model.Store) Telemetry {
	scalar := func(name string) (float64, bool) {
		v := store.GetVariable(path.Join("/", o.c.scopeName, name))
		if v == nil {
			return math.NaN(), false
		}
		switch x := v.MustValue().Value().(type) {
		case float32:
			return float64(x), true
		case float64:
			return x, true
		}
		return math.NaN(), false
	}
	count := func(name string) int64 {
		v := store.GetVariable(path.Join("/", o.c.scopeName, name))
		if v == nil {
			return 0
		}
		return tensors.ToScalar[int64](v.MustValue())
	}
	t := Telemetry{Damping: o.c.s.Damping, RejectedSteps: count("rejected_steps"), SkippedSteps: count("skipped_steps")}
	if lambda, ok := scalar("damping"); ok {
		t.Damping = lambda
	}
	t.GainRatio, _ = scalar("gain_ratio")
	t.StepLength, _ = scalar("step_length")
	return t
}
