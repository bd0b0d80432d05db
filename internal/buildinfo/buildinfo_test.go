package buildinfo

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTreeHash checks which edits change the source hash: those to compiled Go files, go.mod
// and go.sum, and not those to tests, documentation, outputs or directories Go ignores.
func TestTreeHash(t *testing.T) {
	base := map[string]string{
		"go.mod":          "module example.com/m\n",
		"go.sum":          "",
		"a.go":            "package m\n",
		"sub/b.go":        "package sub\n",
		"sub/b_test.go":   "package sub\n",
		"README.md":       "# m\n",
		"testdata/c.go":   "package c\n",
		".hidden/d.go":    "package d\n",
		"results/out.csv": "x\n1\n",
	}
	for _, tc := range []struct {
		name, file, content string
		changes             bool
	}{
		{"compiled Go file edited", "sub/b.go", "package sub // edited\n", true},
		{"Go file added", "sub/new.go", "package sub\n", true},
		{"go.sum edited", "go.sum", "example.com/x v1.0.0 h1:abc=\n", true},
		{"test edited", "sub/b_test.go", "package sub // edited\n", false},
		{"documentation edited", "README.md", "# m, edited\n", false},
		{"testdata edited", "testdata/c.go", "package c // edited\n", false},
		{"hidden directory edited", ".hidden/d.go", "package d // edited\n", false},
		{"output written", "results/new.csv", "y\n2\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			for name, content := range base {
				write(t, filepath.Join(root, name), content)
			}
			before, err := TreeHash(root)
			if err != nil {
				t.Fatal(err)
			}
			write(t, filepath.Join(root, tc.file), tc.content)
			after, err := TreeHash(root)
			if err != nil {
				t.Fatal(err)
			}
			if (before != after) != tc.changes {
				t.Errorf("hash changed: %v, want %v", before != after, tc.changes)
			}
		})
	}
}

// TestCodeNamesTheSource checks that a test binary, built from this checkout, identifies its
// code by the source tree's hash.
func TestCodeNamesTheSource(t *testing.T) {
	root, ok := sourceRoot()
	if !ok {
		t.Skip("built without the source tree's paths (-trimpath)")
	}
	sum, err := TreeHash(root)
	if err != nil {
		t.Fatal(err)
	}
	code, err := Code()
	if err != nil {
		t.Fatal(err)
	}
	if want := "source sha256:" + sum + "; "; !strings.HasPrefix(code, want) {
		t.Errorf("Code() = %q, want it to start with %q", code, want)
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
