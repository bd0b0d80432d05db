package zoo

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/fgn-paper/fgn/fgn"
)

// AccuracyTolerance is how far below tuned Adam's final held-out accuracy an optimizer's may be
// and count as reaching it in the time-to-accuracy table: 1 point.
const AccuracyTolerance = 0.01

// TunedAdamName names tuned Adam in tables: on each model, the Adam candidate (AdamRates) of the
// best mean held-out accuracy after the model's epoch budget.
const TunedAdamName = "tuned Adam"

// sweepRuns indexes a sweep's runs by model and optimizer, in the order they first appear.
type sweepRuns struct {
	models, opts []string
	runs         map[[2]string][]*Run
}

func index(runs []*Run) *sweepRuns {
	s := &sweepRuns{runs: map[[2]string][]*Run{}}
	for _, r := range runs {
		if !slices.Contains(s.models, r.Model) {
			s.models = append(s.models, r.Model)
		}
		if !slices.Contains(s.opts, r.Optimizer) {
			s.opts = append(s.opts, r.Optimizer)
		}
		key := [2]string{r.Model, r.Optimizer}
		s.runs[key] = append(s.runs[key], r)
	}
	return s
}

// trained returns the runs of model and opt that did not fail.
func (s *sweepRuns) trained(model, opt string) []*Run {
	var out []*Run
	for _, r := range s.runs[[2]string{model, opt}] {
		if r.Failed == "" && len(r.Epochs) > 0 {
			out = append(out, r)
		}
	}
	return out
}

// final returns the mean and smallest held-out accuracy after the budget of the runs, and their
// mean held-out cross-entropy (NaN for none).
func final(runs []*Run) (meanAcc, worstAcc, meanLoss float64) {
	if len(runs) == 0 {
		return math.NaN(), math.NaN(), math.NaN()
	}
	worstAcc = math.Inf(1)
	for _, r := range runs {
		last := r.Epochs[len(r.Epochs)-1]
		meanAcc += last.HeldOutAccuracy / float64(len(runs))
		meanLoss += last.HeldOutLoss / float64(len(runs))
		worstAcc = min(worstAcc, last.HeldOutAccuracy)
	}
	return meanAcc, worstAcc, meanLoss
}

// TunedAdam returns, for each model with runs of Adam's candidates, the name of the candidate of
// the best mean held-out accuracy after the budget (the smaller rate on a tie).
func TunedAdam(runs []*Run) map[string]string {
	s := index(runs)
	tuned := map[string]string{}
	for _, m := range s.models {
		best := math.Inf(-1)
		for _, o := range s.opts {
			if !strings.HasPrefix(o, adamPrefix) {
				continue
			}
			if acc, _, _ := final(s.trained(m, o)); acc > best {
				best, tuned[m] = acc, o
			}
		}
	}
	return tuned
}

// reached returns the training seconds after which run r's held-out accuracy first reached
// target (evaluated after each epoch; 0 when it started there), +Inf if it never did.
func reached(r *Run, target float64) float64 {
	for _, e := range r.Epochs {
		if e.HeldOutAccuracy >= target {
			return e.Seconds
		}
	}
	return math.Inf(1)
}

