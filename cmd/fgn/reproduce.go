package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/fgn-paper/fgn/experiments/profile"
	"github.com/fgn-paper/fgn/experiments/report"
	"github.com/fgn-paper/fgn/experiments/reproduce"
	"github.com/fgn-paper/fgn/fgn/backend"
	"github.com/fgn-paper/fgn/internal/cli"
)

const reproduceHelp = `usage: fgn reproduce [flags]

Regenerates every figure and table of the paper into --out in one profile: Figure 1 (as "fgn
figure mechanism"), then Figure 2 and Table 1 (as "fgn headopt", FGN stopping CG by the paper's
whitened-row rule), then the CG stopping-rule ablation (FGN under that rule and under the
library's parameter-residual rule, same seeds and batches), on the Cars196 feature cache in
--features, or on the synthetic stand-in (NOT Cars196, labelled so) when there is none. A target
whose outputs exist and whose stamp (<out>/.reproduce/<target>.json) records the same profile,
settings, inputs, code (the compiled source and build settings) and backend is skipped; --force
rebuilds everything.

The default output directory, results/, is ignored by git: running the command leaves the
repository's files as they are. "fgn reproduce --out figures" refreshes the committed figures.
`

// runReproduce is the "reproduce" subcommand.
func runReproduce(args []string, stdout, stderr io.Writer) error {
	c := newCommand("reproduce", reproduceHelp, stdout)
	profileName := c.profileFlag()
	out := c.String("out", "results", "output directory (figures: the committed figures)")
	featuresDir := c.String("features", "data/cars196", "Cars196 feature cache (as written by data/fetch); without one the synthetic stand-in is used")
	force := c.Bool("force", false, "rebuild every target, up to date or not")
	backendFlag := c.backendFlag()
	quiet := c.Bool("quiet", false, "no progress display")
	if err := c.parse(args); err != nil {
		return err
	}
	if *out == "" {
		return cli.Usagef("reproduce: --out is empty")
	}
	if err := checkOutDir("out", *out); err != nil {
		return err
	}
	plan, err := profile.Named(*profileName)
	if err != nil {
		return cli.UsageError{Err: fmt.Errorf("reproduce: --profile: %w", err)}
	}
	hasCache, err := reproduce.HasCache(*featuresDir)
	if err != nil {
		return err
	}
	if c.set("features") && !hasCache {
		return cli.Usagef("reproduce: --features %s: no feature cache there (want %s)", *featuresDir,
			strings.Join(reproduce.CacheFiles(*featuresDir), ", "))
	}
	if err := ready(); err != nil {
		return err
	}
	be, err := newBackend(*backendFlag)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "device: %s\n", report.Device())
	if w := backend.SIMDWarning(be); w != "" {
		fmt.Fprintln(stderr, w)
	}
	if !hasCache {
		fmt.Fprintf(stdout, "no Cars196 feature cache in %s (fetch it with data/fetch): Figure 2 and Table 1 use the synthetic stand-in\n", *featuresDir)
	}
	cfg := reproduce.Config{Plan: plan, Out: *out, Features: *featuresDir, Force: *force, Backend: be,
		Command: strings.TrimSpace("fgn reproduce " + strings.Join(args, " ")), Log: stdout}
	if !*quiet {
		cfg.Progress = stderr
		cfg.RunBar = func(description string) func(done, total int) { return runBar(stderr, description) }
	}
	_, err = reproduce.Run(cfg)
	return err
}
