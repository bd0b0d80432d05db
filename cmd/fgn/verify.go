package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/fgn-paper/fgn/experiments/artifact"
	"github.com/fgn-paper/fgn/internal/cli"
)

// subcommands are the fgn subcommands a claim of artifact.yaml may run (those run dispatches).
var subcommands = []string{"train", "figure", "headopt", "reproduce", "verify"}

const verifyHelp = `usage: fgn verify [flags]

Checks every claim of the artifact manifest (artifact.yaml): each claim's command (an fgn
subcommand or a go test of the library) runs in the manifest's directory in the chosen profile,
its output (a test log's printed errors, or a CSV cell) is compared with the expected value and
tolerance, and the claim passes, fails, or is not run (with the reason: data it needs is absent,
or it belongs to another profile). A command shared by several claims runs once.

The commands write under --out only (default results/verify/, ignored by git), never into the
committed figures/. The table of results goes to stdout and to <out>/verify_<profile>.md and
.json. The exit status is 0 when no claim failed, 1 when one did, and 2 for a configuration
error found before any claim runs (an unknown profile, an unusable backend, a missing tool).
The claims' commands use GOMLX_BACKEND like every fgn command.
`

// runVerify implements "fgn verify": it checks every claim of artifact.yaml in a profile and
// writes the result table as <out>/verify_<profile>.md and .json.
func runVerify(args []string, stdout, stderr io.Writer) error {
	c := newCommand("verify", verifyHelp, stdout)
	profile := c.profileFlag()
	manifest := c.String("artifact", "artifact.yaml", "the artifact manifest; commands run in its directory")
	out := c.String("out", "results/verify", "output directory of the claims' commands and of verify_<profile>.md/.json")
	fgnPath := c.String("fgn", "", "fgn executable the claims run (default: this executable)")
	if err := c.parse(args); err != nil {
		return err
	}
	if err := checkOutDir("out", *out); err != nil {
		return err
	}
	a, err := artifact.Load(*manifest, subcommands)
	if err != nil {
		return cli.ConfigError{Err: err}
	}
	if _, ok := a.Profiles[*profile]; !ok {
		names := slices.Sorted(maps.Keys(a.Profiles))
		return cli.Usagef("verify: --profile %s: the manifest has profiles %s", *profile, strings.Join(names, ", "))
	}
	if err := ready(); err != nil {
		return err
	}
	exe := *fgnPath
	if exe == "" {
		if exe, err = os.Executable(); err != nil {
			return cli.ConfigError{Err: fmt.Errorf("verify: locating the fgn executable: %w (use --fgn)", err)}
		}
	}
	absOut, err := filepath.Abs(*out)
	if err != nil {
		return err
	}
	results, err := artifact.Verify(context.Background(), a, artifact.Options{
		Profile: *profile, Out: absOut, Dir: filepath.Dir(*manifest),
		Subcommands: subcommands, FGN: exe, Log: stdout,
	})
	var configErr *artifact.ConfigError // the backend or a program the claims run is unusable
	if errors.As(err, &configErr) {
		return cli.ConfigError{Err: err}
	}
	if err != nil {
		return err
	}
	base := filepath.Join(absOut, "verify_"+*profile)
	if err := artifact.WriteFiles(base, *profile, results); err != nil {
		return err
	}
	if err := artifact.WriteMarkdown(stdout, *profile, results); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nwrote %s.md and %s.json\n", base, base)
	if s := artifact.Summarize(results); s.Fail > 0 {
		return fmt.Errorf("verify: %d of %d claims failed (%s)", s.Fail, len(results), s)
	}
	return nil
}
