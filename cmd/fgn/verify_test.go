package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
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

// TestArtifactEnvironment checks that artifact.yaml states the versions this repository builds
// with: environment's Go toolchain and modules are go.mod's, its tools .ci/install.sh's pins, and
// no comment restates a version (the header cites them from environment); and that the paper is
// cited by title, authors and a public identifier with its address.
func TestArtifactEnvironment(t *testing.T) {
	repo := root(t)
	a, err := artifact.Load(filepath.Join(repo, "artifact.yaml"), subcommands)
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.TrimPrefix(goModToolchain(t, repo), "go"); a.Environment.Go != want {
		t.Errorf("artifact.yaml: environment.go %q, go.mod's toolchain is go%s", a.Environment.Go, want)
	}
	gomod, err := os.ReadFile(filepath.Join(repo, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	required := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^\s*(?:require\s+)?(\S+) (v\S+)(?: // indirect)?$`).FindAllStringSubmatch(string(gomod), -1) {
		required[m[1]] = m[2]
	}
	if len(a.Environment.Modules) == 0 {
		t.Error("artifact.yaml: environment.modules is empty")
	}
	for module, version := range a.Environment.Modules {
		if required[module] != version {
			t.Errorf("artifact.yaml: environment.modules %s %s, go.mod requires %q", module, version, required[module])
		}
	}
	pins := installPins(t, repo)
	for tool, version := range a.Environment.Tools {
		if pins[tool] != version {
			t.Errorf("artifact.yaml: environment.tools %s %s, .ci/install.sh installs %q", tool, version, pins[tool])
		}
	}
	data, err := os.ReadFile(filepath.Join(repo, "artifact.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	version := regexp.MustCompile(`\bv[0-9]+\.[0-9]+\.[0-9]+|\bgo1\.[0-9]+`)
	for n, line := range strings.Split(string(data), "\n") {
		if comment, ok := strings.CutPrefix(strings.TrimSpace(line), "#"); ok && version.MatchString(comment) {
			t.Errorf("artifact.yaml:%d: a comment states a version (%s); environment holds them", n+1, version.FindString(comment))
		}
	}
	p := a.Paper
	if p.Title == "" || len(p.Authors) == 0 || !regexp.MustCompile(`^(arXiv:[0-9]{4}\.[0-9]{4,5}|doi:10\.\S+)$`).MatchString(p.Identifier) ||
		!strings.HasPrefix(p.URL, "https://") {
		t.Errorf("artifact.yaml: paper %+v: want a title, authors, an arXiv or DOI identifier and its https address", p)
	}
}
