package mechanism

import (
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/gomlx/compute"

	"github.com/fgn-paper/fgn/experiments/report"
)

// MakeConfig configures Make: the three panels' configurations and how to report.
type MakeConfig struct {
	StepTime  StepTimeConfig
	Trace     TraceConfig
	Agreement AgreementConfig
	// Panels lists the panels to compute ("a", "b" and/or "c"); the others are read back from
	// their CSV files in the output directory.
	Panels []string
	// Command is recorded in the CSV provenance.
	Command string
	// Log, when set, gets one line per panel computed and per file written; Progress, when set,
	// gets panel (a)'s progress bar.
	Log, Progress io.Writer
}

// Make computes the configured panels of Figure 1, writes each as a CSV file with its
// provenance (report.Provenance; the profile is StepTime.Profile for panel (a), exact
// computations for (b) and (c)) into dir, then draws the figure and its caption from the CSV
// files in dir as read back (Figure), leaving out a panel whose CSV file is not there. It returns the paths written. be may be nil when no panel
// is computed.
func Make(be compute.Backend, cfg MakeConfig, dir string) ([]string, error) {
	log, progress := cfg.Log, cfg.Progress
	if log == nil {
		log = io.Discard
	}
	if progress == nil {
		progress = io.Discard
	}
	var paths []string
	for _, p := range cfg.Panels {
		var (
			tab, samples *report.Table
			file         string
			profile      = "n/a (exact computation)"
			err          error
		)
		start := time.Now()
		switch p {
		case "a":
			fmt.Fprintf(log, "panel (a): step times, profile %s\n", cfg.StepTime.Profile)
			tab, samples, err = StepTime(be, cfg.StepTime, progress)
			file, profile = StepTimeFile, cfg.StepTime.Profile
		case "b":
			tab, err = Trace(be, cfg.Trace)
			file = TraceFile
		case "c":
			tab, err = Agreement(be, cfg.Agreement)
			file = AgreementFile
		default:
			return paths, fmt.Errorf("mechanism: unknown panel %q (want a, b or c)", p)
		}
		if err != nil {
			return paths, err
		}
		report.Provenance(tab, be, profile, cfg.Command, time.Now())
		if samples != nil {
			report.Provenance(samples, be, profile, cfg.Command, time.Now())
			path := filepath.Join(dir, StepSamplesFile)
			if err := samples.Write(path); err != nil {
				return paths, err
			}
			paths = append(paths, path)
		}
		path := filepath.Join(dir, file)
		if err := tab.Write(path); err != nil {
			return paths, err
		}
		paths = append(paths, path)
		fmt.Fprintf(log, "panel (%s): wrote %s (%d rows, %s)\n", p, path, len(tab.Rows), time.Since(start).Round(time.Millisecond))
	}
	tables, err := ReadTables(dir)
	if err != nil {
		return paths, err
	}
	for _, p := range tables.Missing() {
		fmt.Fprintf(log, "figure: panel (%s) left out: no data in %s (--panels %s computes it)\n", p, dir, p)
	}
	figs, err := Figure(tables, dir)
	for _, path := range figs {
		fmt.Fprintf(log, "figure: wrote %s\n", path)
	}
	return append(paths, figs...), err
}
