package fgn

import "testing"

// TestSettingsDefaults checks PaperSettings against the constants of the paper's Algorithm 1 and
// app. F.2, and that DefaultSettings differs from it in the step size (the library's α = 1) and
// the stopping rule alone.
func TestSettingsDefaults(t *testing.T) {
	paper := PaperSettings()
	want := Settings{LearningRate: 0.1, Damping: 1,
		CG: CGSettings{MaxIterations: 5, Tolerance: 1e-5, StoppingRule: StopWhitenedRowResidual}}
	if paper != want {
		t.Errorf("PaperSettings() = %+v, want %+v", paper, want)
	}
	lib := DefaultSettings()
	want.LearningRate, want.CG.StoppingRule = 1, StopParameterResidual
	if lib != want {
		t.Errorf("DefaultSettings() = %+v, want %+v", lib, want)
	}
	for name, s := range map[string]Settings{"PaperSettings": paper, "DefaultSettings": lib} {
		if err := s.Validate(); err != nil {
			t.Errorf("%s().Validate() = %v", name, err)
		}
	}
}
