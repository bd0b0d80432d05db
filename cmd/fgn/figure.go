package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/gomlx/compute"

	"github.com/fgn-paper/fgn/experiments/mechanism"
	"github.com/fgn-paper/fgn/experiments/report"
	"github.com/fgn-paper/fgn/fgn/backend"
)

// runFigure dispatches "fgn figure <name>".
func runFigure(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		fmt.Fprint(stderr, "usage: fgn figure mechanism [flags]   (Figure 1; fgn figure mechanism --help)\n")
		return fmt.Errorf("figure: name the figure to make (mechanism)")
	}
	switch args[0] {
	case "mechanism":
		return runFigureMechanism(args[1:], stdout, stderr)
	default:
		return fmt.Errorf("figure: unknown figure %q (want mechanism)", args[0])
	}
}

// runFigureMechanism computes the requested panels of Figure 1, writes their CSV files to the
// output directory, and draws the triptych from the CSV files there.
func runFigureMechanism(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("figure mechanism", stderr)
	profile := fs.String("profile", "quick", "panel (a) timing profile: quick (≤ 15 min on 2 CPU cores), full (paper: 128 warm-up, 640 timed steps) or smoke (about a minute)")
	out := fs.String("out", "figures", "output directory for the CSV files and the figure")
	panels := fs.String("panels", "a,b,c", "comma-separated panels to compute (the others are read from their CSV files in --out)")
	fromCSV := fs.Bool("from-csv", false, "compute nothing: redraw the figure from the CSV files in --out")
	tMax := fs.Float64("t-max", mechanism.DefaultAgreement.TMax, "panel (c): the competitor offsets t_j are evenly spaced over [-t-max, t-max]")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("figure mechanism: unexpected arguments %q", fs.Args())
	}
	stepCfg, err := mechanism.StepTimeProfile(*profile)
	if err != nil {
		return err
	}
	var which []string
	if !*fromCSV {
		for _, p := range strings.Split(*panels, ",") {
			p = strings.TrimSpace(p)
			if p != "a" && p != "b" && p != "c" {
				return fmt.Errorf("figure mechanism: unknown panel %q in --panels (want a, b and/or c)", p)
			}
			if !slices.Contains(which, p) {
				which = append(which, p)
			}
		}
	}
	agreeCfg := mechanism.DefaultAgreement
	agreeCfg.TMax = *tMax

	var be compute.Backend
	if len(which) > 0 {
		if be, err = backend.New(); err != nil {
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
