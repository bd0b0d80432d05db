package artifact

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/fgn-paper/fgn/internal/atomicfile"
	"github.com/fgn-paper/fgn/internal/mdtext"
)

// Summary counts the results by status.
type Summary struct {
	Pass, Fail, Inconclusive, NotRun int
}

// Summarize counts results by status.
func Summarize(results []Result) Summary {
	var s Summary
	for _, r := range results {
		switch r.Status {
		case Pass:
			s.Pass++
		case Fail:
			s.Fail++
		case Inconclusive:
			s.Inconclusive++
		default:
			s.NotRun++
		}
	}
	return s
}

// String renders the counts.
func (s Summary) String() string {
	inc := ""
	if s.Inconclusive > 0 {
		inc = fmt.Sprintf(", %d inconclusive (timing claims the measurements cannot resolve; not failures)", s.Inconclusive)
	}
	return fmt.Sprintf("%d passed, %d failed%s, %d not run", s.Pass, s.Fail, inc, s.NotRun)
}

// Report is what [WriteJSON] writes.
type Report struct {
	Profile string   `json:"profile"`
	Summary string   `json:"summary"`
	Results []Result `json:"results"`
}

// WriteMarkdown writes the result table (claim, reference, expected, measured, status, seconds,
// detail) as a Markdown table, its cells' `*` and `_` escaped.
func WriteMarkdown(w io.Writer, profile string, results []Result) error {
	cell := func(s string) string {
		return mdtext.Escape(strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " "))
	}
	fmt.Fprintf(w, "# Artifact verification, profile %s\n\n%s.\n\n", profile, Summarize(results))
	fmt.Fprintln(w, "| claim | reference | expected | measured | status | seconds | detail |")
	fmt.Fprintln(w, "|---|---|---|---|---|---:|---|")
	for _, r := range results {
		_, err := fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %.1f | %s |\n", cell(r.ID), cell(r.Reference),
			cell(r.Expected), cell(r.Measured), r.Status, r.Seconds, cell(r.Detail))
		if err != nil {
			return err
		}
	}
	return nil
}

// WriteFiles writes the results atomically as <base>.md and <base>.json.
func WriteFiles(base, profile string, results []Result) error {
	if err := atomicfile.Write(base+".md", func(w io.Writer) error { return WriteMarkdown(w, profile, results) }); err != nil {
		return err
	}
	return atomicfile.Write(base+".json", func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(Report{Profile: profile, Summary: Summarize(results).String(), Results: results})
	})
}
