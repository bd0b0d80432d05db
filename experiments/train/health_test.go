package train

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/fgn-paper/fgn/experiments/method"
)

// TestHealthWarnings checks each warning of Health against runs described by hand.
func TestHealthWarnings(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    Health
		want []string // one substring per warning, in order
	}{
		{"trained", Health{InitialLoss: 2.3, FinalLoss: 0.1, Steps: 10, Skipped: 2, Rejected: 3}, nil},
		{"loss unchanged", Health{InitialLoss: 2.3, FinalLoss: 2.3, Steps: 10}, nil},
		{"loss rose", Health{InitialLoss: 2.52, FinalLoss: 5.87, Steps: 88}, []string{"the loss rose from 2.52 to 5.87 in 88 steps"}},
		{"loss NaN", Health{InitialLoss: 2.3, FinalLoss: math.NaN(), Steps: 5}, []string{"the loss ended at NaN after 5 steps"}},
		{"loss +Inf", Health{InitialLoss: 2.3, FinalLoss: math.Inf(1), Steps: 5}, []string{"the loss ended at +Inf"}},
		{"all skipped", Health{InitialLoss: 2.3, FinalLoss: 2.3, Steps: 22, Skipped: 22},
			[]string{"no step was taken: 22 of 22 skipped (not finite), 0 rejected"}},
		{"all skipped or rejected, loss not finite", Health{InitialLoss: math.Inf(1), FinalLoss: math.Inf(1), Steps: 4, Skipped: 3, Rejected: 1},
			[]string{"the loss ended at +Inf", "no step was taken: 3 of 4 skipped (not finite), 1 rejected"}},
		{"no steps", Health{InitialLoss: 2.3, FinalLoss: 2.3}, nil},
	} {
		got := tc.h.Warnings()
		ok := len(got) == len(tc.want)
		for k := 0; ok && k < len(got); k++ {
			ok = strings.Contains(got[k], tc.want[k])
		}
		if !ok {
			t.Errorf("%s: warnings %q, want ones containing %q", tc.name, got, tc.want)
		}
	}
}

// TestRunWarns trains the failing runs and a healthy one: Adam at learning rate 1e30
// (its loss rises) and FGN on features scaled by 1e30 without standardisation (every step is
// skipped). Their traces' Health warns, Run returns ErrNotTrained with the trace under
// FailOnDivergence and no error without it; the healthy run warns of nothing. OnEpoch reports
// every epoch, with the epoch's skipped steps.
func TestRunWarns(t *testing.T) {
	trainSet, evalSet := problem(t, 96, 6, 4)
	huge := *trainSet
	huge.X = append([]float32(nil), trainSet.X...)
	for k := range huge.X {
		huge.X[k] *= 1e30
	}
	const epochs = 2
	for _, tc := range []struct {
		name string
		m    method.Method
		lr   float64
		data bool // the scaled features
		want string
	}{
		{"adam lr=1e30", method.Adam, 1e30, false, "the loss rose"},
		{"fgn features×1e30", method.FGN, 0, true, "no step was taken: 6 of 6 skipped"},
		{"fgn healthy", method.FGN, 0, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Method: tc.m, Hyper: method.Paper(tc.m), BatchSize: 32, Epochs: epochs, EvalEvery: 3, Seed: 5}
			if tc.lr > 0 {
				cfg.Hyper.Adam.LearningRate = tc.lr
			}
			data := trainSet
			if tc.data {
				data = &huge
			}
			var reports []EpochReport
			cfg.OnEpoch = func(r EpochReport) { reports = append(reports, r) }
			tr, err := Run(testBackend, cfg, data, evalSet)
			if err != nil {
				t.Fatal(err)
			}
			warnings := tr.Health().Warnings()
			t.Logf("warnings %q", warnings)
			if got := strings.Join(warnings, "; "); (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("warnings %q, want one containing %q", warnings, tc.want)
			}
			skipped := 0
			for k, r := range reports {
				if r.Epoch != k+1 || r.Epochs != epochs {
					t.Errorf("report %d is of epoch %d/%d", k, r.Epoch, r.Epochs)
				}
				skipped += r.Skipped
			}
			if last := tr.Points[len(tr.Points)-1]; len(reports) != epochs || skipped != last.SkippedSteps {
				t.Errorf("%d epoch reports counting %d skipped steps; want %d reports and the trace's %d", len(reports),
					skipped, epochs, last.SkippedSteps)
			}
			cfg.OnEpoch, cfg.FailOnDivergence = nil, true
			tr, err = Run(testBackend, cfg, data, evalSet)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("FailOnDivergence on a healthy run: %v", err)
			case tc.want != "" && (!errors.Is(err, ErrNotTrained) || tr == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("FailOnDivergence: trace %v, error %v; want the trace and an ErrNotTrained containing %q",
					tr != nil, err, tc.want)
			}
		})
	}
}

// TestEpochStepLength checks EpochReport.MeanStepLength: FGN at the GGN's step length reports a
// mean τ in (0, 1] for every epoch, the paper's FGN (full length), SGN and Adam report NaN.
func TestEpochStepLength(t *testing.T) {
	trainSet, evalSet := problem(t, 96, 6, 4)
	for _, tc := range []struct {
		name string
		m    method.Method
		ggn  bool
	}{
		{"fgn at the GGN's step length", method.FGN, true},
		{"fgn at full length", method.FGN, false},
		{"sgn", method.SGN, false},
		{"adam", method.Adam, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Method: tc.m, Hyper: method.Paper(tc.m), BatchSize: 32, Epochs: 2, EvalEvery: 3, Seed: 5}
			cfg.Hyper.GN.GGNStepLength = tc.ggn
			var reports []EpochReport
			cfg.OnEpoch = func(r EpochReport) { reports = append(reports, r) }
			if _, err := Run(testBackend, cfg, trainSet, evalSet); err != nil {
				t.Fatal(err)
			}
			if len(reports) != cfg.Epochs {
				t.Fatalf("%d epoch reports, want %d", len(reports), cfg.Epochs)
			}
			for _, r := range reports {
				if tau := r.MeanStepLength; tc.ggn != (tau > 0 && tau <= 1) || !tc.ggn && !math.IsNaN(tau) {
					t.Errorf("epoch %d: mean τ %g, want one in (0, 1]: %v (NaN otherwise)", r.Epoch, tau, tc.ggn)
				}
			}
		})
	}
}
