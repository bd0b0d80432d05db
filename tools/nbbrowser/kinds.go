package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
)

// cellOutputs is the part of an nbformat notebook the check reads.
type cellOutputs struct {
	Cells []struct {
		CellType       string `json:"cell_type"`
		ExecutionCount *int   `json:"execution_count"`
		Outputs        []struct {
			OutputType string         `json:"output_type"`
			Name       string         `json:"name"`
			Data       map[string]any `json:"data"`
		} `json:"outputs"`
	} `json:"cells"`
}

// kinds lists the kinds of a code cell's outputs: "stdout", "stderr", "error", and each MIME type
// of its displayed data.
func (nb *cellOutputs) kinds(cell int) []string {
	set := map[string]bool{}
	for _, o := range nb.Cells[cell].Outputs {
		switch o.OutputType {
		case "stream":
			set[o.Name] = true
		case "error":
			set["error"] = true
		default:
			for mime := range o.Data {
				set[mime] = true
			}
		}
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// compareKinds lists, per cell (0-based, all cells), what the executed notebook lacks against
// the committed one: a code cell that did not run, an error output, or a kind of output the
// committed cell has and the executed one does not.
func compareKinds(committedJSON, executedJSON []byte) ([]pageProblem, error) {
	var committed, executed cellOutputs
	if err := json.Unmarshal(committedJSON, &committed); err != nil {
		return nil, fmt.Errorf("committed notebook: %w", err)
	}
	if err := json.Unmarshal(executedJSON, &executed); err != nil {
		return nil, fmt.Errorf("executed notebook: %w", err)
	}
	if len(committed.Cells) != len(executed.Cells) {
		return []pageProblem{{Cell: -1, Problem: fmt.Sprintf("%d cells committed, %d in the page", len(committed.Cells), len(executed.Cells))}}, nil
	}
	var problems []pageProblem
	for i, c := range executed.Cells {
		if c.CellType != "code" {
			continue
		}
		if c.ExecutionCount == nil {
			problems = append(problems, pageProblem{i, "did not run"})
			continue
		}
		got := executed.kinds(i)
		if slices.Contains(got, "error") {
			problems = append(problems, pageProblem{i, "error output"})
		}
		for _, k := range committed.kinds(i) {
			if !slices.Contains(got, k) {
				problems = append(problems, pageProblem{i, fmt.Sprintf("no %s output, which the committed notebook has", k)})
			}
		}
	}
	return problems, nil
}
