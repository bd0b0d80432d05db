package headopt

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fgn-paper/fgn/experiments/method"
	"github.com/fgn-paper/fgn/experiments/report"
	"github.com/fgn-paper/fgn/experiments/train"
	"github.com/fgn-paper/fgn/fgn/backend"
	"github.com/fgn-paper/fgn/internal/mdtext"
)

// ablationRun is an FGN run evaluated at steps 0, 10, 20 with the given accuracies (fractions)
// and mean CG iterations per step of each interval.
func ablationRun(seed uint64, acc [3]float64, cg [2]float64) Run {
	return Run{Method: method.FGN, Seed: seed, Points: []train.Point{
		{Step: 0, EvalAccuracy: acc[0], EvalLoss: 2},
		{Step: 10, EvalAccuracy: acc[1], EvalLoss: 1.5, CGIterations: cg[0], OptSeconds: 1},
		{Step: 20, EvalAccuracy: acc[2], EvalLoss: 1, CGIterations: cg[1], OptSeconds: 2},
	}}
}

// TestAblationTable checks the ablation's table and caption against hand-computed values at two
// caps: the per-seed and mean accuracy differences, the step-weighted mean CG iterations, and the
// statements whether the rules stop CG differently and whether the curves differ.
func TestAblationTable(t *testing.T) {
	paper := []Run{ablationRun(1, [3]float64{0.1, 0.3, 0.5}, [2]float64{1, 1}), ablationRun(2, [3]float64{0.1, 0.2, 0.4}, [2]float64{1, 3})}
	// At the second cap the rules stop differently in the second interval only.
	raisedA := []Run{ablationRun(1, [3]float64{0.1, 0.3, 0.5}, [2]float64{6, 7}), ablationRun(2, [3]float64{0.1, 0.2, 0.4}, [2]float64{6, 9})}
	raisedB := []Run{ablationRun(1, [3]float64{0.1, 0.3, 0.5}, [2]float64{6, 8}), ablationRun(2, [3]float64{0.1, 0.2, 0.4}, [2]float64{6, 9})}
	raisedCaption := "(c, d) At most 8 CG iterations: the rules stop CG after different mean numbers of iterations in 1 of the 2 intervals between evaluations " +
		"(mean CG iterations per step over all steps and seeds: " + RuleLabel(StoppingRules[0]) + " 7, " + RuleLabel(StoppingRules[1]) + " 7.25). " +
		"The accuracy curves do not differ"
	for _, tc := range []struct {
		name     string
		other    []Run
		diff     []float64 // acc_max_abs_seed_diff_pct per step, first cap
		caption  []string
		meanCG   [2]float64 // over all steps and seeds, per rule, first cap
		errorHas string
	}{
		{"identical", paper, []float64{0, 0, 0},
			[]string{"(a, b) At most 5 CG iterations: the rules stop CG after the same mean number of iterations in each of the 2 intervals between evaluations",
				"The accuracy curves do not differ: every seed has the same test accuracy under both rules at each of the 3 evaluation steps.", raisedCaption},
			[2]float64{1.5, 1.5}, ""},
		{"one seed differs", []Run{ablationRun(1, [3]float64{0.1, 0.35, 0.5}, [2]float64{5, 5}), ablationRun(2, [3]float64{0.1, 0.2, 0.38}, [2]float64{5, 4})},
			[]float64{0, 5, 2},
			[]string{"in 2 of the 2 intervals", "The accuracy curves differ: at matched evaluation steps the mean test accuracies differ by at most 2.5 percentage points (step 10), and one seed's accuracy under the two rules by at most 5 points (step 10).", raisedCaption},
			[2]float64{1.5, 4.75}, ""},
		{"seeds out of order", []Run{paper[1], paper[0]}, nil, nil, [2]float64{}, "is seed 1"},
		{"a rule without runs", nil, nil, nil, [2]float64{}, "no runs of method fgn"},
	} {
		tab, err := AblationTable([]int{5, 8}, [][][]Run{{paper, tc.other}, {raisedA, raisedB}}, "toy")
		if tc.errorHas != "" {
			if err == nil || !strings.Contains(err.Error(), tc.errorHas) {
				t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.errorHas)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		path := filepath.Join(t.TempDir(), "ablation.csv")
		if err := tab.Write(path); err != nil {
			t.Fatal(err)
		}
		back, err := report.Read(path)
		if err != nil {
			t.Fatal(err)
		}
		ds, err := readAblation(back)
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) != 2 || ds[0].cap != 5 || ds[1].cap != 8 || len(ds[0].steps) != 3 || len(ds[1].steps) != 3 {
			t.Fatalf("%s: the table read back has %d caps, want 5 and 8 with 3 steps each", tc.name, len(ds))
		}
		for k := range tc.diff {
			if !approx(ds[0].diff[k], tc.diff[k]) {
				t.Errorf("%s: step %d: per-seed difference %g, want %g (tolerance %g)", tc.name, k, ds[0].diff[k], tc.diff[k], tol)
			}
		}
		for i := range StoppingRules {
			if got := ds[0].meanCGPerStep(i); !approx(got, tc.meanCG[i]) {
				t.Errorf("%s: rule %s: mean CG iterations per step %g, want %g (tolerance %g)", tc.name, StoppingRules[i], got, tc.meanCG[i], tol)
			}
		}
		text, err := AblationCaption(back, "toy")
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range tc.caption {
			if !strings.Contains(text, want) {
				t.Errorf("%s: caption lacks %q:\n%s", tc.name, want, text)
			}
		}
		for _, p := range mdtext.StrayEmphasis(text) {
			t.Errorf("%s: caption: %s", tc.name, p)
		}
		for _, r := range StoppingRules {
			if !strings.Contains(text, RuleLabel(r)) {
				t.Errorf("%s: caption does not name %q:\n%s", tc.name, RuleLabel(r), text)
			}
		}
	}
}

