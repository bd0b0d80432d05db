package main

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fgn-paper/fgn/experiments/report"
	"github.com/fgn-paper/fgn/experiments/zoo"
	"github.com/fgn-paper/fgn/fgn/backend"
)

// TestReadTables concatenates two runs tables: the comments both share head the result, then one
// "source" per table with its own comments; rows keep their order; different columns are an error.
func TestReadTables(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, comments [][2]string, header []string, rows ...[]any) string {
		tab := report.NewTable(header...)
		tab.Comments = comments
		for _, r := range rows {
			tab.Add(r...)
		}
		path := filepath.Join(dir, name)
		if err := tab.Write(path); err != nil {
			t.Fatal(err)
		}
		return path
	}
	a := write("a.csv", [][2]string{{"device", "d"}, {"command", "one"}}, []string{"x", "y"}, []any{1, 2})
	b := write("b.csv", [][2]string{{"command", "two"}, {"device", "d"}, {"load", "3"}}, []string{"x", "y"}, []any{3, 4}, []any{5, 6})
	got, err := readTables([]string{a, b})
	if err != nil {
		t.Fatal(err)
	}
	wantComments := [][2]string{{"device", "d"}, {"source", a + " (1 rows): command one"},
		{"source", b + " (2 rows): command two; load 3"}}
	if !reflect.DeepEqual(got.Comments, wantComments) || !reflect.DeepEqual(got.Rows, [][]string{{"1", "2"}, {"3", "4"}, {"5", "6"}}) {
		t.Errorf("comments %q rows %q; want %q and the rows in order", got.Comments, got.Rows, wantComments)
	}
	c := write("c.csv", nil, []string{"x", "z"}, []any{1, 2})
	if _, err := readTables([]string{a, c}); err == nil {
		t.Errorf("tables with different columns: no error")
	}
}

// TestFinishedRuns reads back the runs of a table written on this build and budget, has none for
// a missing table, and refuses a table of another build or budget, naming the difference.
func TestFinishedRuns(t *testing.T) {
	be, err := backend.New()
	if err != nil {
		t.Fatal(err)
	}
	const profile = "each model's batch size, 1 epochs"
	dir := t.TempDir()
	write := func(name, profile string) string {
		tab := zoo.Table([]*zoo.Run{{Model: "linear", Task: "digits", Optimizer: "Adam lr=0.01", Seed: 3,
			Epochs: []zoo.Epoch{{Epoch: 0}, {Epoch: 1, Steps: 3, HeldOutAccuracy: 0.9}}}})
		report.Provenance(tab, be, profile, "go run ./experiments/zoo/sweep", time.Now())
		path := filepath.Join(dir, name)
		if err := tab.Write(path); err != nil {
			t.Fatal(err)
		}
		return path
	}
	runs, note, err := finishedRuns(write("same.csv", profile), be, profile)
	if err != nil || len(runs) != 1 || runs[0].Seed != 3 || len(runs[0].Epochs) != 2 || !strings.HasPrefix(note, "1 runs kept from ") {
		t.Errorf("same build and budget: runs %+v, note %q, error %v; want the one run", runs, note, err)
	}
	if runs, _, err := finishedRuns(filepath.Join(dir, "missing.csv"), be, profile); err != nil || runs != nil {
		t.Errorf("missing table: runs %v, error %v; want none and no error", runs, err)
	}
	if _, _, err := finishedRuns(write("other.csv", "each model's batch size, 2 epochs"), be, profile); err == nil ||
		!strings.Contains(err.Error(), "profile") {
		t.Errorf("another budget: error %v, want one naming the profile", err)
	}
}

// TestShellQuote checks that the recorded command's arguments read back as one word each.
func TestShellQuote(t *testing.T) {
	for _, tc := range []struct{ arg, want string }{
		{"-models", "-models"},
		{"relu-mlp,cnn", "relu-mlp,cnn"},
		{"FGN α=1*,Adam*", "'FGN α=1*,Adam*'"},
		{"FGN()", "'FGN()'"},
		{"it's", `'it'\''s'`},
		{"", "''"},
	} {
		if got := shellQuote(tc.arg); got != tc.want {
			t.Errorf("shellQuote(%q) = %s, want %s", tc.arg, got, tc.want)
		}
	}
}
