package headopt

import (
	"path/filepath"
)

// Files are the output file names for data tagged tag (Data.Tag).
type Files struct{ Figure, Caption, Curves, Steps, Seeds, Table, TracesDir string }

// FilesFor returns the output paths in dir: dir/figure2_<tag>.{svg,png,pdf} (Figure base) with
// its caption dir/figure2_<tag>.caption.md, the wall-time curves dir/figure2_<tag>_curves.csv,
// the step curves dir/figure2_<tag>_steps.csv, the per-run results dir/table1_<tag>_seeds.csv,
// dir/table1_<tag>.{csv,md,tex} (Table base) and the traces directory dir/traces_<tag>.
func FilesFor(dir, tag string) Files {
	return Files{
		Figure:    filepath.Join(dir, "figure2_"+tag),
		Caption:   filepath.Join(dir, "figure2_"+tag+".caption.md"),
		Curves:    filepath.Join(dir, "figure2_"+tag+"_curves.csv"),
		Steps:     filepath.Join(dir, "figure2_"+tag+"_steps.csv"),
		Seeds:     filepath.Join(dir, "table1_"+tag+"_seeds.csv"),
		Table:     filepath.Join(dir, "table1_"+tag),
		TracesDir: filepath.Join(dir, "traces_"+tag),
	}
}
