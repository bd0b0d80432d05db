package train

import (
	"math"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fgn-paper/fgn/experiments/method"
	"github.com/fgn-paper/fgn/experiments/report"
	"github.com/fgn-paper/fgn/features"
	"github.com/fgn-paper/fgn/fgn"
	"github.com/fgn-paper/fgn/fgn/backend"
)

var testBackend = backend.MustNew()

func TestStaticBatches(t *testing.T) {
	for _, tc := range []struct{ n, size int }{{10, 3}, {12, 4}, {7, 7}, {5, 1}, {9, 8}} {
		batches, err := StaticBatches(tc.n, tc.size, 42)
		if err != nil {
			t.Fatal(err)
		}
		numBatches := (tc.n + tc.size - 1) / tc.size
		if len(batches) != numBatches {
			t.Errorf("n=%d size=%d: %d batches, want %d", tc.n, tc.size, len(batches), numBatches)
		}
		seen := make([]int, tc.n)
		var order []int
		for _, b := range batches {
			if len(b) != tc.size {
				t.Errorf("n=%d size=%d: batch of %d examples, want %d", tc.n, tc.size, len(b), tc.size)
			}
			for _, i := range b {
				seen[i]++
				order = append(order, i)
			}
		}
		pad := numBatches*tc.size - tc.n
		for i, c := range seen {
			want := 1
			for _, first := range order[:pad] { // the padding repeats the first shuffled examples
				if first == i {
					want = 2
				}
			}
			if c != want {
				t.Errorf("n=%d size=%d: example %d appears %d times per epoch, want %d", tc.n, tc.size, i, c, want)
			}
		}
		if !reflect.DeepEqual(order[tc.n:], order[:pad]) {
			t.Errorf("n=%d size=%d: padding %v is not the wrap-around %v", tc.n, tc.size, order[tc.n:], order[:pad])
		}
		again, _ := StaticBatches(tc.n, tc.size, 42)
		if !reflect.DeepEqual(again, batches) {
			t.Errorf("n=%d size=%d: same seed gave different batches", tc.n, tc.size)
		}
	}
	a, _ := StaticBatches(50, 10, 1)
	b, _ := StaticBatches(50, 10, 2)
	if reflect.DeepEqual(a, b) {
		t.Error("seeds 1 and 2 gave the same shuffle")
	}
}

// problem returns a small synthetic train/eval pair.
func problem(t *testing.T, n, dim, classes int) (trainSet, evalSet *features.Set) {
	t.Helper()
	trainSet, err := features.GaussianMixture(3, 0, n, dim, classes, 0.6)
	if err != nil {
		t.Fatal(err)
	}
	evalSet, err = features.GaussianMixture(3, 1, n/2, dim, classes, 0.6)
	if err != nil {
		t.Fatal(err)
	}
	return trainSet, evalSet
}

// TestRunDeterministicAndLearns runs every method on an affine head and an MLP: the same seed gives
// bit-identical traces (apart from wall time) on the pure-Go backend, and training lowers the
// training loss.
func TestRunDeterministicAndLearns(t *testing.T) {
	trainSet, evalSet := problem(t, 120, 6, 4)
	for _, m := range []Model{{}, {Hidden: 5}} {
		for _, meth := range method.Methods {
			if meth == method.FGN && m.Hidden > 0 {
				continue // the closed-form Gram needs an affine head (TestRunErrors)
			}
			cfg := Config{Method: meth, Hyper: method.Paper(meth), Model: m, BatchSize: 32, Epochs: 3, EvalEvery: 5, Seed: 7}
			if meth == method.Adam {
				cfg.Hyper.Adam.LearningRate = 0.05
			}
			runOnce := func() []Point {
				tr, err := Run(testBackend, cfg, trainSet, evalSet)
				if err != nil {
					t.Fatalf("%s %s: %v", meth, m, err)
				}
				pts := append([]Point(nil), tr.Points...)
				for i := range pts {
					pts[i].OptSeconds = 0
				}
				return pts
			}
			a, b := runOnce(), runOnce()
			if !samePoints(a, b) {
				t.Errorf("%s %s: same seed gave different traces:\n%+v\n%+v", meth, m, a, b)
			}
			// 4 batches × 3 epochs = 12 steps: points at 0, 5, 10, 12.
			if steps := []int{a[0].Step, a[1].Step, a[2].Step, a[3].Step}; len(a) != 4 || !reflect.DeepEqual(steps, []int{0, 5, 10, 12}) {
				t.Errorf("%s %s: evaluation steps %v, want [0 5 10 12]", meth, m, steps)
			}
			first, last := a[0], a[len(a)-1]
			if !(last.TrainLoss < first.TrainLoss-0.05) {
				t.Errorf("%s %s: training loss %.4f → %.4f, want a decrease of at least 0.05", meth, m, first.TrainLoss, last.TrainLoss)
			}
			t.Logf("%s %s: train loss %.4f → %.4f, eval accuracy %.3f → %.3f, mean CG its %.1f",
				meth, m, first.TrainLoss, last.TrainLoss, first.EvalAccuracy, last.EvalAccuracy, last.CGIterations)
		}
	}
}

