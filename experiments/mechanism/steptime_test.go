package mechanism

import (
	"bytes"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/fgn-paper/fgn/experiments/method"
	"github.com/fgn-paper/fgn/experiments/report"
)

// tinyStepTime is the paper's panel (a) shrunk to test size.
func tinyStepTime(t *testing.T) StepTimeConfig {
	c := PaperStepTime()
	c.Profile = "test"
	c.Dim, c.Batch, c.Examples, c.Classes = 16, 8, 24, []int{2, 5}
	c.Warmup, c.Steps = 2, 3
	return c
}

// TestStepTime runs the panel (a) sweep end to end at tiny sizes, writes and reads back the
// CSV, and checks it is well formed.
func TestStepTime(t *testing.T) {
	c := tinyStepTime(t)
	var progress bytes.Buffer
	tab, samples, err := StepTime(testBackend, c, &progress)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "a.csv")
	if err := tab.Write(path); err != nil {
		t.Fatal(err)
	}
	back, err := report.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Rows) != len(c.Classes)*len(method.Methods) {
		t.Fatalf("%d rows, want %d", len(back.Rows), len(c.Classes)*len(method.Methods))
	}
	col := func(name string) []float64 {
		v, err := back.Floats(name)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	classes, steps := col("classes"), col("steps")
	minMs, q1, med, q3, maxMs, loss := col("min_ms"), col("q1_ms"), col("median_ms"), col("q3_ms"), col("max_ms"), col("last_loss")
	methodCol, _ := back.Column("method")
	for i, row := range back.Rows {
		if want := method.Methods[i%len(method.Methods)]; row[methodCol] != string(want) {
			t.Errorf("row %d: method %q, want %q", i, row[methodCol], want)
		}
		if classes[i] != float64(c.Classes[i/len(method.Methods)]) || steps[i] != float64(c.Steps) {
			t.Errorf("row %d: C=%g steps=%g", i, classes[i], steps[i])
		}
		if !(0 < minMs[i] && minMs[i] <= q1[i] && q1[i] <= med[i] && med[i] <= q3[i] && q3[i] <= maxMs[i]) {
			t.Errorf("row %d: times not ordered: min %g q1 %g median %g q3 %g max %g", i, minMs[i], q1[i], med[i], q3[i], maxMs[i])
		}
		// Labels are uniform: the loss stays near log C after a few small steps.
		if !(loss[i] > 0 && loss[i] < 3*math.Log(classes[i])+1) {
			t.Errorf("row %d (%s, C=%g): last loss %g", i, row[methodCol], classes[i], loss[i])
		}
	}
	for _, key := range []string{"panel", "parameters", "steps", "methods"} {
		if _, ok := back.Lookup(key); !ok {
			t.Errorf("CSV lacks the %q comment", key)
		}
	}
	if progress.Len() == 0 {
		t.Error("no progress output")
	}
	// The samples hold every timed step; their medians are the summary's.
	sc, sm, ms := samples.Rows, 0, []float64{}
	for i := range back.Rows {
		ms = ms[:0]
		for _, r := range sc {
			if r[0] == back.Rows[i][0] && r[1] == back.Rows[i][methodCol] {
				v, err := strconv.ParseFloat(r[3], 64)
				if err != nil {
					t.Fatal(err)
				}
				ms = append(ms, v)
				sm++
			}
		}
		if got := report.Quantiles(ms, 0.5)[0]; len(ms) != c.Steps || got != med[i] {
			t.Errorf("row %d: %d samples with median %g, want %d with median %g", i, len(ms), got, c.Steps, med[i])
		}
	}
	if sm != len(samples.Rows) {
		t.Errorf("%d samples, %d of them matching a summary row", len(samples.Rows), sm)
	}
}

func TestStepTimeErrors(t *testing.T) {
	for _, mutate := range []func(*StepTimeConfig){
		func(c *StepTimeConfig) { c.Examples = 20 }, // not a multiple of the batch
		func(c *StepTimeConfig) { c.Classes = []int{1} },
		func(c *StepTimeConfig) { c.Steps = 0 },
		func(c *StepTimeConfig) { c.Settings.Damping = 0 },
		func(c *StepTimeConfig) { c.Adam.LearningRate = 0 },
		func(c *StepTimeConfig) { c.Methods = []method.Method{"lbfgs"} },
	} {
		c := tinyStepTime(t)
		mutate(&c)
		if _, _, err := StepTime(testBackend, c, io.Discard); err == nil {
			t.Errorf("config %+v accepted", c)
		} else {
			t.Log(err)
		}
	}
}
