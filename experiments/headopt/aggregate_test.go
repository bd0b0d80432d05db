package headopt

import (
	"math"
	"strings"
	"testing"

	"github.com/fgn-paper/fgn/experiments/method"
	"github.com/fgn-paper/fgn/experiments/report"
	"github.com/fgn-paper/fgn/experiments/train"
	"github.com/fgn-paper/fgn/internal/mdtext"
)

const tol = 1e-12

func approx(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return math.Abs(a-b) <= tol*max(1, math.Abs(b))
}

func TestInterpolate(t *testing.T) {
	for _, tc := range []struct {
		name       string
		xs, ys, at []float64
		want       []float64
		err        string
	}{
		{"knots and midpoints", []float64{0, 1, 3}, []float64{0, 10, 30}, []float64{0, 0.5, 1, 2, 3}, []float64{0, 5, 10, 20, 30}, ""},
		{"before the first point holds the initial value", []float64{0.5, 1.5}, []float64{2, 4}, []float64{0, 0.25, 0.5, 1}, []float64{2, 2, 2, 3}, ""},
		{"equal times: the later value", []float64{0, 1, 1, 2}, []float64{0, 1, 5, 7}, []float64{1, 1.5}, []float64{5, 6}, ""},
		{"single point", []float64{0}, []float64{0.3}, []float64{0}, []float64{0.3}, ""},
		{"past the end", []float64{0, 1}, []float64{0, 1}, []float64{1.5}, nil, "past the trace's last time"},
		{"decreasing times", []float64{0, 2, 1}, []float64{0, 1, 2}, []float64{0}, nil, "times decrease"},
		{"length mismatch", []float64{0, 1}, []float64{0}, []float64{0}, nil, "interpolating 2 times and 1 values"},
	} {
		got, err := Interpolate(tc.xs, tc.ys, tc.at)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		for i := range tc.want {
			if !approx(got[i], tc.want[i]) {
				t.Errorf("%s: at t=%g got %.15g, want %g (tolerance %g relative)", tc.name, tc.at[i], got[i], tc.want[i], tol)
			}
		}
	}
}

func TestTimeToThreshold(t *testing.T) {
	grid := []float64{0, 1, 2, 3}
	ys := []float64{0.1, 0.3, 0.5, 0.45}
	for _, tc := range []struct{ thr, want float64 }{
		{0.05, 0},  // reached at the start
		{0.3, 1},   // exactly at a knot
		{0.4, 1.5}, // crossing inside (1, 2): 1 + (0.4-0.3)/(0.5-0.3)
		{0.5, 2},   // the maximum
		{0.51, math.NaN()},
	} {
		if got := TimeToThreshold(grid, ys, tc.thr); !approx(got, tc.want) {
			t.Errorf("threshold %g: got %g, want %g (tolerance %g)", tc.thr, got, tc.want, tol)
		}
	}
}

// pts makes a trace from (time, accuracy, CE) triples, one evaluation every 10 steps.
func pts(v ...[3]float64) []train.Point {
	out := make([]train.Point, len(v))
	for i, p := range v {
		out[i] = train.Point{Step: 10 * i, OptSeconds: p[0], EvalAccuracy: p[1], EvalLoss: p[2]}
	}
	return out
}

