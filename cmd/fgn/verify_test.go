package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/fgn-paper/fgn/experiments/artifact"
)

// TestArtifactCommandsExist checks that every claim of the real artifact.yaml runs a command
// that exists: an fgn subcommand that run dispatches,
// or a go test whose -run pattern matches exactly one test function of the named package.
func TestArtifactCommandsExist(t *testing.T) {
	a, err := artifact.Load("../../artifact.yaml", subcommands)
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string][]string{} // package directory → its test function names
	for _, c := range a.Claims {
		cmd, err := artifact.ParseCommand(c.Command, subcommands)
		if err != nil {
			t.Fatalf("claim %s: %v", c.ID, err)
		}
		if cmd.Program == "fgn" {
			err := run([]string{cmd.Args[0], "-h"}, io.Discard, io.Discard)
			dispatched := err == nil || !strings.Contains(err.Error(), "unknown subcommand")
			if !dispatched {
				t.Errorf("claim %s: subcommand %q is not dispatched by fgn", c.ID, cmd.Args[0])
			}
			continue
		}
		dir := filepath.Join("../..", cmd.TestPackage)
		names, ok := tests[dir]
		if !ok {
			names = testFunctions(t, dir)
			tests[dir] = names
		}
		re := regexp.MustCompile(cmd.TestRun)
		var matched []string
		for _, n := range names {
			if re.MatchString(n) {
				matched = append(matched, n)
			}
		}
		if len(matched) != 1 {
			t.Errorf("claim %s: -run %q matches tests %v of %s, want exactly one", c.ID, cmd.TestRun, matched, cmd.TestPackage)
		}
	}
}

// testFunctions returns the names of the Test functions in the _test.go files of dir.
func testFunctions(t *testing.T, dir string) []string {
	t.Helper()
	matches, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil || len(matches) == 0 {
		t.Fatalf("no test files in %s (%v)", dir, err)
	}
	var names []string
	fset := token.NewFileSet()
	for _, path := range matches {
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Test") {
				names = append(names, fn.Name.Name)
			}
		}
	}
	return names
}
