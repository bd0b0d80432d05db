// Command fgn is the command-line front end of the FGN reference implementation.
//
// Subcommands:
//
//	fgn train     train Adam, SGN and/or FGN on features (.npy files, a feature cache, or a
//	              synthetic Gaussian mixture) and write the trace CSVs
//	fgn figure    regenerate a figure of the paper (mechanism: Figure 1) as CSV files and
//	              SVG/PNG/PDF
//	fgn headopt   frozen-feature head optimisation on Cars196 features (Figure 2, Table 1):
//	              a resumable multi-seed sweep; "fgn headopt select" chooses the hyper-parameters
//	fgn reproduce regenerate every figure and table of the paper into figures/ in one profile
//	              (smoke, quick or full), skipping what is up to date
//	fgn verify    check every claim of artifact.yaml and write the table of results
//
// The backend is chosen by GOMLX_BACKEND (default: the pure-Go backend); see package
// github.com/fgn-paper/fgn/fgn/backend.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "fgn:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stdout)
		return nil
	}
	switch args[0] {
	case "train":
		return runTrain(args[1:], stdout, stderr)
	case "figure":
		return runFigure(args[1:], stdout, stderr)
	case "headopt":
		return runHeadopt(args[1:], stdout, stderr)
	case "reproduce":
		return runReproduce(args[1:], stdout, stderr)
	case "verify":
		return runVerify(args[1:], stdout, stderr)
	default:
		usage(stderr)
		return fmt.Errorf("unknown subcommand %q", args[0])
	}
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage: fgn <subcommand> [flags]

subcommands:
  train     train Adam, SGN and/or FGN on features and write trace CSVs (fgn train --help)
  figure    regenerate a figure: fgn figure mechanism --profile quick|full|smoke (Figure 1)
  headopt   Cars196 head optimisation, Figure 2 and Table 1: fgn headopt --features DIR | --synthetic --profile quick|full|smoke
  reproduce regenerate every figure and table into figures/: fgn reproduce [--profile smoke|quick|full] [--out DIR] [--features DIR] [--force]
  verify    check every claim of artifact.yaml: fgn verify --profile quick|full [--artifact F] [--out DIR]

GOMLX_BACKEND selects the backend: "go" (default), "xla:cuda", or "xla:/abs/path/pjrt_plugin.so".
`)
}

func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("fgn "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}
