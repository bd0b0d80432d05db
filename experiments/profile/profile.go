// Package profile is the one table of the reproduction's profiles, cheapest first:
//
//   - smoke: CI; Figure 1(a) at C ∈ {2, 16, 128, 1024} on 4096 examples with 1 warm-up and 3
//     timed steps, and a tiny head-optimisation stand-in (2 seeds, 2 epochs);
//   - quick: the default, for a CPU; Figure 1(a) at every C with 3 warm-up and 24 timed steps
//     (2 and 12 for C ≥ 1024), enough for the median and interquartile range to be stable and
//     for the timing claims' bootstrap intervals to resolve clear differences; the head
//     optimisation with batch 128, 20 epochs and 3 seeds on a smaller stand-in (d = 1024,
//     C = 96, 42 training examples per class as in Cars196);
//   - full: the paper's protocols (mechanism.PaperStepTime, headopt.PaperProfile), meant for a
//     GPU.
//
// Figure 1's panels (b) and (c) are the paper's in every profile. fgn reproduce, fgn figure
// mechanism, fgn headopt and the notebooks take their configurations from Named; artifact.yaml
// names the same profiles (a test checks that they agree).
package profile

import (
	"fmt"
	"slices"
	"strings"

	"github.com/fgn-paper/fgn/experiments/headopt"
	"github.com/fgn-paper/fgn/experiments/mechanism"
)

// Usage describes the profiles in one line, for command-line help.
const Usage = "smoke (CI), quick (the default, for a CPU) or full (the paper's protocols, meant for a GPU)"

// Names are the profiles, cheapest first.
var Names = []string{"smoke", "quick", "full"}

// Plan is what a profile runs: the configuration of every experiment.
type Plan struct {
	// Profile names the plan; it is recorded in stamps and the outputs' provenance.
	Profile string
	// StepTime, Trace and Agreement are Figure 1's panels (a), (b) and (c).
	StepTime  mechanism.StepTimeConfig
	Trace     mechanism.TraceConfig
	Agreement mechanism.AgreementConfig
	// Headopt is the head-optimisation sweep of Figure 2 and Table 1, and the shape of its
	// synthetic stand-in.
	Headopt headopt.Profile
}

// Named returns a fresh plan of the named profile (one of Names).
func Named(name string) (Plan, error) {
	st, hp := mechanism.PaperStepTime(), headopt.PaperProfile()
	switch name {
	case "full":
	case "quick":
		st.Warmup, st.Steps, st.LargeC, st.LargeWarmup, st.LargeSteps = 3, 24, 1024, 2, 12
		hp.Epochs, hp.Seeds, hp.EvalEvery = 20, 3, 16
		hp.SynthTrain, hp.SynthTest, hp.SynthDim, hp.SynthClasses, hp.SynthSeparation = 4032, 4032, 1024, 96, 0.125
		hp.SynthThresholds = []float64{36, 37, 38}
	case "smoke":
		st.Examples, st.Classes, st.Warmup, st.Steps = 4096, []int{2, 16, 128, 1024}, 1, 3
		hp.BatchSize, hp.Epochs, hp.Seeds, hp.EvalEvery = 32, 2, 2, 4
		hp.SynthTrain, hp.SynthTest, hp.SynthDim, hp.SynthClasses, hp.SynthSeparation = 192, 96, 16, 4, 0.5
		hp.SynthThresholds = []float64{50, 60, 70}
	default:
		return Plan{}, fmt.Errorf("unknown profile %q (want %s)", name, strings.Join(Names, ", "))
	}
	st.Profile, hp.Name = name, name
	agree := mechanism.DefaultAgreement
	agree.Scales = slices.Clone(agree.Scales)
	return Plan{Profile: name, StepTime: st, Trace: mechanism.DefaultTrace, Agreement: agree, Headopt: hp}, nil
}
