package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/fgn-paper/fgn/experiments/report"
	"github.com/fgn-paper/fgn/experiments/reproduce"
	"github.com/fgn-paper/fgn/fgn/backend"
)

const reproduceUsage = `usage: fgn reproduce [flags]

Regenerates every figure and table of the paper into --out in one profile: Figure 1 (as "fgn
figure mechanism"), then Figure 2 and Table 1 (as "fgn headopt") on the Cars196 feature cache in
--features, or on the synthetic stand-in (NOT Cars196, labelled so) when there is none. A target
whose outputs exist and whose stamp (<out>/.reproduce/<target>.json) records the same profile,
settings, inputs, code and backend is skipped; --force rebuilds everything.

Profiles: smoke (CI; ≈20 s on 2 CPU cores), quick (default; ≈3 min on 2 quiet CPU cores),
full (the paper's protocols; meant for a GPU).

flags:
`

// runReproduce is the "reproduce" subcommand.
func runReproduce(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("reproduce", stderr)
	fs.Usage = func() { fmt.Fprint(stderr, reproduceUsage); fs.PrintDefaults() }
	profile := fs.String("profile", "quick", "smoke, quick or full")
	out := fs.String("out", "figures", "output directory")
	featuresDir := fs.String("features", "data/cars196", "Cars196 feature cache (as written by data/fetch); without one the synthetic stand-in is used")
	force := fs.Bool("force", false, "rebuild every target, up to date or not")
	backendFlag := fs.String("backend", "", "backend, as GOMLX_BACKEND (default: $GOMLX_BACKEND, else pure Go)")
	quiet := fs.Bool("quiet", false, "no progress bars")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("reproduce: unexpected argument %q", fs.Arg(0))
	}
	plan, err := reproduce.PlanNamed(*profile)
	if err != nil {
		return err
	}
	hasCache, err := reproduce.HasCache(*featuresDir)
	if err != nil {
		return err
	}
	explicit := false
	fs.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "features" })
	if explicit && !hasCache {
		return fmt.Errorf("reproduce: --features %s: no feature cache there (want %s)", *featuresDir,
			strings.Join(reproduce.CacheFiles(*featuresDir), ", "))
	}
	if *out == "" {
		return fmt.Errorf("reproduce: --out is empty")
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
