// Package buildinfo describes the running fgn build: its versions (for "fgn version") and the
// identity of the code that determines its outputs (for the up-to-date stamps of fgn
// reproduce).
package buildinfo

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/fgn-paper/fgn/internal/filehash"
)

// Module is the path of this Go module.
const Module = "github.com/fgn-paper/fgn"

// Dependencies whose versions "fgn version" reports.
const (
	GoMLX   = "github.com/gomlx/gomlx"
	Compute = "github.com/gomlx/compute"
	GoXLA   = "github.com/gomlx/go-xla"
)

// Info is what the running binary records about its build.
type Info struct {
	// Version is the main module's version ("(devel)" for a build from a checkout).
	Version string
	// Revision is the VCS revision the binary was built from and Modified whether the checkout
	// had uncommitted changes; both are empty when the build recorded none ("go run" records
	// none).
	Revision, Modified string
	// GoVersion is the toolchain that built the binary.
	GoVersion string
	// Deps maps module paths to their versions.
	Deps map[string]string
	// Settings are the build settings other than the VCS ones (GOEXPERIMENT, CGO_ENABLED,
	// GOARCH, ...), as "key=value".
	Settings []string
}

// Read returns the running binary's build information.
func Read() (Info, error) {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Info{}, errors.New("buildinfo: the binary carries no build information")
	}
	info := Info{Version: bi.Main.Version, GoVersion: bi.GoVersion, Deps: map[string]string{}}
	for _, d := range bi.Deps {
		if d.Replace != nil {
			d = d.Replace
		}
		info.Deps[d.Path] = d.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			info.Revision = s.Value
		case "vcs.modified":
			info.Modified = s.Value
		case "vcs", "vcs.time":
		default:
			info.Settings = append(info.Settings, s.Key+"="+s.Value)
		}
	}
	return info, nil
}

// Code returns the identity of the code that determines the binary's outputs:
//
//   - the source: when the module's source tree the binary was compiled from is on this
//     machine (found from this file's compile-time path; absent with -trimpath), the sha256 of
//     its non-test Go files, go.mod and go.sum, as they are now. It does not depend on how the
//     binary was made ("go run" and "go build" of one tree agree) nor on edits outside the
//     compiled code (documentation, notebooks, figures). Otherwise the VCS revision the build
//     recorded (with "+modified" for a modified checkout), and failing that the sha256 of the
//     executable;
//   - the toolchain and the build settings (GOEXPERIMENT=simd among them), which change the
//     compiled code and its speed.
func Code() (string, error) {
	info, err := Read()
	if err != nil {
		return "", err
	}
	var source string
	if root, ok := sourceRoot(); ok {
		sum, err := TreeHash(root)
		if err != nil {
			return "", err
		}
		source = "source sha256:" + sum
	} else if info.Revision != "" && info.Modified != "true" {
		source = "revision " + info.Revision
	} else {
		exe, err := os.Executable()
		if err != nil {
			return "", fmt.Errorf("buildinfo: locating the executable: %w", err)
		}
		sum, err := filehash.SHA256(exe)
		if err != nil {
			return "", fmt.Errorf("buildinfo: %w", err)
		}
		source = "executable sha256:" + sum
	}
	return fmt.Sprintf("%s; %s; %s", source, info.GoVersion, strings.Join(info.Settings, " ")), nil
}

// sourceRoot returns the root of this module's source tree the binary was compiled from, when
// it is on this machine.
func sourceRoot() (string, bool) {
	_, file, _, ok := runtime.Caller(0)
	if !ok || !filepath.IsAbs(file) {
		return "", false
	}
	root := filepath.Dir(filepath.Dir(filepath.Dir(file))) // <root>/internal/buildinfo/buildinfo.go
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return "", false
	}
	first, _, _ := strings.Cut(string(mod), "\n")
	return root, strings.TrimSpace(first) == "module "+Module
}

// TreeHash returns the sha256 (hex) of the compiled source of the module rooted at root: the
// paths and contents of its Go files other than tests, go.mod and go.sum, in lexical order.
// Directories Go ignores (names starting with "." or "_", and testdata) are skipped.
func TreeHash(root string) (string, error) {
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if name == "go.mod" || name == "go.sum" || strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("buildinfo: hashing the source tree: %w", err)
	}
	slices.Sort(files)
	h := sha256.New()
	for _, f := range files {
		rel, err := filepath.Rel(root, f)
		if err != nil {
			return "", err
		}
		sum, err := filehash.SHA256(f)
		if err != nil {
			return "", fmt.Errorf("buildinfo: hashing the source tree: %w", err)
		}
		fmt.Fprintf(h, "%s %s\n", sum, filepath.ToSlash(rel))
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
