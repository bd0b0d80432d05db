package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/fgn-paper/fgn/experiments/headopt"
	"github.com/fgn-paper/fgn/experiments/method"
	"github.com/fgn-paper/fgn/experiments/profile"
	"github.com/fgn-paper/fgn/experiments/report"
	"github.com/fgn-paper/fgn/experiments/train"
	"github.com/fgn-paper/fgn/fgn/backend"
	"github.com/fgn-paper/fgn/internal/cli"
	"github.com/fgn-paper/fgn/internal/progress"
	"github.com/gomlx/compute"
)

const headoptHelp = `usage: fgn headopt [select] [flags]

Frozen-feature head optimisation (paper sec. 5, app. F.2: Figure 2 and Table 1). Trains Adam,
SGN and FGN (closed-form affine row Gram) on standardised features for every seed of the
profile, writes each (method, seed) trace to <out>/traces_<data>/ when it finishes (a restarted
sweep reads finished runs back), then Figure 2 and Table 1 to <out>.

"fgn headopt select" grid-searches α (and λ for SGN/FGN) on a stratified validation split of
the training features and writes the chosen configuration, which "fgn headopt --config FILE"
then uses (without --config the paper's values are used).

Data: --features DIR (a feature cache made by data/fetch: train_/test_features.npy, _labels.npy
and manifest.json, whose manifest gives the class count and names the outputs: "cars196" only
for the canonical Cars196 split), or --synthetic: a Gaussian-mixture stand-in, NOT Cars196,
labelled so in every output.
`

// headoptFlags are the flags shared by the sweep and the selection.
type headoptFlags struct {
	features, profile, out, backend *string
	synthetic, quiet                *bool
}

func addHeadoptFlags(fs *command) *headoptFlags {
	return &headoptFlags{
		features:  fs.String("features", "", "feature cache directory (train_/test_ features and labels .npy)"),
		synthetic: fs.Bool("synthetic", false, "use the synthetic Gaussian-mixture stand-in (NOT Cars196) of the profile's shape"),
		profile:   fs.profileFlag(),
		out:       fs.String("out", "results", "output directory"),
		backend:   fs.backendFlag(),
		quiet:     fs.Bool("quiet", false, "no progress bars or per-run lines"),
	}
}

// load returns the backend, the profile and the data the flags name, refusing data on which a
// run of the profile's methods would not fit in the machine's memory (train.CheckMemory).
func (f *headoptFlags) load() (compute.Backend, headopt.Profile, *headopt.Data, error) {
	plan, err := profile.Named(*f.profile)
	switch {
	case err != nil:
		err = cli.UsageError{Err: fmt.Errorf("headopt: --profile: %w", err)}
	case *f.synthetic && *f.features != "":
		err = cli.Usagef("headopt: --features and --synthetic exclude each other")
	case !*f.synthetic && *f.features == "":
		err = cli.Usagef("headopt: name the data: --features DIR (a feature cache) or --synthetic (a stand-in, not Cars196)")
	default:
		err = checkOutDir("out", *f.out)
	}
	if err == nil {
		err = ready()
	}
	if err != nil {
		return nil, headopt.Profile{}, nil, err
	}
	be, err := newBackend(*f.backend)
	if err != nil {
		return nil, headopt.Profile{}, nil, err
	}
	p := plan.Headopt
	var d *headopt.Data
	if *f.synthetic {
		d, err = headopt.Synthetic(p)
	} else {
		d, err = headopt.LoadCache(*f.features)
	}
	if err != nil {
		return be, p, d, err
	}
	for _, m := range p.Methods {
		cfg := train.Config{Method: m, BatchSize: p.BatchSize}
		if err := train.CheckMemory(cfg, d.Train.N, d.Test.N, d.Train.D, d.Classes); err != nil {
			return be, p, d, cli.ConfigError{Err: fmt.Errorf("headopt: %w", err)}
		}
	}
	return be, p, d, nil
}

