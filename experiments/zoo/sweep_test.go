package zoo

import (
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/fgn-paper/fgn/experiments/report"
)

// synthetic returns a run whose held-out accuracy after epoch k is accs[k], after 10 steps and
// one second per epoch, with λ halving each epoch from 1 (Adam's runs: NaN).
func synthetic(model, opt string, seed uint64, accs ...float64) *Run {
	r := &Run{Model: model, Task: "t", Optimizer: opt, Seed: seed, Batch: 8, CompileSeconds: 0.5}
	for k, a := range accs {
		e := Epoch{Epoch: k, Steps: 10 * k, Seconds: float64(k), TrainLoss: 2 - a, HeldOutLoss: 2 - a,
			HeldOutAccuracy: a, Damping: math.NaN(), MeanRho: math.NaN(), MinDamping: math.NaN(), MeanStepLength: math.NaN()}
		if !strings.HasPrefix(opt, adamPrefix) && k > 0 {
			e.Damping, e.MinDamping, e.MeanRho, e.Rejected = math.Pow(0.5, float64(k)), math.Pow(0.5, float64(k)), 0.8, 1
		}
		if strings.HasPrefix(opt, "FGN") && k > 0 {
			e.MeanStepLength = 0.85
		}
		r.Epochs = append(r.Epochs, e)
	}
	return r
}

// TestRunsTableRoundTrip writes runs (a failed one, a diverged one, NaN telemetry) to the runs
// table's CSV and reads them back equal.
func TestRunsTableRoundTrip(t *testing.T) {
	runs := []*Run{
		synthetic("a", FGNDefault, 1, 0.1, 0.5, 0.9),
		synthetic("a", "Adam lr=0.01", 2, 0.1, 0.6),
		{Model: "b", Task: "t", Optimizer: SGNDefault, Seed: 1, Batch: 4, Failed: "fgn: cannot differentiate op X"},
	}
	runs[1].Diverged = true
	path := filepath.Join(t.TempDir(), "runs.csv")
	if err := Table(runs).Write(path); err != nil {
		t.Fatal(err)
	}
	tab, err := report.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := RunsFromTable(tab)
	if err != nil {
		t.Fatal(err)
	}
	// NaN ≠ NaN: compare the tables the runs give.
	if want := Table(runs); !reflect.DeepEqual(Table(got).Rows, want.Rows) || len(got) != len(runs) {
		t.Errorf("read back %d runs:\n%v\nwant %d:\n%v", len(got), Table(got).Rows, len(runs), want.Rows)
	}
}

// TestRunsTableWithoutOptionalColumns reads a runs table written before the optional columns
// (optionalRunColumns): its runs read NaN there and equal the others elsewhere, and
// CompleteRunsTable gives it every column, NaN in the optional ones.
func TestRunsTableWithoutOptionalColumns(t *testing.T) {
	runs := []*Run{synthetic("a", FGNDefault, 1, 0.1, 0.5), synthetic("a", "Adam lr=0.01", 2, 0.1, 0.6)}
	old := Table(runs)
	keep := len(old.Header) - len(optionalRunColumns)
	if !slices.Equal(old.Header[keep:], optionalRunColumns) {
		t.Fatalf("the optional columns %v are not runColumns' last: %v", optionalRunColumns, old.Header)
	}
	old.Header = old.Header[:keep]
	for k := range old.Rows {
		old.Rows[k] = old.Rows[k][:keep]
	}
	got, err := RunsFromTable(old)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		for k := range r.Epochs {
			r.Epochs[k].MeanStepLength = math.NaN()
		}
	}
	if want := Table(runs); !reflect.DeepEqual(Table(got).Rows, want.Rows) {
		t.Errorf("read back:\n%v\nwant:\n%v", Table(got).Rows, want.Rows)
	}
	CompleteRunsTable(old)
	if want := Table(runs); !slices.Equal(old.Header, runColumns) || !reflect.DeepEqual(old.Rows, want.Rows) {
		t.Errorf("completed: header %v rows\n%v\nwant %v and\n%v", old.Header, old.Rows, runColumns, want.Rows)
	}
}

