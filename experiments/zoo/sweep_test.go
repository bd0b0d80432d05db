package zoo

import (
	"strings"
	"testing"

	"github.com/fgn-paper/fgn/experiments/report"
)

// TestSummary checks Summary on a runs table of two models: per optimizer the mean and worst
// accuracy over seeds in percent, the diverged runs (accuracy < DivergedAccuracy), and the worst
// gap to the best Adam of each model; defaults and Adam first, then the grid by decreasing gap.
func TestSummary(t *testing.T) {
	runs := report.NewTable(runColumns...)
	for _, r := range []struct {
		model, opt string
		acc        float64
	}{
		{"a", "Adam lr=0.01", 0.90}, {"a", "Adam lr=0.01", 0.92},
		{"b", "Adam lr=0.01", 0.80}, {"b", "Adam lr=0.01", 0.80},
		{"a", "Adam lr=0.1", 0.95}, {"a", "Adam lr=0.1", 0.95},
		{"b", "Adam lr=0.1", 0.70}, {"b", "Adam lr=0.1", 0.70},
		{"a", "FGN x", 0.95}, {"a", "FGN x", 0.10},
		{"b", "FGN x", 0.80}, {"b", "FGN x", 0.80},
		{"a", "FGN y", 0.96}, {"a", "FGN y", 0.96},
		{"b", "FGN y", 0.81}, {"b", "FGN y", 0.79},
		{"a", FGNDefault, 0.95}, {"a", FGNDefault, 0.95},
		{"b", FGNDefault, 0.80}, {"b", FGNDefault, 0.80},
	} {
		runs.Add(r.model, r.opt, 1, 10, false, r.acc, 0.1, 1.0, 1.0)
	}
	var out strings.Builder
	if err := Summary(runs, &out); err != nil {
		t.Fatal(err)
	}
	want := `| optimizer | a: mean (worst) % | b: mean (worst) % | diverged | worst gap to best Adam (points) |
|---|---|---|---|---|
| FGN() | 95.0 (95.0) | 80.0 (80.0) | 0/4 | +0.0 |
| Adam lr=0.01 | 91.0 (90.0) | 80.0 (80.0) | 0/4 | -4.0 |
| Adam lr=0.1 | 95.0 (95.0) | 70.0 (70.0) | 0/4 | -10.0 |
| FGN y | 96.0 (96.0) | 80.0 (79.0) | 0/4 | +0.0 |
| FGN x | 52.5 (10.0) | 80.0 (80.0) | 1/4 | -42.5 |
`
	if got := out.String(); got != want {
		t.Errorf("summary:\n%s\nwant:\n%s", got, want)
	}
}
