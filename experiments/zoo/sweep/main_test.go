package main

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/fgn-paper/fgn/experiments/report"
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
