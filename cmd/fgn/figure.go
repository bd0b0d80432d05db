package main

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/gomlx/compute"

	"github.com/fgn-paper/fgn/experiments/mechanism"
	"github.com/fgn-paper/fgn/experiments/profile"
	"github.com/fgn-paper/fgn/experiments/report"
	"github.com/fgn-paper/fgn/fgn/backend"
	"github.com/fgn-paper/fgn/internal/cli"
)

const figureHelp = `usage: fgn figure <name> [flags]

Regenerates one figure of the paper as CSV files and SVG/PNG/PDF. Figures:

  mechanism   Figure 1: (a) optimiser step time vs the number of classes, (b) the trace
              decomposition, (c) FGN vs SGN step agreement (fgn figure mechanism --help)
`

const mechanismHelp = `usage: fgn figure mechanism [flags]

Computes the requested panels of Figure 1, writes their CSV files to --out, and draws the
triptych from the CSV files there. Panel (a) times optimiser steps: its profile sets how many
(smoke: a few steps per point, for CI; quick: a few more, for a CPU; full: the paper's 128
warm-up and 640 timed steps per point, meant for a GPU).
`

// runFigure dispatches "fgn figure <name>".
func runFigure(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return cli.Usagef("figure: name the figure to make: fgn figure mechanism (fgn figure --help)")
	}
	switch args[0] {
	case "-h", "-help", "--help":
		fmt.Fprint(stdout, figureHelp)
		return flag.ErrHelp
	case "mechanism":
		return runFigureMechanism(args[1:], stdout, stderr)
	}
	if strings.HasPrefix(args[0], "-") {
		return cli.Usagef("figure: name the figure to make before the flags: fgn figure mechanism %s", strings.Join(args, " "))
	}
	return cli.Usagef("figure: unknown figure %q (want mechanism)", args[0])
}

// runFigureMechanism computes the requested panels of Figure 1, writes their CSV files to the
// output directory, and draws the triptych from the CSV files there.
func runFigureMechanism(args []string, stdout, stderr io.Writer) error {
	c := newCommand("figure mechanism", mechanismHelp, stdout)
	profileName := c.profileFlag()
	out := c.String("out", "results", "output directory for the CSV files and the figure")
	panels := c.String("panels", "a,b,c", "comma-separated panels to compute (the others are read from their CSV files in --out)")
	fromCSV := c.Bool("from-csv", false, "compute nothing: redraw the figure from the CSV files in --out")
	tMax := c.positiveFloat("t-max", mechanism.DefaultAgreement.TMax, "panel (c): the competitor offsets t_j are evenly spaced over [-t-max, t-max]")
	backendFlag := c.backendFlag()
	if err := c.parse(args); err != nil {
		return err
	}
	plan, err := profile.Named(*profileName)
	if err != nil {
		return cli.UsageError{Err: fmt.Errorf("figure mechanism: --profile: %w", err)}
	}
	if *fromCSV {
		if err := c.notApplicable("--from-csv computes no panel", "panels", "profile", "t-max", "backend"); err != nil {
			return err
		}
	}
	if err := checkOutDir("out", *out); err != nil {
		return err
	}
	stepCfg := plan.StepTime
	var which []string
	if !*fromCSV {
		for _, p := range strings.Split(*panels, ",") {
			p = strings.TrimSpace(p)
			if p != "a" && p != "b" && p != "c" {
				return cli.Usagef("figure mechanism: unknown panel %q in --panels (want a, b and/or c)", p)
			}
			if slices.Contains(which, p) {
				return cli.Usagef("figure mechanism: panel %s is listed twice in --panels", p)
			}
			which = append(which, p)
		}
	}
	if !slices.Contains(which, "a") {
		if err := c.notApplicable("it sets panel (a)'s timing, and --panels does not compute panel (a)", "profile"); err != nil {
			return err
		}
	}
	if !slices.Contains(which, "c") {
		if err := c.notApplicable("it sets panel (c), and --panels does not compute panel (c)", "t-max"); err != nil {
			return err
		}
	}
	if err := ready(); err != nil {
		return err
	}
	agreeCfg := mechanism.DefaultAgreement
	agreeCfg.TMax = *tMax

	var be compute.Backend
	if len(which) > 0 {
		if be, err = newBackend(*backendFlag); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "backend: %s\ndevice: %s\n", backend.Describe(be), report.Device())
		if w := backend.SIMDWarning(be); w != "" && slices.Contains(which, "a") {
			fmt.Fprintln(stderr, w)
		}
	}
	_, err = mechanism.Make(be, mechanism.MakeConfig{StepTime: stepCfg, Trace: mechanism.DefaultTrace, Agreement: agreeCfg,
		Panels: which, Command: strings.TrimSpace("fgn figure mechanism " + strings.Join(args, " ")),
		Log: stdout, Progress: stderr}, *out)
	return err
}
