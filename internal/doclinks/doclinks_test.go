package doclinks

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// root is the repository root, relative to this package.
const root = "../.."

// TestRepositoryDocs checks every relative link and anchor of the documents an evaluator
// reads, and the repository files and README sections artifact.yaml names.
func TestRepositoryDocs(t *testing.T) {
	for _, doc := range []string{"README.md", "ARTIFACT.md", "BENCHMARKS.md", "CHANGELOG.md", "figures/README.md", "notebooks/README.md", "data/fetch/README.md", "data/digits/README.md", "experiments/zoo/README.md"} {
		problems, err := CheckMarkdown(filepath.Join(root, doc))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range problems {
			t.Errorf("%s: %s", doc, p)
		}
	}
	// artifact.yaml names Markdown files (relative to the repository root), sections as
	// FILE.md#anchor, and sections by title as README, "Title".
	yaml, err := os.ReadFile(filepath.Join(root, "artifact.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	refs := regexp.MustCompile(`[\w./-]+\.md(?:#[\w-]+)?`).FindAllString(string(yaml), -1)
	if len(refs) == 0 {
		t.Fatal("artifact.yaml names no document: the pattern is out of date")
	}
	for _, m := range regexp.MustCompile(`([\w./-]*README)(?:\.md)?, "([^"]+)"`).FindAllStringSubmatch(string(yaml), -1) {
		refs = append(refs, m[1]+".md#"+Anchor(m[2]))
	}
	for _, ref := range refs {
		if p := CheckTarget(root, ref); p != "" {
			t.Errorf("artifact.yaml: %s", p)
		}
	}
}

func TestAnchor(t *testing.T) {
	for _, tc := range []struct{ heading, want string }{
		{"Fetching the Cars196 data", "fetching-the-cars196-data"},
		{"Known GoMLX v0.28.3 limitations handled here", "known-gomlx-v0283-limitations-handled-here"},
		{"FGN: Fast Gauss-Newton for multiclass cross-entropy, in Go", "fgn-fast-gauss-newton-for-multiclass-cross-entropy-in-go"},
		{"data/fetch: the Cars196 feature cache", "datafetch-the-cars196-feature-cache"},
		{"Figure 1(a) on a CPU", "figure-1a-on-a-cpu"},
		{"The `SIMD` build", "the-simd-build"},
		{"See [the paper](https://example.com) here", "see-the-paper-here"},
		{"Speed (measured here)", "speed-measured-here"},
		{"snake_case and Ünïcode", "snake_case-and-ünïcode"},
	} {
		if got := Anchor(tc.heading); got != tc.want {
			t.Errorf("Anchor(%q) = %q, want %q", tc.heading, got, tc.want)
		}
	}
}

func TestAnchorsAndLinks(t *testing.T) {
	doc := "# Title\n\n## Usage\n\n```sh\n# not a heading [x](missing.md)\n```\n\n## Usage\n\n" +
		"See [usage](#usage), [the other](#usage-1), ![img](fig.png \"a figure\") and `[code](not-a-link.md)`.\n\n" +
		"[ref]: other.md#part\n"
	anchors := Anchors(doc)
	for _, a := range []string{"title", "usage", "usage-1"} {
		if !anchors[a] {
			t.Errorf("Anchors lacks %q: %v", a, anchors)
		}
	}
	if anchors["not-a-heading-xmissingmd"] {
		t.Error("a comment in a code block was taken for a heading")
	}
	if got, want := Links(doc), []string{"#usage", "#usage-1", "fig.png", "other.md#part"}; !slices.Equal(got, want) {
		t.Errorf("Links = %q, want %q", got, want)
	}
}

func TestCheckTarget(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.md"), []byte("# A\n\n## Part one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ target, want string }{
		{"a.md", ""},
		{"a.md#part-one", ""},
		{"https://example.com/x#y", ""},
		{"b.md", "b.md does not exist"},
		{"a.md#part-two", "a.md has no heading with anchor #part-two"},
		{".#x", "not a Markdown file"},
	} {
		got := CheckTarget(dir, tc.target)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("CheckTarget(%q) = %q, want %q", tc.target, got, tc.want)
		}
	}
}

// TestReadme checks what README promises a newcomer: at most 150 lines, opening with the two
// commands (the main job and the tests) under go.mod's toolchain, and GOTOOLCHAIN exported once
// rather than repeated in later commands.
func TestReadme(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	toolchain := regexp.MustCompile(`(?m)^toolchain (go\S+)$`).FindSubmatch(gomod)
	if toolchain == nil {
		t.Fatal("go.mod has no toolchain line")
	}
	lines := strings.Split(strings.TrimRight(string(readme), "\n"), "\n")
	if len(lines) > 150 {
		t.Errorf("README has %d lines, want at most 150", len(lines))
	}
	env := "GOTOOLCHAIN=" + string(toolchain[1])
	for i, want := range []string{env + " GOEXPERIMENT=simd go run ./cmd/fgn reproduce", env + " go test ./..."} {
		if len(lines) < 4+i || !strings.HasPrefix(lines[3+i], want) {
			t.Errorf("README line %d does not start with %q", 4+i, want)
		}
	}
	if n := strings.Count(string(readme), "export "+env); n != 1 {
		t.Errorf("README exports %s %d times, want once", env, n)
	}
	for i, l := range lines[5:] {
		if strings.Contains(l, env+" ") && strings.Contains(l, "go ") {
			t.Errorf("README line %d repeats %s in a command: %s", i+6, env, l)
		}
	}
}
