package fgn

import (
	"math"
	"testing"
)

// TestTelemetryConstantDamping checks Optimizer.Telemetry through train.Trainer for a constant λ,
// which keeps no λ, ρ or rejected count: λ is the setting's, ρ NaN, no step rejected or skipped,
// and τ the last step's where FGN takes the GGN's step length (a number in [0, 1]), NaN otherwise.
func TestTelemetryConstantDamping(t *testing.T) {
	p := newProblem(3, 16, 5, 4, 6, 1)
	for _, tc := range []struct {
		name string
		c    *GNConfig
		tau  bool
	}{
		{"FGN", FGN(), true},
		{"FGN without the GGN's step length", FGN().GGNStepLength(false), false},
		{"SGN", SGN(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newOptModel(p, true, false)
			opt := tc.c.DampingPolicy(ConstantDamping{}).Damping(0.3).Done()
			m.trainerStep(t, opt, p, 2)
			tel := opt.Telemetry(m.store)
			if tel.Damping != 0.3 || !math.IsNaN(tel.GainRatio) || tel.RejectedSteps != 0 || tel.SkippedSteps != 0 {
				t.Errorf("telemetry %+v, want λ 0.3, NaN ρ, no rejected or skipped steps", tel)
			}
			if tc.tau != (tel.StepLength >= 0 && tel.StepLength <= 1) || !tc.tau && !math.IsNaN(tel.StepLength) {
				t.Errorf("StepLength %g, want τ in [0, 1]: %v (NaN otherwise)", tel.StepLength, tc.tau)
			}
		})
	}
}

func TestTelemetryString(t *testing.T) {
	for _, tc := range []struct {
		tel  Telemetry
		want string
	}{
		{Telemetry{Damping: 0.1428, GainRatio: 1.031, StepLength: 0.8449, RejectedSteps: 2, SkippedSteps: 1},
			"λ 0.143, ρ 1.03, τ 0.84, rejected 2, skipped 1"},
		{Telemetry{Damping: 1, GainRatio: math.NaN(), StepLength: math.NaN()}, "λ 1, rejected 0, skipped 0"},
		{Telemetry{Damping: 2.5e-5, GainRatio: -0.5, StepLength: math.NaN(), RejectedSteps: 7},
			"λ 2.5e-05, ρ -0.50, rejected 7, skipped 0"},
	} {
		if got := tc.tel.String(); got != tc.want {
			t.Errorf("%+v: String() = %q, want %q", tc.tel, got, tc.want)
		}
	}
}