// runProgress returns the per-run progress bars of the selection's candidate runs, labelled
// with the run's place in the grid.
func runProgress(w io.Writer, quiet bool) func(k, n int, m method.Method, seed uint64) func(done, total int) {
	if quiet {
		return nil
	}
	return func(k, n int, m method.Method, seed uint64) func(done, total int) {
		return runBar(w, headopt.RunLabel(k, n, m, seed))
	}
}

// runHeadopt is the "headopt" subcommand.
func runHeadopt(args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "select" {
		return runHeadoptSelect(args[1:], stdout, stderr)
	}
	fs := newCommand("headopt", headoptHelp, stdout)
	hf := addHeadoptFlags(fs)
	config := fs.String("config", "", "hyper-parameter file written by fgn headopt select (default: the paper's values)")
	thresholdsFlag := fs.String("thresholds", "", "comma-separated time-to-threshold accuracies in percent (default: 42,43,44 on Cars196, the profile's scaled ones on the stand-in, none on other caches)")
	gridPoints := fs.intAtLeast("grid-points", headopt.DefaultGridPoints, 2, "points of the shared wall-time grid")
	seeds := fs.optionalInt("seeds", "the profile's count", 1, "run seeds 1..N (e.g. 1 to time one seed of the full protocol)")
	fromCSV := fs.Bool("from-csv", false, "compute nothing: redraw Figure 2, Table 1's Markdown and LaTeX and the caption, and the CG stopping-rule ablation's figure and caption, from the CSV files in --out")
	if err := fs.parse(args); err != nil {
		return err
	}
	if *fromCSV {
		return redrawHeadopt(fs, hf, stdout)
	}
	var thresholds []float64 // nil: headopt.Thresholds
	if *thresholdsFlag != "" {
		var err error
		if thresholds, err = parseFloats(*thresholdsFlag); err != nil {
			return cli.Usagef("headopt: --thresholds: %v", err)
		}
	}
	be, p, d, err := hf.load()
	if err != nil {
		return err
	}
	if n, ok := seeds.get(); ok {
		p.Seeds = n
	}
	hypers := map[method.Method]method.Hyper{}
	hyperSource := headopt.PaperHypers
	if *config != "" {
		if hypers, _, err = headopt.ReadSelection(*config, d.Tag(), p.Methods); err != nil {
			return err
		}
		hyperSource = *config
	}
	if w := backend.SIMDWarning(be); w != "" {
		fmt.Fprintln(stderr, w)
	}
	command := strings.TrimSpace("fgn headopt " + strings.Join(args, " "))
	fmt.Fprintf(stdout, "backend: %s\ndevice: %s\n", backend.Describe(be), report.Device())
	cfg := headopt.MakeConfig{Profile: p, Hyper: hypers, HyperSource: hyperSource, Thresholds: thresholds,
		GridPoints: *gridPoints, Out: *hf.out, Command: command}
	if !*hf.quiet {
		bar := progress.NewNested(stderr, "sweep", 2*time.Second)
		cfg.RunProgress = func(k, n int, m method.Method, seed uint64) func(done, total int) {
			return bar.Item(headopt.RunLabel(k, n, m, seed))
		}
		cfg.Progress = bar.Set
		cfg.Log = bar.Clearing(stdout)
	}
	paths, err := headopt.Make(be, cfg, d)
	for _, path := range paths {
		fmt.Fprintf(stdout, "wrote %s\n", path)
	}
	if err != nil {
		return err
	}
	files := headopt.FilesFor(*hf.out, d.Tag())
	if md, err := os.ReadFile(files.Table + ".md"); err == nil {
		fmt.Fprintf(stdout, "\n%s", md)
	}
	return nil
}