// samePoints compares traces bit for bit, NaN equal to NaN.
func samePoints(a, b []Point) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		va, vb := reflect.ValueOf(a[i]), reflect.ValueOf(b[i])
		for k := range va.NumField() {
			x, y := va.Field(k), vb.Field(k)
			if x.Kind() == reflect.Float64 {
				if math.Float64bits(x.Float()) != math.Float64bits(y.Float()) {
					return false
				}
			} else if x.Int() != y.Int() {
				return false
			}
		}
	}
	return true
}

// TestWallTimeExcludesEvaluation makes evaluation slow and checks the optimisation time does
// not see it.
func TestWallTimeExcludesEvaluation(t *testing.T) {
	trainSet, evalSet := problem(t, 64, 4, 3)
	const pause = 150 * time.Millisecond
	cfg := Config{Method: method.FGN, Hyper: method.Paper(method.FGN), BatchSize: 16, Epochs: 2, EvalEvery: 1, Seed: 1, beforeEval: func() { time.Sleep(pause) }}
	start := time.Now()
	tr, err := Run(testBackend, cfg, trainSet, evalSet)
	if err != nil {
		t.Fatal(err)
	}
	wall := time.Since(start)
	opt := tr.Points[len(tr.Points)-1].OptSeconds
	if evals := len(tr.Points); wall < time.Duration(evals)*pause || opt >= pause.Seconds() {
		t.Errorf("%d evaluations paused %v each: wall %v, reported optimisation time %.3fs; want the pauses outside it",
			evals, pause, wall, opt)
	}
	for i := 1; i < len(tr.Points); i++ {
		if tr.Points[i].OptSeconds < tr.Points[i-1].OptSeconds {
			t.Errorf("optimisation time decreases at point %d", i)
		}
	}
}

