package report

import (
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	tab := NewTable("method", "step", "loss")
	tab.Comment("backend", "go (pure Go)")
	tab.Comment("note", "a: b")
	tab.Add("FGN", 1, 0.1)
	tab.Add("Adam, β=0.9", 2, math.Pi)
	path := filepath.Join(t.TempDir(), "t.csv")
	if err := tab.Write(path); err != nil {
		t.Fatal(err)
	}
	back, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, tab) {
		t.Fatalf("read back %+v, want %+v", back, tab)
	}
	if v, _ := back.Lookup("note"); v != "a: b" {
		t.Errorf("comment note = %q, want %q", v, "a: b")
	}
	loss, err := back.Floats("loss")
	if err != nil || loss[1] != math.Pi {
		t.Errorf("Floats(loss) = %v, %v; want exact round trip of π", loss, err)
	}
	if _, err := back.Floats("nope"); err == nil || !strings.Contains(err.Error(), `no column "nope"`) {
		t.Errorf("missing column error = %v", err)
	}
}

func TestQuantiles(t *testing.T) {
	for _, tc := range []struct {
		name string
		xs   []float64
		ps   []float64
		want []float64
	}{
		{"five values", []float64{4, 1, 3, 2, 5}, []float64{0, 0.25, 0.5, 0.75, 1}, []float64{1, 2, 3, 4, 5}},
		{"median of two", []float64{1, 2}, []float64{0.5}, []float64{1.5}},
		{"quartiles of four", []float64{1, 2, 3, 4}, []float64{0.25, 0.75}, []float64{1.75, 3.25}},
	} {
		got := Quantiles(tc.xs, tc.ps...)
		for i := range tc.want {
			if e := math.Abs(got[i] - tc.want[i]); e > 0 {
				t.Errorf("%s: quantile %g = %g, want %g: error %g (tolerance 0)", tc.name, tc.ps[i], got[i], tc.want[i], e)
			}
		}
	}
}
