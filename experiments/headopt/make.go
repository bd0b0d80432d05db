package headopt

import (
	"fmt"
	"io"
	"time"

	"github.com/gomlx/compute"

	"github.com/fgn-paper/fgn/experiments/method"
	"github.com/fgn-paper/fgn/experiments/report"
)

// PaperHypers names the hyper-parameters used when no selection file is given.
const PaperHypers = "paper values (app. F.2)"

// DefaultGridPoints is the number of points of the shared wall-time grid of Figure 2.
const DefaultGridPoints = 1001

// MakeConfig configures Make: the sweep (SweepConfig, whose Dir Make sets) and the outputs.
type MakeConfig struct {
	Profile Profile
	// Hyper are the methods' hyper-parameters (SweepConfig.Hyper) and HyperSource says where
	// they come from ("": PaperHypers); it is recorded in the outputs' provenance.
	Hyper       map[method.Method]method.Hyper
	HyperSource string
	// Thresholds are the time-to-threshold accuracies in percent (nil: Thresholds(Profile, d)).
	Thresholds []float64
	// GridPoints is the size of the shared wall-time grid (0: DefaultGridPoints).
	GridPoints int
	// Out is the output directory (FilesFor(Out, d.Tag())); TracesDir, when set, replaces
	// FilesFor's directory of the per-run traces.
	Out, TracesDir string
	// Command is recorded in the provenance; RunProgress, Progress and Log are SweepConfig's.
	Command     string
	RunProgress func(k, n int, m method.Method, seed uint64) func(done, total int)
	Progress    func(done, total int)
	Log         io.Writer
}

// Thresholds returns the default time-to-threshold accuracies (percent) for data d under
// profile p: the paper's Cars196Thresholds on the canonical Cars196 cache, the profile's
// SynthThresholds on the synthetic stand-in, and none on any other cache (name them in
// MakeConfig.Thresholds).
func Thresholds(p Profile, d *Data) []float64 {
	switch {
	case d.Synthetic:
		return p.SynthThresholds
	case d.Cars196:
		return Cars196Thresholds
	}
	return nil
}

// Make runs the resumable sweep (Sweep) of the profile on d, its traces in the traces
// directory, then writes the curves, Figure 2 and Table 1 (WriteAll) with their provenance. It
// returns the paths of the outputs written (not the traces).
func Make(be compute.Backend, cfg MakeConfig, d *Data) ([]string, error) {
	thresholds := cfg.Thresholds
	if thresholds == nil {
		thresholds = Thresholds(cfg.Profile, d)
	}
	grid := cfg.GridPoints
	if grid == 0 {
		grid = DefaultGridPoints
	}
	hyperSource := cfg.HyperSource
	if hyperSource == "" {
		hyperSource = PaperHypers
	}
	p := cfg.Profile
	files := FilesFor(cfg.Out, d.Tag())
	if cfg.TracesDir != "" {
		files.TracesDir = cfg.TracesDir
	}
	if cfg.Log != nil {
		fmt.Fprintf(cfg.Log, "data: %s\nprofile: %s (%d seeds, %d epochs, batch %d)\nhyper-parameters: %s\ntraces: %s\n",
			d.Source, p.Name, p.Seeds, p.Epochs, p.BatchSize, hyperSource, files.TracesDir)
	}
	runs, err := Sweep(be, SweepConfig{Profile: p, Hyper: cfg.Hyper, Dir: files.TracesDir, Command: cfg.Command,
		RunProgress: cfg.RunProgress, Progress: cfg.Progress, Log: cfg.Log}, d)
	if err != nil {
		return nil, err
	}
	return WriteAll(runs, p.Methods, d, files, thresholds, grid, func(t *report.Table) {
		t.Comment("hyper_parameters", hyperSource)
		report.Provenance(t, be, p.Name, cfg.Command, time.Now())
	})
}
