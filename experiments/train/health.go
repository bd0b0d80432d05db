package train

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// Health is what the end of a training run says about whether it trained: its loss before the
// first step and after the last, and how many of its steps were not taken.
type Health struct {
	InitialLoss, FinalLoss float64
	// Steps is the number of steps run; Skipped counts those that were not finite (the loss, the
	// direction or the CG residual), Rejected the finite ones that an adaptive damping policy
	// rejected. Neither changes the model.
	Steps, Skipped, Rejected int
}

// Warnings returns one sentence for each way the run went wrong, none when it trained:
//   - its final loss is not finite;
//   - its final loss is above its initial loss (it diverged, or stepped uphill);
//   - no step was taken: every step was skipped or rejected.
func (h Health) Warnings() []string {
	var w []string
	switch {
	case math.IsNaN(h.FinalLoss) || math.IsInf(h.FinalLoss, 0):
		w = append(w, fmt.Sprintf("the loss ended at %g after %d steps (started at %.4g)", h.FinalLoss, h.Steps, h.InitialLoss))
	case h.FinalLoss > h.InitialLoss:
		w = append(w, fmt.Sprintf("the loss rose from %.4g to %.4g in %d steps", h.InitialLoss, h.FinalLoss, h.Steps))
	}
	if h.Steps > 0 && h.Skipped+h.Rejected == h.Steps {
		w = append(w, fmt.Sprintf("no step was taken: %d of %d skipped (not finite), %d rejected by the damping policy",
			h.Skipped, h.Steps, h.Rejected))
	}
	return w
}

// ErrNotTrained is wrapped by the error Run returns for a run that went wrong (Health.Warnings)
// when Config.FailOnDivergence is set.
var ErrNotTrained = errors.New("the run did not train")

// Health returns the trace's Health: the mean training cross-entropy at its first and last
// points and the step counts at its last.
func (t *Trace) Health() Health {
	if len(t.Points) == 0 {
		return Health{InitialLoss: math.NaN(), FinalLoss: math.NaN()}
	}
	first, last := t.Points[0], t.Points[len(t.Points)-1]
	return Health{InitialLoss: first.TrainLoss, FinalLoss: last.TrainLoss, Steps: last.Step,
		Skipped: last.SkippedSteps, Rejected: last.RejectedSteps}
}

// notTrained returns the error of a run that went wrong under Config.FailOnDivergence, nil
// for one that trained.
func notTrained(warnings []string) error {
	if len(warnings) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrNotTrained, strings.Join(warnings, "; "))
}
