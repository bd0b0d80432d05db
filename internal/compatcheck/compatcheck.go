// Package compatcheck holds what the compat tests of the module's packages share. A package that
// works around upstream bugs lists them in its compat.go, one constant compat<Name> per entry in a
// const block, each with a reproduction test TestCompatX that passes while the bug is present;
// call sites cite their entry by name ("see compat.go: compat<Name>"). Fixed and Present report a
// reproduction's outcome, WhileLoop builds the loop that reproductions of closure bugs need, and
// Citations checks the citations across the module.
package compatcheck

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
)

// entryLine matches an entry of a compat.go: the constant's name and its value.
var entryLine = regexp.MustCompile(`(?m)^\t(compat[A-Z]\w*) = "([^"]*)"`)

// entries returns the entries (name → value) of the compat.go in dir.
func entries(dir string) (map[string]string, error) {
	src, err := os.ReadFile(filepath.Join(dir, "compat.go"))
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, m := range entryLine.FindAllStringSubmatch(string(src), -1) {
		out[m[1]] = m[2]
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no entry compat<Name> = \"…\" found", filepath.Join(dir, "compat.go"))
	}
	return out, nil
}

// name returns the name of the entry of ./compat.go (the package under test) whose value is entry.
func name(entry string) string {
	all, err := entries(".")
	if err != nil {
		return entry
	}
	for n, v := range all {
		if v == entry {
			return n
		}
	}
	return entry
}

// Fixed fails the test of the compat.go entry whose value is entry, naming what to delete: its
// reproduction no longer shows the bug (what says what now works).
func Fixed(t *testing.T, entry, what string) {
	t.Helper()
	t.Fatalf("the upstream bug of compat.go's entry %q is fixed (%s): delete the entry and the workarounds "+
		"that cite it (grep -rn '%s' .), then this test", entry, what, name(entry))
}

// Present fails the test unless err (the reproduction's error) shows entry's bug: nil means the
// bug is fixed (Fixed, with fixedWhat); an error without want is another failure than the one
// compat.go documents.
func Present(t *testing.T, entry string, err error, want, fixedWhat string) {
	t.Helper()
	switch {
	case err == nil:
		Fixed(t, entry, fixedWhat)
	case !strings.Contains(err.Error(), want):
		t.Fatalf("compat.go's entry %q: the reproduction fails with %v, not with the documented %q", entry, err, want)
	default:
		first, _, _ := strings.Cut(err.Error(), "\n")
		t.Logf("still present: %s", first)
	}
}

// WhileLoop returns the outputs (k, x) of a While loop over the state (k int32, x) that applies
// body to x three times.
func WhileLoop(x *Node, body func(*Node) *Node) []*Node {
	g := x.Graph()
	three := Const(g, int32(3))
	params := func(g *Graph) (*Node, *Node) {
		return Parameter(g, "k", shapes.Make(dtypes.Int32)), Parameter(g, "x", x.Shape())
	}
	cond := NewClosure(g, func(g *Graph) []*Node {
		k, _ := params(g)
		return []*Node{LessThan(k, three)}
	})
	loop := NewClosure(g, func(g *Graph) []*Node {
		k, v := params(g)
		return []*Node{AddScalar(k, 1), body(v)}
	})
	return While(cond, loop, Const(g, int32(0)), x)
}

// Citations checks, from the test of a package with a compat.go (run in its directory), that
// every name compat<Name> cited in the module's Go and Markdown files is an entry of one of the
// module's compat.go files, and that every entry of this package's compat.go is cited outside
// the compat files (compat*.go) of the packages that have one.
func Citations(t *testing.T) {
	t.Helper()
	own, err := entries(".")
	if err != nil {
		t.Fatal(err)
	}
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	withEntries := map[string]bool{}
	err = walk(root, func(path string) error {
		if filepath.Base(path) != "compat.go" {
			return nil
		}
		all, err := entries(filepath.Dir(path))
		if err != nil {
			return err
		}
		withEntries[filepath.Dir(path)] = true
		for n := range all {
			known[n] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	cited := map[string]int{}
	cite := regexp.MustCompile(`\bcompat[A-Z]\w*`)
	err = walk(root, func(path string) error {
		name := filepath.Base(path)
		if strings.HasPrefix(name, "compat") && withEntries[filepath.Dir(path)] {
			return nil
		}
		text, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, c := range cite.FindAllString(string(text), -1) {
			if !known[c] {
				t.Errorf("%s cites %s, which is not an entry of a compat.go", path, c)
				continue
			}
			cited[c]++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for n := range own {
		if cited[n] == 0 {
			t.Errorf("compat.go's entry %s is cited nowhere (delete it, or cite it where its workaround is)", n)
		}
	}
}

// walk calls fn with every Go and Markdown file below root, hidden directories left out.
func walk(root string, fn func(path string) error) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !(strings.HasSuffix(path, ".go") || strings.HasSuffix(path, ".md")) {
			return nil
		}
		return fn(path)
	})
}

// moduleRoot returns the directory of the go.mod above the working directory.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}
