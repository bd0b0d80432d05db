package main

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

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

	if len(which) > 0 {
		be, err := backend.New()
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "backend: %s\ndevice: %s\n", backend.Describe(be), report.Device())
		if w := backend.SIMDWarning(be); w != "" && slices.Contains(which, "a") {
			fmt.Fprintln(stderr, w)
		}
		command := "fgn figure mechanism " + strings.Join(args, " ")
		for _, p := range which {
			var (
				tab  *report.Table
				file string
			)
			start := time.Now()
			switch p {
			case "a":
				fmt.Fprintf(stdout, "panel (a): step times, profile %s\n", *profile)
				tab, err = mechanism.StepTime(be, stepCfg, stderr)
				file = mechanism.StepTimeFile
			case "b":
				tab, err = mechanism.Trace(be, mechanism.DefaultTrace)
				file = mechanism.TraceFile
			case "c":
				tab, err = mechanism.Agreement(be, agreeCfg)
				file = mechanism.AgreementFile
			}
			if err != nil {
				return err
			}
			profileNote := "n/a (exact computation)"
			if p == "a" {
				profileNote = *profile
			}
			report.Provenance(tab, be, profileNote, strings.TrimSpace(command), time.Now())
			path := filepath.Join(*out, file)
			if err := tab.Write(path); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "panel (%s): wrote %s (%d rows, %s)\n", p, path, len(tab.Rows), time.Since(start).Round(time.Millisecond))
		}
	}
	tables, err := mechanism.ReadTables(*out)
	if err != nil {
		return err
	}
	paths, err := mechanism.Figure(tables, *out)
	if err != nil {
		return err
	}
	for _, path := range paths {
		fmt.Fprintf(stdout, "figure: wrote %s\n", path)
	}
	return nil
}