// redrawHeadopt is "headopt --from-csv": Figure 2, Table 1's Markdown and LaTeX and the caption
// drawn again from the CSV files of a finished sweep in --out, and the CG stopping-rule ablation's
// figure and caption when its CSV file is there (fgn reproduce writes it), for the data
// --features or --synthetic names (the file names' tag and the titles).
func redrawHeadopt(fs *command, hf *headoptFlags, stdout io.Writer) error {
	if err := fs.notApplicable("--from-csv computes nothing", "profile", "config", "thresholds", "grid-points", "seeds", "backend"); err != nil {
		return err
	}
	if *hf.synthetic == (*hf.features != "") {
		return cli.Usagef("headopt: name the data of the CSV files: --features DIR or --synthetic")
	}
	if err := checkOutDir("out", *hf.out); err != nil {
		return err
	}
	if err := ready(); err != nil {
		return err
	}
	tag, title, err := headopt.CacheNames(*hf.features) // "" for the stand-in
	if err != nil {
		return err
	}
	paths, err := headopt.Redraw(headopt.FilesFor(*hf.out, tag), title, tag)
	if ablation := headopt.AblationFilesFor(*hf.out, tag); err == nil && exists(ablation.Steps) {
		var more []string
		more, err = headopt.RedrawAblation(ablation, title)
		paths = append(paths, more...)
	}
	for _, path := range paths {
		fmt.Fprintf(stdout, "wrote %s\n", path)
	}
	return err
}

// exists reports whether a file is at path.
func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// runHeadoptSelect is "headopt select".
func runHeadoptSelect(args []string, stdout, stderr io.Writer) error {
	fs := newCommand("headopt select", headoptHelp, stdout)
	hf := addHeadoptFlags(fs)
	file := fs.String("config", "", "output configuration file (default: <out>/headopt_config_<data>.json)")
	fraction := fs.positiveFloat("val-fraction", 0.1, "stratified fraction of every class of the training split held out for validation, in (0, 1)")
	epochs := fs.optionalInt("epochs", "the profile's", 1, "epochs per candidate")
	seed := fs.Uint64("seed", 1, "seed of the validation split and of the candidate runs")
	if err := fs.parse(args); err != nil {
		return err
	}
	if !(*fraction < 1) {
		return cli.Usagef("headopt select: --val-fraction %g: want a fraction in (0, 1)", *fraction)
	}
	if *file != "" {
		if err := fs.notApplicable("--config names the output file", "out"); err != nil {
			return err
		}
	}
	be, p, d, err := hf.load()
	if err != nil {
		return err
	}
	candidateEpochs, _ := epochs.get() // 0: the profile's
	path := *file
	if path == "" {
		path = filepath.Join(*hf.out, "headopt_config_"+d.Tag()+".json")
	}
	fmt.Fprintf(stdout, "backend: %s\ndata: %s\nselection: profile %s, validation fraction %g of the training split\n",
		backend.Describe(be), d.Source, p.Name, *fraction)
	cfg := headopt.SelectConfig{Profile: p, Grid: headopt.DefaultGrid(), Epochs: candidateEpochs, ValidationFraction: *fraction,
		Seed: *seed, RunProgress: runProgress(stderr, *hf.quiet)}
	if !*hf.quiet {
		cfg.Log = stdout
	}
	sel, err := headopt.Select(be, cfg, d)
	if err != nil {
		return err
	}
	if err := sel.Write(path); err != nil {
		return err
	}
	for _, m := range p.Methods {
		c := sel.Chosen[m]
		if m == method.Adam {
			fmt.Fprintf(stdout, "chosen %-4s learning rate α=%g\n", m, c.Adam.LearningRate)
			continue
		}
		fmt.Fprintf(stdout, "chosen %-4s learning rate α=%g, damping λ=%g\n", m, c.GN.LearningRate, c.GN.Damping)
	}
	fmt.Fprintf(stdout, "wrote %s (use: fgn headopt --config %s)\n", path, path)
	return nil
}

func parseFloats(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}
