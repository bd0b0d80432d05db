package main

import (
	"slices"
	"testing"
)

// TestCompareKinds checks what the comparison of output kinds reports, on hand-written notebooks.
func TestCompareKinds(t *testing.T) {
	const committed = `{"cells": [
		{"cell_type": "markdown", "source": "text"},
		{"cell_type": "code", "execution_count": 1, "outputs": [
			{"output_type": "stream", "name": "stdout", "text": "ok"},
			{"output_type": "display_data", "data": {"image/png": "AA==", "text/plain": "fig"}}]},
		{"cell_type": "code", "execution_count": 2, "outputs": []}]}`
	tests := []struct {
		name, executed string
		want           []pageProblem
	}{
		{"same kinds, more text chunks and an extra stderr", `{"cells": [{"cell_type": "markdown"},
			{"cell_type": "code", "execution_count": 1, "outputs": [
				{"output_type": "stream", "name": "stdout"}, {"output_type": "stream", "name": "stdout"},
				{"output_type": "stream", "name": "stderr"},
				{"output_type": "display_data", "data": {"image/png": "", "text/plain": ""}}]},
			{"cell_type": "code", "execution_count": 2, "outputs": []}]}`, nil},
		{"figure missing", `{"cells": [{"cell_type": "markdown"},
			{"cell_type": "code", "execution_count": 1, "outputs": [{"output_type": "stream", "name": "stdout"}]},
			{"cell_type": "code", "execution_count": 2, "outputs": []}]}`,
			[]pageProblem{{1, "no image/png output, which the committed notebook has"}, {1, "no text/plain output, which the committed notebook has"}}},
		{"error output, later cell not run", `{"cells": [{"cell_type": "markdown"},
			{"cell_type": "code", "execution_count": 1, "outputs": [
				{"output_type": "stream", "name": "stdout"}, {"output_type": "error"},
				{"output_type": "display_data", "data": {"image/png": "", "text/plain": ""}}]},
			{"cell_type": "code", "execution_count": null, "outputs": []}]}`,
			[]pageProblem{{1, "error output"}, {2, "did not run"}}},
		{"cell count differs", `{"cells": [{"cell_type": "markdown"}]}`,
			[]pageProblem{{-1, "3 cells committed, 1 in the page"}}},
	}
	for _, tc := range tests {
		got, err := compareKinds([]byte(committed), []byte(tc.executed))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: problems %v, want %v", tc.name, got, tc.want)
		}
	}
	if _, err := compareKinds([]byte(committed), []byte("not json")); err == nil {
		t.Error("compareKinds accepted an executed notebook that is not JSON")
	}
}
