package reproduce

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/fgn-paper/fgn/experiments/headopt"
	"github.com/fgn-paper/fgn/experiments/mechanism"
	"github.com/fgn-paper/fgn/experiments/report"
)

// TestCommittedCaptions checks that every committed caption in figures/ is the one the caption
// writers make from the committed CSV files: a caption states only what its tables record.
func TestCommittedCaptions(t *testing.T) {
	const dir = "../../figures"
	const standIn = "synthetic stand-in, NOT Cars196"
	fromTable := func(csv string, caption func(*report.Table) (string, error)) func() (string, error) {
		return func() (string, error) {
			tab, err := report.Read(filepath.Join(dir, csv))
			if err != nil {
				return "", err
			}
			return caption(tab)
		}
	}
	for _, tc := range []struct {
		file string
		make func() (string, error)
	}{
		{"figure1_mechanism.caption.md", func() (string, error) {
			ts, err := mechanism.ReadTables(dir)
			if err != nil {
				return "", err
			}
			return mechanism.Caption(ts)
		}},
		{"figure2_synthetic_standin.caption.md", fromTable("table1_synthetic_standin.csv",
			func(tab *report.Table) (string, error) { return headopt.Caption(tab, standIn) })},
		{"ablation_cg_stopping_synthetic_standin.caption.md", fromTable("ablation_cg_stopping_synthetic_standin_steps.csv",
			func(tab *report.Table) (string, error) { return headopt.AblationCaption(tab, standIn) })},
	} {
		t.Run(tc.file, func(t *testing.T) {
			want, err := os.ReadFile(filepath.Join(dir, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			got, err := tc.make()
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("the caption made from the committed CSV files differs from %s:\n%s\nwant\n%s", tc.file, got, want)
			}
		})
	}
}