// median returns the median of xs (+Inf entries included), NaN for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Sorted(slices.Values(xs))
	if n := len(s); n%2 == 1 {
		return s[n/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// AtFloor reports whether λ reached the Levenberg-Marquardt floor (fgn.LevenbergMarquardt's
// MinDamping, to float32 resolution) after one of the run's steps.
func AtFloor(r *Run) bool {
	floor := fgn.LevenbergMarquardt().MinDamping
	for _, e := range r.Epochs {
		if e.MinDamping <= floor*(1+1e-6) {
			return true
		}
	}
	return false
}

// Summary writes the Markdown tables of a sweep's runs: held-out accuracy and cross-entropy after
// each model's epoch budget (mean and worst over the seeds), tuned Adam's rate per model, the
// optimizers' telemetry, the cost of a step, the time to tuned Adam's final accuracy less
// AccuracyTolerance, and every run that went wrong (it failed, diverged, its training loss ended
// above its start, or λ reached its floor).
func Summary(runs []*Run, w io.Writer) error {
	s := index(runs)
	tuned := TunedAdam(runs)
	var b strings.Builder
	header := func(first string) {
		fmt.Fprintf(&b, "| %s |", first)
		for _, m := range s.models {
			fmt.Fprintf(&b, " %s |", m)
		}
		b.WriteString("\n|---|")
		for range s.models {
			b.WriteString("---|")
		}
		b.WriteString("\n")
	}
	cell := func(format string, x ...any) { fmt.Fprintf(&b, " "+format+" |", x...) }
	pct := func(x float64) string {
		if math.IsNaN(x) {
			return "–"
		}
		return fmt.Sprintf("%.1f", 100*x)
	}
	// The optimizers other than Adam's candidates, then tuned Adam, then the candidates.
	var others, adams []string
	for _, o := range s.opts {
		if strings.HasPrefix(o, adamPrefix) {
			adams = append(adams, o)
		} else {
			others = append(others, o)
		}
	}
	rowsOf := func(m, o string) []*Run {
		if o == TunedAdamName {
			return s.trained(m, tuned[m])
		}
		return s.trained(m, o)
	}
	rows := others
	if len(tuned) > 0 {
		rows = append(append(slices.Clone(others), TunedAdamName), adams...)
	}

	b.WriteString("Held-out accuracy (%) after each model's epoch budget: mean over the seeds (worst seed).\n\n")
	header("optimizer")
	for _, o := range rows {
		fmt.Fprintf(&b, "| %s |", o)
		for _, m := range s.models {
			if mean, worst, _ := final(rowsOf(m, o)); math.IsNaN(mean) {
				cell("–")
			} else {
				cell("%s (%s)", pct(mean), pct(worst))
			}
		}
		b.WriteString("\n")
	}
	if len(tuned) > 0 {
		var chosen []string
		for _, m := range s.models {
			chosen = append(chosen, fmt.Sprintf("%s %s", m, strings.TrimPrefix(tuned[m], adamPrefix)))
		}
		fmt.Fprintf(&b, "\n%s: on each model, the learning rate of the best mean above among %s: %s.\n", TunedAdamName,
			strings.Join(adams, ", "), strings.Join(chosen, ", "))
	}

	b.WriteString("\nHeld-out cross-entropy after each model's epoch budget: mean over the seeds.\n\n")
	header("optimizer")
	for _, o := range rows {
		fmt.Fprintf(&b, "| %s |", o)
		for _, m := range s.models {
			if _, _, loss := final(rowsOf(m, o)); math.IsNaN(loss) {
				cell("–")
			} else {
				cell("%.3g", loss)
			}
		}
		b.WriteString("\n")
	}

	b.WriteString("\nTelemetry of FGN and SGN (fgn's state variables): the smallest λ at the end of the budget over the " +
		"seeds, the mean gain ratio ρ and, for FGN at the GGN's step length, the mean step length τ of the last " +
		"epoch (means over the seeds), and the rejected and skipped steps of all seeds out of their steps.\n\n")
	header("optimizer")
	for _, o := range others {
		fmt.Fprintf(&b, "| %s |", o)
		for _, m := range s.models {
			rs := s.trained(m, o)
			lambda, rho, tau, steps, rejected, skipped := math.Inf(1), 0.0, 0.0, 0, 0, 0
			for _, r := range rs {
				last := r.Epochs[len(r.Epochs)-1]
				lambda = min(lambda, last.Damping)
				rho += last.MeanRho / float64(len(rs))
				tau += last.MeanStepLength / float64(len(rs))
				steps += last.Steps
				for _, e := range r.Epochs {
					rejected += e.Rejected
					skipped += e.Skipped
				}
			}
			if len(rs) == 0 {
				cell("–")
				continue
			}
			if math.IsNaN(tau) {
				cell("λ %.2g, ρ %.2f, rejected %d, skipped %d of %d", lambda, rho, rejected, skipped, steps)
			} else {
				cell("λ %.2g, ρ %.2f, τ %.2f, rejected %d, skipped %d of %d", lambda, rho, tau, rejected, skipped, steps)
			}
		}
		b.WriteString("\n")
	}

	b.WriteString("\nCost: ms per training step (the budget's training time over its steps, compilation excluded) " +
		"and, in brackets, s to compile the step; mean over the seeds.\n\n")
	header("optimizer")
	for _, o := range append(slices.Clone(others), adams...) {
		fmt.Fprintf(&b, "| %s |", o)
		for _, m := range s.models {
			rs := s.trained(m, o)
			ms, compile := 0.0, 0.0
			for _, r := range rs {
				last := r.Epochs[len(r.Epochs)-1]
				ms += 1e3 * last.Seconds / float64(max(last.Steps, 1)) / float64(len(rs))
				compile += r.CompileSeconds / float64(len(rs))
			}
			if len(rs) == 0 {
				cell("–")
				continue
			}
			cell("%.3g (%.2g)", ms, compile)
		}
		b.WriteString("\n")
	}

	if len(tuned) > 0 {
		fmt.Fprintf(&b, "\nTime to accuracy: training seconds (compilation and evaluation excluded; accuracy evaluated "+
			"after each epoch) until the held-out accuracy first reaches %s's final mean less %.0f point, median over "+
			"the seeds (seeds that reached it).\n\n| optimizer |", TunedAdamName, 100*AccuracyTolerance)
		for _, m := range s.models {
			fmt.Fprintf(&b, " %s: %s %% |", m, pct(targetOf(s, tuned, m)))
		}
		b.WriteString("\n|---|")
		for range s.models {
			b.WriteString("---|")
		}
		b.WriteString("\n")
		for _, o := range append(slices.Clone(others), TunedAdamName) {
			fmt.Fprintf(&b, "| %s |", o)
			for _, m := range s.models {
				rs := rowsOf(m, o)
				target := targetOf(s, tuned, m)
				if len(rs) == 0 || math.IsNaN(target) {
					cell("–")
					continue
				}
				var ts []float64
				n := 0
				for _, r := range rs {
					t := reached(r, target)
					ts = append(ts, t)
					if !math.IsInf(t, 1) {
						n++
					}
				}
				if t := median(ts); math.IsInf(t, 1) {
					cell("not reached (%d/%d)", n, len(rs))
				} else {
					cell("%.3g s (%d/%d)", t, n, len(rs))
				}
			}
			b.WriteString("\n")
		}
	}

	b.WriteString("\nRuns that went wrong: failed (the step could not be built or run), diverged (a batch loss that " +
		"was not finite), the experiments/train warnings (training loss ended above its start or not finite, no step " +
		"taken), or λ at the Levenberg-Marquardt floor after a step.\n\n")
	wrong := 0
	for _, r := range runs {
		var why []string
		switch {
		case r.Failed != "":
			why = append(why, "failed: "+r.Failed)
		case r.Diverged:
			why = append(why, fmt.Sprintf("diverged at step %d", r.Epochs[len(r.Epochs)-1].Steps))
		}
		if r.Failed == "" {
			why = append(why, r.Health().Warnings()...)
		}
		if AtFloor(r) {
			why = append(why, "λ at its floor")
		}
		if len(why) > 0 {
			wrong++
			fmt.Fprintf(&b, "- %s, %s, seed %d: %s\n", r.Model, r.Optimizer, r.Seed, strings.Join(why, "; "))
		}
	}
	if wrong == 0 {
		b.WriteString("None.\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// targetOf returns the time-to-accuracy target of model m: tuned Adam's final mean held-out
// accuracy less AccuracyTolerance (NaN without tuned Adam).
func targetOf(s *sweepRuns, tuned map[string]string, m string) float64 {
	name, ok := tuned[m]
	if !ok {
		return math.NaN()
	}
	acc, _, _ := final(s.trained(m, name))
	return acc - AccuracyTolerance
}
