package main

import (
	"fmt"
	"io"

	"github.com/fgn-paper/fgn/fgn/backend"
	"github.com/fgn-paper/fgn/internal/buildinfo"
)

const versionHelp = `usage: fgn version [flags]

Prints the versions of this build: the fgn module's version and VCS revision (recorded by "go
build" in a checkout, not by "go run"), the Go toolchain, GoMLX, compute and go-xla, the build
settings, the code identity fgn reproduce records in its stamps, and the backend
(--backend, else GOMLX_BACKEND) with its device.
`

// runVersion is the "version" subcommand.
func runVersion(args []string, stdout io.Writer) error {
	c := newCommand("version", versionHelp, stdout)
	backendFlag := c.backendFlag()
	if err := c.parse(args); err != nil {
		return err
	}
	if err := ready(); err != nil {
		return err
	}
	be, err := newBackend(*backendFlag)
	if err != nil {
		return err
	}
	defer be.Finalize()
	info, err := buildinfo.Read()
	if err != nil {
		return err
	}
	code, err := buildinfo.Code()
	if err != nil {
		return err
	}
	revision := "not recorded"
	if info.Revision != "" {
		revision = info.Revision
		if info.Modified == "true" {
			revision += " (with uncommitted changes)"
		}
	}
	fmt.Fprintf(stdout, "fgn %s (module %s)\nrevision: %s\ngo: %s\n", info.Version, buildinfo.Module, revision, info.GoVersion)
	for _, dep := range []string{buildinfo.GoMLX, buildinfo.Compute, buildinfo.GoXLA} {
		fmt.Fprintf(stdout, "%s: %s\n", dep, info.Deps[dep])
	}
	fmt.Fprintf(stdout, "build: %v\ncode: %s\nbackend: %s\n", info.Settings, code, backend.Describe(be))
	return nil
}
