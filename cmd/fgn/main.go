// Command fgn is the command-line front end of the FGN reference implementation.
//
// Subcommands:
//
//	fgn reproduce regenerate every figure and table of the paper in one profile (smoke, quick
//	              or full), skipping what is up to date; into results/ unless --out says
//	              otherwise (--out figures refreshes the committed figures)
//	fgn verify    check every claim of artifact.yaml and write the table of results
//	fgn train     train Adam, SGN and/or FGN on features (.npy files, a feature cache, or a
//	              synthetic Gaussian mixture) and write the trace CSVs
//	fgn figure    regenerate a figure of the paper (mechanism: Figure 1) as CSV files and
//	              SVG/PNG/PDF
//	fgn headopt   frozen-feature head optimisation (Figure 2, Table 1): a resumable multi-seed
//	              sweep; "fgn headopt select" chooses the hyper-parameters
//	fgn version   the versions of the build (module, VCS revision, Go, GoMLX, compute) and the
//	              backend
//
// Every subcommand takes --help. A usage error (an unknown flag, an invalid value) and a
// configuration error (an unusable backend, a missing tool) stop the command before any work
// with one message and exit status 2; other failures exit with status 1.
//
// The backend is chosen by --backend or GOMLX_BACKEND (default: the pure-Go backend); see
// package github.com/fgn-paper/fgn/fgn/backend.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	"github.com/fgn-paper/fgn/experiments/train"
	"github.com/fgn-paper/fgn/internal/cli"
)

func main() {
	limitHeap()
	os.Exit(cli.Exit(run(os.Args[1:], os.Stdout, os.Stderr), os.Stderr, "fgn"))
}

// limitHeap sets the Go heap's soft limit to the memory available on the machine
// (train.AvailableMemory) unless GOMEMLIMIT sets one, so that near it the collector runs more
// often instead of letting garbage grow the heap to twice what is live: training refuses a run
// whose live memory is estimated to exceed the available memory (train.CheckMemory), and the
// limit keeps the garbage of one that fits from exceeding it.
func limitHeap() {
	if _, set := os.LookupEnv("GOMEMLIMIT"); set {
		return
	}
	if available, ok := train.AvailableMemory(); ok {
		debug.SetMemoryLimit(available)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		usage(stderr)
		return cli.Usagef("no subcommand")
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		usage(stdout)
		return nil
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
	case "version":
		return runVersion(args[1:], stdout)
	}
	return cli.Usagef("unknown subcommand %q (fgn --help lists them)", args[0])
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage: fgn <subcommand> [flags]

subcommands:
  reproduce regenerate every figure and table of the paper (into results/; --out figures refreshes the committed ones)
  verify    check every claim of artifact.yaml and write the table of results (into results/verify/)
  train     train Adam, SGN and/or FGN on features and write trace CSVs
  figure    regenerate a figure: fgn figure mechanism (Figure 1)
  headopt   head optimisation on frozen features (Figure 2 and Table 1); fgn headopt select chooses α and λ
  version   the versions of the build and the backend

"fgn <subcommand> --help" shows a subcommand's flags and their defaults.

Backend: --backend (train, figure, headopt, reproduce, version) or, without it, GOMLX_BACKEND:
"go" (the pure-Go backend, the default), "xla:cpu" or "xla:cuda" (an installed PJRT plugin),
or "xla:/abs/path/pjrt_plugin.so". PJRT plugins are never downloaded.
`)
}

// command is a subcommand's flag set and help text.
type command struct {
	*flag.FlagSet
	stdout io.Writer
	help   string // the text before the flags in --help
}

// newCommand returns the flag set of "fgn name", whose --help shows help and then the flags
// with their defaults.
func newCommand(name, help string, stdout io.Writer) *command {
	fs := flag.NewFlagSet("fgn "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // parse reports errors once, through its return value
	return &command{FlagSet: fs, stdout: stdout, help: help}
}

// parse parses args. --help prints the full help to stdout and returns flag.ErrHelp; an
// invalid flag or any positional argument (unless positional) is a usageError.
func (c *command) parse(args []string) error {
	err := c.Parse(args)
	sub := strings.TrimPrefix(c.Name(), "fgn ")
	switch {
	case errors.Is(err, flag.ErrHelp):
		c.printHelp(c.stdout)
		return err
	case err != nil:
		return cli.Usagef("%s: %v (%s --help lists the flags)", sub, err, c.Name())
	case c.NArg() > 0:
		return cli.Usagef("%s: unexpected argument %q (%s --help lists the flags)", sub, c.Arg(0), c.Name())
	}
	return nil
}

func (c *command) printHelp(w io.Writer) {
	fmt.Fprint(w, c.help)
	fmt.Fprint(w, "\nflags:\n")
	c.SetOutput(w)
	c.PrintDefaults()
	c.SetOutput(io.Discard)
}

// checkOnly, set by the documentation's test, makes every subcommand stop once its command line
// is validated, before any work, returning errCheckOnly (see ready).
var checkOnly bool

// errCheckOnly is what a subcommand returns in place of its work under checkOnly.
var errCheckOnly = errors.New("the command line is valid (check only)")

// ready is called by every subcommand once its command line is validated and before any work
// (building a backend, reading data, writing files): nil, or errCheckOnly under checkOnly.
func ready() error {
	if checkOnly {
		return errCheckOnly
	}
	return nil
}

// set reports whether the flag name was given on the command line.
func (c *command) set(name string) bool {
	given := false
	c.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}