func TestRunErrors(t *testing.T) {
	trainSet, evalSet := problem(t, 40, 3, 3)
	nan := &features.Set{X: append([]float32(nil), evalSet.X...), Y: evalSet.Y, N: evalSet.N, D: evalSet.D}
	nan.X[4] = float32(math.NaN())
	wide := &features.Set{X: make([]float32, 2*4), Y: []int32{0, 1}, N: 2, D: 4}
	ok := Config{Method: method.FGN, Hyper: method.Paper(method.FGN), BatchSize: 8, Epochs: 1, EvalEvery: 1}
	for _, tc := range []struct {
		name        string
		mutate      func(*Config)
		train, eval *features.Set
		want        string
	}{
		{"unknown method", func(c *Config) { c.Method = "newton" }, trainSet, evalSet, `unknown method "newton"`},
		{"batch too large", func(c *Config) { c.BatchSize = 41 }, trainSet, evalSet, "batch size 41 is larger than the 40 training examples"},
		{"no epochs", func(c *Config) { c.Epochs = 0 }, trainSet, evalSet, "epochs must be ≥ 1"},
		{"bad eval interval", func(c *Config) { c.EvalEvery = 0 }, trainSet, evalSet, "evaluation interval"},
		{"closed-form Gram on an MLP", func(c *Config) { c.Model.Hidden = 3 }, trainSet, evalSet, "use fgn-matrix-free"},
		{"negative step", func(c *Config) { c.Hyper.GN.LearningRate = -1 }, trainSet, evalSet, "learning rate α"},
		{"bad damping", func(c *Config) { c.Hyper.GN.Damping = math.Inf(1) }, trainSet, evalSet, "damping λ"},
		{"damping outside the LM bounds", func(c *Config) {
			c.Hyper.GN.Damping, c.DampingPolicy = 1e7, fgn.LevenbergMarquardt()
		}, trainSet, evalSet, "outside the Levenberg-Marquardt bounds"},
		{"label out of range", func(c *Config) { c.Classes = 2 }, trainSet, evalSet, "outside [0, 2)"},
		{"NaN feature", func(c *Config) {}, trainSet, nan, "must be finite"},
		{"dimension mismatch", func(c *Config) {}, trainSet, wide, "dimension 3, evaluation features 4"},
	} {
		cfg := ok
		tc.mutate(&cfg)
		_, err := Run(testBackend, cfg, tc.train, tc.eval)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

func TestTraceTableRoundTrip(t *testing.T) {
	trainSet, evalSet := problem(t, 40, 3, 3)
	tr, err := Run(testBackend, Config{Method: method.SGN, Hyper: method.Paper(method.SGN), BatchSize: 10, Epochs: 1, EvalEvery: 2, Seed: 3,
		DampingPolicy: fgn.LevenbergMarquardt()}, trainSet, evalSet)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "trace.csv")
	if err := tr.Table().Write(path); err != nil {
		t.Fatal(err)
	}
	tab, err := report.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	pts, err := PointsFromTable(tab)
	if err != nil {
		t.Fatal(err)
	}
	// NaN ≠ NaN: compare the formatted rows instead.
	if !reflect.DeepEqual(tab.Rows, tr.Table().Rows) || len(pts) != len(tr.Points) || pts[2].TrainLoss != tr.Points[2].TrainLoss ||
		pts[2].Rho != tr.Points[2].Rho || pts[2].NextDamping != tr.Points[2].NextDamping || pts[2].StepAccepted != 1 {
		t.Errorf("trace did not round-trip: %+v vs %+v", pts, tr.Points)
	}
	if m, _ := tab.Lookup("method"); m != "sgn" {
		t.Errorf("method comment %q, want sgn", m)
	}
	if d, _ := tab.Lookup("damping_policy"); d != "lm" {
		t.Errorf("damping_policy comment %q, want lm", d)
	}
	// float32 values are written in their shortest float32 form, not widened (0.98 rather than
	// its widened float64 form).
	col, err := tab.Column("eval_accuracy")
	if err != nil {
		t.Fatal(err)
	}
	for i, row := range tab.Rows {
		if want := strconv.FormatFloat(tr.Points[i].EvalAccuracy, 'g', -1, 32); row[col] != want {
			t.Errorf("row %d eval_accuracy %q, want the float32 form %q", i, row[col], want)
		}
	}
}

// TestBadBatchNeverCorruptsTheModel trains every method on a split holding one example whose
// features are finite but so large (1e30) that a step through its batch can overflow float32
// (Adam's second moment, FGN's feature Gram): such a step is skipped and counted, the model stays
// finite, and training on the other batches goes on.
func TestBadBatchNeverCorruptsTheModel(t *testing.T) {
	trainSet, evalSet := problem(t, 120, 6, 4)
	bad := *trainSet
	bad.X = append([]float32(nil), trainSet.X...)
	for k := range bad.D {
		bad.X[17*bad.D+k] = 1e30
	}
	const epochs = 3
	totalSkipped := 0
	for _, meth := range method.Methods {
		cfg := Config{Method: meth, Hyper: method.Paper(meth), BatchSize: 32, Epochs: epochs, EvalEvery: 4, Seed: 7}
		if meth == method.Adam {
			cfg.Hyper.Adam.LearningRate = 0.05
		}
		tr, err := Run(testBackend, cfg, &bad, evalSet)
		if err != nil {
			t.Fatalf("%s: %v", meth, err)
		}
		first, last := tr.Points[0], tr.Points[len(tr.Points)-1]
		t.Logf("%s: %d of %d steps skipped, eval loss %.4f → %.4f", meth, last.SkippedSteps, last.Step,
			first.EvalLoss, last.EvalLoss)
		if last.SkippedSteps > epochs {
			t.Errorf("%s: %d of %d steps skipped, want at most the bad batch's %d", meth, last.SkippedSteps, last.Step, epochs)
		}
		totalSkipped += last.SkippedSteps
		if !(last.EvalLoss < first.EvalLoss) {
			t.Errorf("%s: held-out loss %.4f → %.4f: want finite and decreasing", meth, first.EvalLoss, last.EvalLoss)
		}
	}
	if totalSkipped == 0 {
		t.Errorf("no method skipped a step: the test batch no longer overflows, make it harder")
	}
}

// TestDampingTelemetry runs SGN and FGN with constant and Levenberg-Marquardt damping on an
// affine head and an MLP and checks the damping columns of the trace: constant damping reports
// λ = 1 throughout, takes every finite step and measures no ρ; Levenberg-Marquardt without its
// noise floor, started from a small λ with a large step size, reports finite decreases and ρ,
// changes λ and rejects some steps. (An LM step never increases its own batch's loss, which package fgn tests; the loss of
// the whole split may rise, as here for SGN on the MLP, so only constant damping is required to
// lower it.)
func TestDampingTelemetry(t *testing.T) {
	trainSet, evalSet := problem(t, 120, 6, 4)
	for _, m := range []Model{{}, {Hidden: 5}} {
		for _, meth := range []method.Method{method.SGN, method.FGN, method.FGNMatrixFree} {
			if meth == method.FGN && m.Hidden > 0 {
				continue // the closed-form Gram needs an affine head
			}
			lmNoFloor := fgn.LevenbergMarquardt()
			lmNoFloor.NoiseFloor = 0 // its noise floor would keep these large steps from overshooting
			for _, policy := range []fgn.DampingPolicy{fgn.ConstantDamping{}, lmNoFloor} {
				cfg := Config{Method: meth, Hyper: method.Paper(meth), Model: m, BatchSize: 32, Epochs: 4, EvalEvery: 4, Seed: 5,
					DampingPolicy: policy}
				lm := policy.Adaptive()
				if lm {
					cfg.Hyper.GN.LearningRate, cfg.Hyper.GN.Damping = 1.5, 1e-2
				}
				tr, err := Run(testBackend, cfg, trainSet, evalSet)
				if err != nil {
					t.Fatalf("%s %s %s: %v", meth, m, policy, err)
				}
				first, last := tr.Points[0], tr.Points[len(tr.Points)-1]
				lambdas := map[float64]bool{}
				for _, p := range tr.Points[1:] {
					lambdas[p.Damping] = true
					if !lm && (p.Damping != 1 || p.NextDamping != 1 || !math.IsNaN(p.Rho) || !math.IsNaN(p.PredictedDecrease) ||
						p.StepAccepted != 1 || p.RejectedSteps != 0) {
						t.Errorf("%s %s constant damping: point %+v", meth, m, p)
					}
					if lm && (!(p.PredictedDecrease > -math.MaxFloat64) || math.IsNaN(p.ActualDecrease) || !(p.Damping > 0)) {
						t.Errorf("%s %s LM: point %+v has non-finite telemetry", meth, m, p)
					}
				}
				if lm && (len(lambdas) < 2 || last.RejectedSteps == 0) {
					t.Errorf("%s %s LM: λ took the values %v and %d steps were rejected; want λ to adapt after rejected steps",
						meth, m, lambdas, last.RejectedSteps)
				}
				if !lm && !(last.TrainLoss < first.TrainLoss) {
					t.Errorf("%s %s %s: training loss %.4f → %.4f", meth, m, policy, first.TrainLoss, last.TrainLoss)
				}
				t.Logf("%s %s %s: train loss %.4f → %.4f, λ %g → %g, %d rejected of %d steps", meth, m, policy,
					first.TrainLoss, last.TrainLoss, cfg.Hyper.GN.Damping, last.NextDamping,
					last.RejectedSteps, last.Step)
			}
		}
	}
}
