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

// TestFormat checks that floats are written in the shortest form that round-trips their dtype.
func TestFormat(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want string
	}{
		{float32(0.98), "0.98"},
		{float64(float32(0.98)), "0.9800000190734863"}, // a widened float32 is a different float64
		{0.98, "0.98"},
		{float32(1e-5), "1e-05"},
		{math.Pi, "3.141592653589793"},
		{float32(math.Pi), "3.1415927"},
		{float32(math.NaN()), "NaN"},
		{3, "3"},
		{"adam", "adam"},
	} {
		if got := Format(tc.v); got != tc.want {
			t.Errorf("Format(%T %v) = %q, want %q", tc.v, tc.v, got, tc.want)
		}
	}
}