func TestAggregate(t *testing.T) {
	runs := []Run{
		{Method: method.Adam, Seed: 1, Points: pts([3]float64{0, 0.1, 3}, [3]float64{2, 0.5, 1})},
		{Method: method.Adam, Seed: 2, Points: pts([3]float64{0, 0.1, 3}, [3]float64{4, 0.5, 1})},
		{Method: method.FGN, Seed: 1, Points: pts([3]float64{0.5, 0.2, 2}, [3]float64{1, 0.6, 1}, [3]float64{3, 0.8, 0.5})},
	}
	h, err := Horizon(runs)
	if err != nil || h != 2 {
		t.Fatalf("Horizon = %g, %v; want 2 (the shortest run's final time)", h, err)
	}
	curves, horizon, err := Aggregate(runs, []method.Method{method.Adam, method.FGN}, 5) // grid 0, 0.5, 1, 1.5, 2
	if err != nil || horizon != 2 {
		t.Fatalf("Aggregate: horizon %g, %v", horizon, err)
	}
	adam, fgn := curves[0], curves[1]
	// Adam at t=1: seed 1 at 0.1+0.4·(1/2) = 0.3, seed 2 at 0.1+0.4·(1/4) = 0.2: mean 0.25, std 0.05.
	// At t=2: 0.5 and 0.3: mean 0.4, std 0.1. CE at t=2: 1 and 2: mean 1.5, std 0.5.
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"adam acc mean t=1", adam.AccMean[2], 0.25}, {"adam acc std t=1", adam.AccStd[2], 0.05},
		{"adam acc mean t=2", adam.AccMean[4], 0.4}, {"adam acc std t=2", adam.AccStd[4], 0.1},
		{"adam CE mean t=2", adam.CEMean[4], 1.5}, {"adam CE std t=2", adam.CEStd[4], 0.5},
		// FGN: 0.2 until 0.5 s (Gram time), 0.6 at 1 s, then 0.6 + 0.2·(t-1)/2: 0.7 at 2 s.
		{"fgn acc t=0", fgn.AccMean[0], 0.2}, {"fgn acc t=0.5", fgn.AccMean[1], 0.2},
		{"fgn acc t=1.5", fgn.AccMean[3], 0.65}, {"fgn acc t=2", fgn.AccMean[4], 0.7}, {"fgn std", fgn.AccStd[4], 0},
		// ms per step: Adam (2/10 + 4/10)/2 s = 300 ms; FGN 3/20 s = 150 ms.
		{"adam ms/step", adam.MsPerStep, 300}, {"fgn ms/step", fgn.MsPerStep, 150},
	} {
		if !approx(c.got, c.want) {
			t.Errorf("%s = %.15g, want %g (tolerance %g relative)", c.name, c.got, c.want, tol)
		}
	}

	// Each method's whole run: Adam to 2 s (its shortest seed), FGN to 3 s.
	full, err := FullCurves(runs, []method.Method{method.Adam, method.FGN}, 5)
	if err != nil {
		t.Fatal(err)
	}
	if end := full[1].Time[4]; end != 3 || !approx(full[1].AccMean[4], 0.8) || full[0].Time[4] != 2 {
		t.Errorf("full curves end at Adam %g s and FGN (closed-form Gram) %g s (accuracy %g), want 2 s and 3 s (0.8)", full[0].Time[4], end, full[1].AccMean[4])
	}

	// Table 1 from these curves: thresholds 30 % and 65 %. Adam's mean reaches 0.3 at the
	// crossing between 1 s (0.25) and 1.5 s (0.325): 1 + 0.5·(0.05/0.075) = 4/3 s; never 65 %.
	// FGN is at 0.2 at 0.5 s and 0.6 at 1 s, reaching 0.3 at 0.625 s, and 0.65 at exactly 1.5 s.
	// By step: Adam's mean is 0.1 at step 0 and 0.5 at step 10; FGN's 0.2, 0.6, 0.8 at steps
	// 0, 10, 20. Step times: Adam's intervals take 200 and 400 ms per step, FGN's 50 and 200.
	steps, err := StepCurves(runs, []method.Method{method.Adam, method.FGN})
	if err != nil {
		t.Fatal(err)
	}
	tab, err := SummaryTable(curves, steps, horizon, []float64{30, 65})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]float64{"time_to_30pct_s": {4.0 / 3, 0.625}, "time_to_65pct_s": {math.NaN(), 1.5},
		"acc_mean_pct": {40, 70}, "acc_std_pct": {10, 0}, "step_ms_q1": {250, 87.5}, "step_ms_median": {300, 125},
		"step_ms_q3": {350, 162.5}, "final_step": {10, 20}, "final_acc_mean_pct": {50, 80},
		"steps_to_30pct": {10, 10}, "steps_to_65pct": {math.NaN(), 20}}
	for col, w := range want {
		got, err := tab.Floats(col)
		if err != nil {
			t.Fatal(err)
		}
		for i := range w {
			if !approx(got[i], w[i]) {
				t.Errorf("table %s row %d = %.15g, want %g (tolerance %g relative)", col, i, got[i], w[i], tol)
			}
		}
	}
	md, err := Markdown(tab, "hand-made")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"| Adam | 40.00 ± 10.00 | 1.5000 ± 0.5000 | 300 (250–350) | 1.333 | – |", "| FGN (closed-form Gram) | 70.00 ± 0.00", "Acc. at 2 s",
		"| Adam | 10 | 50.00 ± 0.00 | 1.0000 ± 0.0000 | 10 | – |", "| FGN (closed-form Gram) | 20 | 80.00 ± 0.00 | 0.5000 ± 0.0000 | 10 | 20 |"} {
		if !strings.Contains(md, s) {
			t.Errorf("Markdown lacks %q:\n%s", s, md)
		}
	}
	tex, err := LaTeX(tab, "hand-made", "toy")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`\toprule`, `\midrule`, `\bottomrule`, `& Time to 65\%`, `$40.00 \pm 10.00$`, "& --", `$0.625$`, `\label{tab:headopt_toy}`} {
		if !strings.Contains(tex, s) {
			t.Errorf("LaTeX lacks %q:\n%s", s, tex)
		}
	}
	caption, err := Caption(tab, "hand-made")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"at the end of their runs the mean test accuracy is FGN (closed-form Gram) 80.00 % (step 20), Adam 50.00 % (step 10)",
		"65 % is reached by FGN (closed-form Gram) at step 20; not by Adam by the last step.", "30 % is reached by Adam and FGN (closed-form Gram) at step 10.",
		"at the 2 s horizon the mean test accuracy is FGN (closed-form Gram) 70.00 %, Adam 40.00 %", "Median step times: Adam 300 ms, FGN (closed-form Gram) 125 ms.",
		"30 % is reached by FGN (closed-form Gram) after 0.625 s, then Adam after 1.33 s."} {
		if !strings.Contains(caption, s) {
			t.Errorf("caption lacks %q:\n%s", s, caption)
		}
	}
	for name, text := range map[string]string{"Markdown table": md, "caption": caption} {
		for _, p := range mdtext.StrayEmphasis(text) {
			t.Errorf("%s: %s", name, p)
		}
	}
}

func TestAggregateErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		runs []Run
		want string
	}{
		{"no runs", nil, "no runs"},
		{"zero-length run", []Run{{Method: method.Adam, Points: pts([3]float64{0, 0.1, 1})}}, "want a finite time > 0"},
		{"missing method", []Run{{Method: method.Adam, Points: pts([3]float64{0, 0.1, 1}, [3]float64{1, 0.2, 1})}}, "no runs of method fgn"},
	} {
		if _, _, err := Aggregate(tc.runs, []method.Method{method.Adam, method.FGN}, 3); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
	if _, err := Markdown(report.NewTable("label"), "x"); err == nil {
		t.Errorf("Markdown of a table without horizon: no error")
	}
}

func TestCaptionSeeds(t *testing.T) {
	for _, tc := range []struct {
		seeds int
		want  string
	}{{1, "over 1 seed (± 1 std)"}, {3, "over 3 seeds (± 1 std)"}} {
		if got := caption("x", 2, tc.seeds); !strings.Contains(got, tc.want) {
			t.Errorf("caption with %d seeds lacks %q: %s", tc.seeds, tc.want, got)
		}
	}
}