// TestMakeAblation runs the ablation on the tiny stand-in and checks its outputs exist, that
// each rule's traces record that rule, and that a second call reads every run back.
func TestMakeAblation(t *testing.T) {
	be, err := backend.New()
	if err != nil {
		t.Fatal(err)
	}
	p, d := tiny(t)
	out := t.TempDir()
	var log strings.Builder
	paths, err := MakeAblation(be, AblationConfig{Profile: p, Out: out, Command: "test", Log: &log}, d)
	if err != nil {
		t.Fatal(err)
	}
	files := AblationFilesFor(out, d.Tag())
	for _, f := range []string{files.Steps, files.Caption, files.Figure + ".png", files.Figure + ".svg", files.Figure + ".pdf"} {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 {
			t.Errorf("output %s missing or empty (%v)", f, err)
		}
	}
	if len(paths) != 5 {
		t.Errorf("MakeAblation returned %d paths, want 5: %v", len(paths), paths)
	}
	caps := AblationCaps(p)
	for _, cap := range caps {
		for _, r := range StoppingRules {
			tab, err := report.Read(TracePath(filepath.Join(files.TracesDir, fmt.Sprintf("cg%d", cap), r.String()), method.FGN, 1))
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := tab.Lookup("cg_stopping_rule"); got != r.String() {
				t.Errorf("trace of rule %s records cg_stopping_rule %q", r, got)
			}
			if got, _ := tab.Lookup("cg_max_iterations"); got != fmt.Sprint(cap) {
				t.Errorf("trace at cap %d records cg_max_iterations %q", cap, got)
			}
		}
	}
	log.Reset()
	if _, err := MakeAblation(be, AblationConfig{Profile: p, Out: out, Command: "test", Log: &log}, d); err != nil {
		t.Fatal(err)
	}
	if n, want := strings.Count(log.String(), "read back"), len(caps)*len(StoppingRules)*p.Seeds; n != want {
		t.Errorf("second ablation read back %d runs, want %d:\n%s", n, want, log.String())
	}
}
