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
