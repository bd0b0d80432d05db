package method

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/fgn-paper/fgn/fgn"
)

// TestPaper checks method.Paper against the constants of the paper's sec. 5 and app. F.2, written
// out here, and GoMLX's optimizer.Adam defaults (β₁ = 0.9, β₂ = 0.999, ε = 10⁻⁷).
func TestPaper(t *testing.T) {
	gn := func(rule, op string, warm bool) Hyper {
		return Hyper{GN: fgn.Settings{LearningRate: 0.1, Damping: 1, RowOperator: op, WarmStart: warm,
			CG: fgn.CGSettings{MaxIterations: 5, Tolerance: 1e-5, StoppingRule: rule}}}
	}
	for _, tc := range []struct {
		m    Method
		want Hyper
	}{
		{Adam, Hyper{Adam: AdamSettings{LearningRate: 3e-4, Beta1: 0.9, Beta2: 0.999, Epsilon: 1e-7}}},
		{SGN, gn(fgn.StopWhitenedRowResidual, fgn.ClosedFormGram, true)},
		{FGN, gn(fgn.StopWhitenedRowResidual, fgn.ClosedFormGram, false)},
		{FGNMatrixFree, gn(fgn.StopWhitenedRowResidual, fgn.MatrixFree, false)},
	} {
		got := Paper(tc.m)
		if got != tc.want {
			t.Errorf("Paper(%s) = %+v, want %+v", tc.m, got, tc.want)
		}
		if err := got.Validate(tc.m); err != nil {
			t.Errorf("Paper(%s).Validate: %v", tc.m, err)
		}
		if lr, want := got.LearningRate(tc.m), map[bool]float64{true: 3e-4, false: 0.1}[tc.m == Adam]; lr != want {
			t.Errorf("Paper(%s).LearningRate = %g, want %g", tc.m, lr, want)
		}
	}
}

// TestAdamSettingsValidate checks that each invalid Adam setting is reported by name.
func TestAdamSettingsValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*AdamSettings)
		want string // substring of the error; "" for none
	}{
		{"GoMLX's defaults", func(*AdamSettings) {}, ""},
		{"zero β₁", func(a *AdamSettings) { a.Beta1 = 0 }, ""},
		{"zero learning rate", func(a *AdamSettings) { a.LearningRate = 0 }, "learning rate α"},
		{"infinite learning rate", func(a *AdamSettings) { a.LearningRate = math.Inf(1) }, "learning rate α"},
		{"NaN learning rate", func(a *AdamSettings) { a.LearningRate = math.NaN() }, "learning rate α"},
		{"β₁ = 1", func(a *AdamSettings) { a.Beta1 = 1 }, "β₁"},
		{"negative β₂", func(a *AdamSettings) { a.Beta2 = -0.1 }, "β₂"},
		{"β₁² = β₂", func(a *AdamSettings) { a.Beta1, a.Beta2 = 0.5, 0.25 }, "β₁² < β₂"},
		{"zero ε", func(a *AdamSettings) { a.Epsilon = 0 }, "ε"},
	} {
		a := GoMLXAdam(1e-3)
		tc.edit(&a)
		err := a.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %+v: unexpected error %v", tc.name, a, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %+v: error %v, want one naming %q", tc.name, a, err, tc.want)
		}
	}
}

// TestHyperParts checks that each method validates and writes only its own part of Hyper.
func TestHyperParts(t *testing.T) {
	for _, tc := range []struct {
		m       Method
		key     string // the JSON key of m's part
		missing string // the JSON key m's part leaves out
	}{
		{Adam, `"adam"`, `"gn"`},
		{FGN, `"gn"`, `"adam"`},
	} {
		h := Paper(tc.m)
		b, err := json.Marshal(h)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), tc.key) || strings.Contains(string(b), tc.missing) {
			t.Errorf("%s: JSON %s, want %s and no %s", tc.m, b, tc.key, tc.missing)
		}
		var back Hyper
		if err := json.Unmarshal(b, &back); err != nil || back != h {
			t.Errorf("%s: JSON %s read back as %+v (error %v), want %+v", tc.m, b, back, err, h)
		}
	}
	if err := (Hyper{GN: fgn.PaperSettings()}).Validate(Adam); err == nil {
		t.Errorf("Adam with only SGN/FGN settings validated, want an error naming the learning rate")
	}
	if err := (Hyper{Adam: GoMLXAdam(1e-3)}).Validate(FGN); err == nil {
		t.Errorf("FGN with only Adam settings validated, want an error naming the learning rate")
	}
}
