package main

import (
	"encoding/json"
	"testing"
)

func TestTextMatches(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"ok    s (eq. 2.3)   error  2.19e-17  (tolerance 1e-14)", "ok    s (eq. 2.3)   error 0  (tolerance 1e-14)", true},
		{"R: 2.9005 → 0.3382", "R: 2.9005 → 0.3383", true},
		{"R: 2.9005 → 0.3382", "R: 2.9005 → 0.3482", false},
		{"ok check A", "ok check B", false},
		{"ok  a 1", "ok  a 1 2", false},
		{"q ∈ [0.0012, 0.0520]", "q ∈ [0.0012,   0.0520]", true},
	} {
		if got := textMatches(tc.a, tc.b); got != tc.want {
			t.Errorf("textMatches(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

func parse(t *testing.T, doc string) *notebook {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatal(err)
	}
	nb := &notebook{doc: m}
	for _, c := range m["cells"].([]any) {
		nb.cells = append(nb.cells, c.(map[string]any))
	}
	return nb
}

func TestFailures(t *testing.T) {
	for _, tc := range []struct {
		name, outputs string
		want          int
	}{
		{"clean", `[{"output_type": "stream", "name": "stdout", "text": ["ok  x  error 0 (tolerance 0)\n"]}]`, 0},
		{"error output", `[{"output_type": "error", "ename": "ERROR", "evalue": "exit status 1", "traceback": []}]`, 1},
		{"panic", `[{"output_type": "stream", "name": "stderr", "text": "panic: boom\n\ngoroutine 1\nexit status 2\n"}]`, 2},
		{"failed check", `[{"output_type": "stream", "name": "stderr", "text": ["CHECK FAILED: x: error 1 exceeds tolerance 0\n"]}]`, 1},
		{"compile error html", `[{"output_type": "display_data", "data": {"text/html": ["<pre>failed</pre>\n", "exit status 1\n"]}}]`, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nb := parse(t, `{"cells": [{"cell_type": "code", "source": "", "metadata": {}, "outputs": `+tc.outputs+`}]}`)
			if got := nb.failures(); len(got) != tc.want {
				t.Errorf("failures() = %q, want %d", got, tc.want)
			}
		})
	}
}

func TestCompare(t *testing.T) {
	cell := func(tags, text string) string {
		return `{"cell_type": "code", "source": ["%%\n", "x"], "metadata": {"tags": ` + tags + `},
			"outputs": [{"output_type": "stream", "name": "stdout", "text": "` + text + `"}]}`
	}
	doc := func(c string) *notebook { return parse(t, `{"cells": [`+c+`]}`) }
	for _, tc := range []struct {
		name, committed, executed string
		want                      int
	}{
		{"same", cell(`[]`, "t = 1.5 ms"), cell(`[]`, "t = 1.5 ms"), 0},
		{"stale number", cell(`[]`, "t = 1.5 ms"), cell(`[]`, "t = 3.1 ms"), 1},
		{"machine-dependent number", cell(`["machine-dependent"]`, "t = 1.5 ms"), cell(`["machine-dependent"]`, "t = 3.1 ms"), 0},
		{"chunked differently", cell(`[]`, "a 1\\nb 2\\n"), `{"cell_type": "code", "source": ["%%\n", "x"], "metadata": {},
			"outputs": [{"output_type": "stream", "name": "stdout", "text": "a 1\n"},
			{"output_type": "stream", "name": "stdout", "text": ["b 2\n"]}]}`, 0},
		{"stripped outputs", `{"cell_type": "code", "source": ["%%\n", "x"], "metadata": {}, "outputs": []}`, cell(`[]`, "t"), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := compare(doc(tc.committed), doc(tc.executed)); len(got) != tc.want {
				t.Errorf("compare() = %q, want %d problems", got, tc.want)
			}
		})
	}
}
