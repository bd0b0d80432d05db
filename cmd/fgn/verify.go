package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/fgn-paper/fgn/experiments/artifact"
)

// subcommands are the fgn subcommands a claim of artifact.yaml may run (those run dispatches).
var subcommands = []string{"train", "figure", "headopt", "reproduce", "verify"}

// runVerify implements "fgn verify": it checks every claim of artifact.yaml in a profile and
// writes the result table as <out>/verify_<profile>.md and .json.
func runVerify(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("verify", stderr)
	profile := fs.String("profile", "quick", "verification profile: quick (CPU), full (the paper's protocol, meant for one GPU), or another profile of the manifest")
	manifest := fs.String("artifact", "artifact.yaml", "the artifact manifest; commands run in its directory")
	out := fs.String("out", "figures", "output directory of the claims' commands and of verify_<profile>.md/.json")
	fgnPath := fs.String("fgn", "", "fgn executable the claims run (default: this executable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("verify: unexpected arguments %q", fs.Args())
	}
	a, err := artifact.Load(*manifest, subcommands)
	if err != nil {
		return err
	}
	exe := *fgnPath
	if exe == "" {
		if exe, err = os.Executable(); err != nil {
			return fmt.Errorf("verify: locating the fgn executable: %w (use --fgn)", err)
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