// TestSummary checks the summary of a sweep of two models: tuned Adam is each model's Adam rate
// of the best mean final accuracy; the time to accuracy is the median over seeds of the first
// epoch's seconds at tuned Adam's final mean less a point, "not reached" when most seeds never
// get there; the runs that went wrong are listed with why.
func TestSummary(t *testing.T) {
	runs := []*Run{
		// Model a: Adam lr=0.1 ends at 0.90 on average (0.92, 0.88), lr=0.01 at 0.80: tuned is 0.1,
		// the target 0.89. FGN() reaches it after 2 s on seed 1, 1 s on seed 2, never on seed 3:
		// median 2 s; tuned Adam after 2 s on seed 1, never on seed 2.
		synthetic("a", "Adam lr=0.01", 1, 0.1, 0.8), synthetic("a", "Adam lr=0.01", 2, 0.1, 0.8),
		synthetic("a", "Adam lr=0.1", 1, 0.1, 0.5, 0.92), synthetic("a", "Adam lr=0.1", 2, 0.1, 0.5, 0.88),
		synthetic("a", FGNDefault, 1, 0.1, 0.5, 0.95), synthetic("a", FGNDefault, 2, 0.1, 0.9, 0.9),
		synthetic("a", FGNDefault, 3, 0.1, 0.5, 0.6),
		// Model b: only lr=0.01 (0.7); FGN() never reaches 0.69 on two seeds of three.
		synthetic("b", "Adam lr=0.01", 1, 0.1, 0.7),
		synthetic("b", FGNDefault, 1, 0.1, 0.2), synthetic("b", FGNDefault, 2, 0.1, 0.75),
		synthetic("b", FGNDefault, 3, 0.1, 0.3),
	}
	runs[len(runs)-1].Diverged = true
	runs[len(runs)-1].Epochs[1].TrainLoss = 3                                                        // above its start: a warning
	runs[6].Epochs[2].MinDamping = 1e-12                                                             // at the floor
	runs = append(runs, &Run{Model: "b", Task: "t", Optimizer: SGNDefault, Seed: 1, Failed: "op X"}) // no trained runs
	if got := TunedAdam(runs); !reflect.DeepEqual(got, map[string]string{"a": "Adam lr=0.1", "b": "Adam lr=0.01"}) {
		t.Errorf("TunedAdam = %v", got)
	}
	var out strings.Builder
	if err := Summary(runs, &out); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{
		"| FGN() | 81.7 (60.0) | 41.7 (20.0) |", // mean (worst) accuracy
		"| tuned Adam | 90.0 (88.0) | 70.0 (70.0) |",
		"| SGN() | – | – |", // failed: no trained run
		"tuned Adam: on each model, the learning rate of the best mean above among Adam lr=0.01, Adam lr=0.1: a 0.1, b 0.01.",
		"| optimizer | a: 89.0 % | b: 69.0 % |",          // targets
		"| FGN() | 2 s (2/3) | not reached (1/3) |",      // time to accuracy
		"| tuned Adam | not reached (1/2) | 1 s (1/1) |", // the median of 2 s and never
		"| FGN() | λ 0.25, ρ 0.80, τ 0.85, rejected 6, skipped 0 of 60 |",
		"- a, FGN(), seed 3: λ at its floor",
		"- b, FGN(), seed 3: diverged at step 10; the loss rose from 1.9 to 3 in 10 steps",
		"- b, SGN(), seed 1: failed: op X",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
}

// TestSelect checks the optimizer patterns and model lists of the sweep's command line.
func TestSelect(t *testing.T) {
	for _, tc := range []struct {
		patterns string
		want     []string
		err      string
	}{
		{"FGN()", []string{FGNDefault}, ""},
		{"SGN*,FGN()", []string{FGNDefault, SGNDefault, "SGN α=1 λ=0.1 lm", "SGN floor×0"}, ""},
		{"Adam*", []string{"Adam lr=0.001", "Adam lr=0.003", "Adam lr=0.01", "Adam lr=0.03"}, ""},
		{"Newton", nil, `no optimizer matches "Newton"`},
		{"[", nil, "syntax error in pattern"},
	} {
		got, err := SelectOptimizers(Candidates, tc.patterns)
		var names []string
		for _, o := range got {
			names = append(names, o.Name)
		}
		if tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) || tc.err == "" && (err != nil || !reflect.DeepEqual(names, tc.want)) {
			t.Errorf("SelectOptimizers(%q) = %q, %v; want %q, error containing %q", tc.patterns, names, err, tc.want, tc.err)
		}
	}
	if ms, err := SelectModels("transformer,relu-mlp"); err != nil || len(ms) != 2 || ms[0].Name != "relu-mlp" {
		t.Errorf("SelectModels: %v, %v; want relu-mlp and transformer in the zoo's order", ms, err)
	}
	if ms, err := SelectModels("kan-rational, linear"); err != nil || len(ms) != 2 || ms[0].Name != "linear" ||
		ms[1].Name != "kan-rational" || ms[1].Task != DigitsUnitRange {
		t.Errorf("SelectModels: %v, %v; want linear, then kan-rational of KANModels on the pixels in [−1, 1]", ms, err)
	}
	if _, err := SelectModels("resnet-50"); err == nil || !strings.Contains(err.Error(), `unknown model "resnet-50"`) {
		t.Errorf("SelectModels of an unknown model: %v", err)
	}
}

// TestSweepResumes sweeps the linear head with Adam over two seeds for one epoch, given a finished
// run of the first seed: that run is returned as it is, in its place, and only the second seed is
// trained (and reported).
func TestSweepResumes(t *testing.T) {
	m, err := SelectModels("linear")
	if err != nil {
		t.Fatal(err)
	}
	kept := &Run{Model: "linear", Optimizer: Adam(0.01).Name, Seed: 1, Epochs: []Epoch{{Epoch: 1, HeldOutAccuracy: 0.5}}}
	var trained []uint64
	runs, err := Sweep(testBackend, m, []Optimizer{Adam(0.01)}, []uint64{1, 2}, Config{Epochs: 1}, []*Run{kept},
		func(done, total int, r *Run) { trained = append(trained, r.Seed) })
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 || runs[0] != kept || runs[1].Seed != 2 || len(runs[1].Epochs) != 2 {
		t.Fatalf("runs %+v: want the kept run, then seed 2 trained (2 evaluations)", runs)
	}
	if !slices.Equal(trained, []uint64{2}) {
		t.Errorf("trained seeds %v, want [2]", trained)
	}
}
