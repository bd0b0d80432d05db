package fgn

import (
	"fmt"
	"testing"

	. "github.com/gomlx/gomlx/core/graph"

	"github.com/fgn-paper/fgn/fgn/internal/gn"
)

// TestSettingsDefaults checks PaperSettings against the constants of the paper's Algorithm 1 and
// app. F.2, and that DefaultSettings differs from it in the step size (the library's α = 1), the
// stopping rule, the row operator (the cheaper one), CG's stop at the gradient's noise, the GGN's
// step length and the damping metric alone.
func TestSettingsDefaults(t *testing.T) {
	paper := PaperSettings()
	want := Settings{LearningRate: 0.1, Damping: 1, RowOperator: ClosedFormGram,
		CG: CGSettings{MaxIterations: 5, Tolerance: 1e-5, StoppingRule: StopWhitenedRowResidual}}
	if paper != want {
		t.Errorf("PaperSettings() = %+v, want %+v", paper, want)
	}
	lib := DefaultSettings()
	want.LearningRate, want.CG.StoppingRule, want.RowOperator = 1, StopParameterResidual, CheaperRowOperator
	want.CG.StopAtNoise, want.GGNStepLength, want.ScaledDamping = true, true, true
	if lib != want {
		t.Errorf("DefaultSettings() = %+v, want %+v", lib, want)
	}
	for name, s := range map[string]Settings{"PaperSettings": paper, "DefaultSettings": lib} {
		if err := s.Validate(); err != nil {
			t.Errorf("%s().Validate() = %v", name, err)
		}
	}
}

// TestRowOperatorChoice checks which row operator FGN takes on an affine head (b examples, d
// features, C classes, CG capped at N = 5) for each setting: CheaperRowOperator takes the
// matrix-free products on the MNIST linear model (b = 600, d = 784, C = 10: the Gram's
// b²(d + C + N + 2) = 2.9e8 multiply-adds against 2N·b·d·C = 4.7e7) unless the feature Gram is
// given (b²(C + N + 2) = 6.1e6), and the closed-form Gram on the paper's Cars196 head (b = 128,
// d = 2048, C = 196: 3.7e7 against 5.1e8) and on a GramLinearization that is not an AffineHead;
// ClosedFormGram and MatrixFree are kept as the user set them.
func TestRowOperatorChoice(t *testing.T) {
	g := NewGraph(testBackend, "shapes")
	heads := 0
	head := func(b, d, c int, featureGram bool) Linearization {
		heads++
		param := func(name string, dims ...int) *Node {
			return Parameter(g, fmt.Sprintf("%s%d", name, heads), shapesF32(dims...))
		}
		h := param("h", b, d)
		a := NewAffineHead(h, param("W", d, c), param("bias", c))
		if featureGram {
			a.FeatureGram = gn.FeatureGram(h)
		}
		return a
	}
	mnist, cars := head(600, 784, 10, false), head(128, 2048, 196, false)
	mnistGram := head(600, 784, 10, true)
	userGram := struct{ GramLinearization }{mnist.(GramLinearization)}
	for _, tc := range []struct {
		name   string
		lin    Linearization
		op     string
		closed bool
	}{
		{"MNIST linear", mnist, CheaperRowOperator, false},
		{"MNIST linear, feature Gram given", mnistGram, CheaperRowOperator, true},
		{"Cars196", cars, CheaperRowOperator, true},
		{"GramLinearization of the MNIST shapes", userGram, CheaperRowOperator, true},
		{"MNIST linear", mnist, ClosedFormGram, true},
		{"Cars196", cars, MatrixFree, false},
		{"autodiff", Linearize(cars.Logits(), cars.Params()), CheaperRowOperator, false},
	} {
		s := DefaultSettings()
		s.RowOperator = tc.op
		if _, closed := s.closedFormGram(tc.lin, false, false); closed != tc.closed {
			t.Errorf("%s, %v: closed-form Gram %v, want %v", tc.name, tc.op, closed, tc.closed)
		}
	}
}
