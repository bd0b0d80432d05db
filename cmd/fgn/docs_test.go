package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// docFiles are the documents whose commands TestDocCommands checks, relative to the repository
// root: the READMEs a user follows and the examples' doc comments.
var docFiles = []string{
	"README.md", "ARTIFACT.md", "figures/README.md", "notebooks/README.md", "data/fetch/README.md",
	"examples/probe/main.go", "examples/digits/main.go", "examples/cnn/main.go",
}

// root returns the repository root, an absolute path (the tests start in this package's
// directory, two levels below it; the commands' relative paths are relative to the root).
func root(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// docCommand is a command written in a document: in a shell code block (a line, with its
// backslash continuations), in a Go doc comment's code block, or in inline code that starts as
// a command does.
type docCommand struct {
	file string
	line int
	text string
}

func (c docCommand) String() string { return fmt.Sprintf("%s:%d: %s", c.file, c.line, c.text) }

var (
	codeSpan = regexp.MustCompile("`([^`]+)`")
	// envAssignment is a leading NAME=value of a shell command.
	envAssignment = regexp.MustCompile(`^[A-Z_][A-Z0-9_]*=`)
)

// extractCommands returns the commands of a document: Markdown (shell code blocks, and inline
// code starting with a command) or Go (the indented lines of doc comments).
func extractCommands(file string, data []byte) []docCommand {
	var out []docCommand
	var block string // the fenced block's info string; "" outside one
	inBlock := false
	add := func(line int, text string) {
		if text = strings.TrimSpace(text); text != "" {
			out = append(out, docCommand{file, line, text})
		}
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	pending := -1 // the index in out of a command continued by a trailing backslash
	// Inline code may run over several lines of a paragraph: paragraphs are read whole.
	var para strings.Builder
	paraLine := 0
	flush := func() {
		for _, m := range codeSpan.FindAllStringSubmatch(para.String(), -1) {
			if isCommand(m[1]) {
				add(paraLine, strings.Join(strings.Fields(m[1]), " "))
			}
		}
		para.Reset()
	}
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasSuffix(file, ".go") {
			body, ok := strings.CutPrefix(line, "//\t")
			switch {
			case !ok:
			case strings.HasPrefix(body, " ") && len(out) > 0 && out[len(out)-1].line == n-1:
				out[len(out)-1].text += " " + strings.TrimSpace(body) // a continuation
				out[len(out)-1].line = n
			default:
				add(n, body)
			}
			continue
		}
		if fence, ok := strings.CutPrefix(strings.TrimSpace(line), "```"); ok {
			flush()
			inBlock, block = !inBlock, fence
			continue
		}
		if inBlock {
			if block != "sh" && block != "bash" {
				continue
			}
			text := strings.TrimSpace(stripComment(line))
			if pending >= 0 {
				out[pending].text += " " + text
			} else {
				out = append(out, docCommand{file, n, text})
				pending = len(out) - 1
			}
			if c := &out[pending]; strings.HasSuffix(c.text, "\\") {
				c.text = strings.TrimSpace(strings.TrimSuffix(c.text, "\\"))
			} else {
				if c.text == "" {
					out = out[:pending]
				}
				pending = -1
			}
			continue
		}
		if strings.TrimSpace(line) == "" {
			flush()
			continue
		}
		if para.Len() == 0 {
			paraLine = n
		}
		para.WriteString(line + " ")
	}
	flush()
	return out
}

// stripComment removes a shell comment (from a # that starts a word) from a line.
func stripComment(line string) string {
	for i := 0; i < len(line); i++ {
		if line[i] == '#' && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t') {
			return line[:i]
		}
	}
	return line
}

// goCommands are the go commands the documents may run ("go 1.27" is a go.mod line).
var goCommands = []string{"run", "test", "install", "build", "doc", "vet", "version", "env", "mod"}

// isCommand reports whether inline code reads as a command rather than as a name: it starts
// (after environment assignments) with a go command, bash, docker or a script path, or it is an fgn
// subcommand with at least one flag ("fgn train --help"; a bare "fgn headopt" names the
// subcommand in prose).
func isCommand(code string) bool {
	words := strings.Fields(code)
	for len(words) > 0 && envAssignment.MatchString(words[0]) {
		words = words[1:]
	}
	if len(words) < 2 {
		return false
	}
	switch words[0] {
	case "go":
		return slices.Contains(goCommands, words[1])
	case "bash", "docker":
		return true
	case "fgn":
		return slices.ContainsFunc(words[1:], func(w string) bool { return strings.HasPrefix(w, "-") })
	}
	return strings.HasPrefix(words[0], ".ci/") || strings.HasPrefix(words[0], "bench/")
}

// invocation is a documented command, classified.
type invocation struct {
	env  map[string]string // leading NAME=value assignments
	kind string            // "fgn", "go run", "go", "script", "export", "external"
	pkg  string            // go run: the package (./examples/cnn)
	args []string          // fgn: the subcommand and its arguments; go run: the program's arguments; go: go's
}

// externalPrograms are the programs outside this repository the documents run as they are; the
// test does not run them.
var externalPrograms = []string{"jupyter", "gonb", "pip", "apt-get", "python3"}

// classify splits a command into words (respecting quotes, dropping the optional-argument
// brackets of usage synopses and taking the first of A|B alternatives) and names its kind.
func classify(text string) (invocation, error) {
	words, err := shellWords(text)
	if err != nil {
		return invocation{}, err
	}
	inv := invocation{env: map[string]string{}}
	for len(words) > 0 && envAssignment.MatchString(words[0]) {
		name, value, _ := strings.Cut(words[0], "=")
		inv.env[name] = value
		words = words[1:]
	}
	if len(words) == 0 {
		return inv, fmt.Errorf("no command")
	}
	if words[0] == "docker" && len(words) > 1 && words[1] == "run" {
		// docker run [options] IMAGE COMMAND...: the command runs in the image.
		rest := words[2:]
		for len(rest) > 0 && strings.HasPrefix(rest[0], "-") {
			opt := rest[0]
			rest = rest[1:]
			if !strings.Contains(opt, "=") && slices.Contains([]string{"-p", "--gpus", "-v", "-e", "--name"}, opt) && len(rest) > 0 {
				rest = rest[1:]
			}
		}
		if len(rest) < 2 {
			inv.kind = "external" // the image's default command
			return inv, nil
		}
		words = rest[1:]
	}
	switch {
	case words[0] == "fgn":
		inv.kind, inv.args = "fgn", words[1:]
	case words[0] == "go" && len(words) > 2 && words[1] == "run" && words[2] == "./cmd/fgn":
		inv.kind, inv.args = "fgn", words[3:]
	case words[0] == "go" && len(words) > 2 && words[1] == "run" && strings.HasPrefix(words[2], "./"):
		inv.kind, inv.pkg, inv.args = "go run", words[2], words[3:]
	case words[0] == "go":
		inv.kind, inv.args = "go", words[1:]
	case words[0] == "bash" && len(words) > 1:
		inv.kind, inv.args = "script", words[1:]
	case strings.HasPrefix(words[0], ".ci/") || strings.HasPrefix(words[0], "bench/"):
		inv.kind, inv.args = "script", words
	case words[0] == "export":
		inv.kind, inv.args = "export", words[1:]
	case slices.Contains(externalPrograms, words[0]), words[0] == "docker":
		inv.kind = "external"
	default:
		return inv, fmt.Errorf("not a command this test knows (%q): teach TestDocCommands how to check it", words[0])
	}
	return inv, nil
}

// shellWords splits a command line into words as sh does for quotes, then drops synopsis
// brackets ("[-epochs 2]") and keeps the first of alternatives ("FILE|URL").
func shellWords(text string) ([]string, error) {
	var words []string
	var word strings.Builder
	inWord, quote := false, rune(0)
	for _, r := range text {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			word.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, word.String())
				word.Reset()
				inWord = false
			}
		default:
			word.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated quote")
	}
	if inWord {
		words = append(words, word.String())
	}
	var out []string
	for _, w := range words {
		w = strings.Trim(w, "[]")
		if w == "" {
			continue
		}
		if first, _, ok := strings.Cut(w, "|"); ok && !strings.Contains(w, "://") {
			w = first
		}
		out = append(out, w)
	}
	return out, nil
}

// TestDocCommandsExtraction checks the extraction and classification on a document written for
// the test.
func TestDocCommandsExtraction(t *testing.T) {
	md := "Run `GOEXPERIMENT=simd go run ./cmd/fgn train\n--help`; `fgn headopt` names a subcommand.\n" +
		"```sh\nexport GOTOOLCHAIN=go1.27.4\nfgn train --method fgn \\\n    --epochs 3   # a comment\n```\n" +
		"```go\nfgn.FGN().Done()\n```\n" +
		"\n`docker run --rm --gpus all fgn fgn verify --profile full`\n"
	var got []string
	for _, c := range extractCommands("x.md", []byte(md)) {
		inv, err := classify(c.text)
		if err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		got = append(got, fmt.Sprintf("%d %s %s %q", c.line, inv.kind, inv.pkg, inv.args))
	}
	want := []string{
		`1 fgn  ["train" "--help"]`,
		`4 export  ["GOTOOLCHAIN=go1.27.4"]`,
		`5 fgn  ["train" "--method" "fgn" "--epochs" "3"]`,
		`12 fgn  ["verify" "--profile" "full"]`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("extracted\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	goDoc := "// Command x.\n//\n//\tgo run ./examples/cnn [-epochs 2] [-batch 128]\n//\t    [-progress]\npackage main\n"
	cmds := extractCommands("x.go", []byte(goDoc))
	if len(cmds) != 1 {
		t.Fatalf("Go doc: %v, want one command", cmds)
	}
	inv, err := classify(cmds[0].text)
	if err != nil || inv.kind != "go run" || inv.pkg != "./examples/cnn" ||
		!slices.Equal(inv.args, []string{"-epochs", "2", "-batch", "128", "-progress"}) {
		t.Errorf("Go doc command %q: %+v, %v", cmds[0].text, inv, err)
	}
}

// TestDocCommands checks every command of docFiles as a user on a fresh clone would run it, from
// the repository root:
//
//   - fgn commands (fgn ..., go run ./cmd/fgn ..., docker run ... fgn ...) are parsed and
//     validated by the command itself, which stops before any work (checkOnly); --help runs;
//   - go run of another package: the package is a command (with FGN_DOC_COMMANDS=run, built,
//     and its -help lists every flag used);
//   - go install pins the versions .ci/install.sh installs; export GOTOOLCHAIN is go.mod's;
//     scripts exist; GOEXPERIMENT is simd or absent.
//
// With FGN_DOC_COMMANDS=run (as .ci/run sets) it also runs the cheap ones: the fgn commands of
// the smoke profile and figure redraws (in a scratch directory holding the files they read,
// which a redraw must leave byte for byte as they were), and every example at a tiny size (one
// epoch).
func TestDocCommands(t *testing.T) {
	runCheap := os.Getenv("FGN_DOC_COMMANDS") == "run"
	repo := root(t)
	var cmds []docCommand
	for _, f := range docFiles {
		data, err := os.ReadFile(filepath.Join(repo, f))
		if err != nil {
			t.Fatal(err)
		}
		found := extractCommands(f, data)
		if len(found) == 0 {
			t.Errorf("%s: no commands found", f)
		}
		cmds = append(cmds, found...)
	}
	toolchain := goModToolchain(t, repo)
	helpFlags := map[string][]string{} // go run package → the flags its -help lists
	var split []docCommand             // "a && b" is two commands
	for _, c := range cmds {
		for _, part := range strings.Split(c.text, "&&") {
			split = append(split, docCommand{c.file, c.line, strings.TrimSpace(part)})
		}
	}
	for _, c := range split {
		inv, err := classify(c.text)
		if err != nil {
			t.Errorf("%s: %v", c, err)
			continue
		}
		if e, ok := inv.env["GOEXPERIMENT"]; ok && e != "simd" {
			t.Errorf("%s: GOEXPERIMENT=%s, want simd", c, e)
		}
		if tc, ok := inv.env["GOTOOLCHAIN"]; ok && tc != toolchain {
			t.Errorf("%s: GOTOOLCHAIN=%s, go.mod's toolchain is %s", c, tc, toolchain)
		}
		switch inv.kind {
		case "fgn":
			checkFGN(t, c, repo, inv.args)
			if runCheap && cheapFGN(inv.args) {
				runFGN(t, c, repo, inv.args)
			}
		case "go run":
			if !runCheap { // building the command is not cheap: check that it is one
				if data, err := os.ReadFile(filepath.Join(repo, inv.pkg, "main.go")); err != nil || !bytes.Contains(data, []byte("\npackage main\n")) {
					t.Errorf("%s: %s is not a command (%v)", c, inv.pkg, err)
				}
				continue
			}
			flags, ok := helpFlags[inv.pkg]
			if !ok {
				flags = goRunFlags(t, c, repo, inv.pkg)
				helpFlags[inv.pkg] = flags
			}
			for _, a := range inv.args {
				if !strings.HasPrefix(a, "-") {
					continue
				}
				name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
				if !slices.Contains(flags, name) {
					t.Errorf("%s: %s has no flag -%s (its flags: %s)", c, inv.pkg, name, strings.Join(flags, ", "))
				}
			}
			if runCheap && strings.HasPrefix(inv.pkg, "./examples/") {
				runExample(t, c, repo, inv.pkg)
			}
		case "go":
			checkGo(t, c, repo, inv.args)
		case "script":
			if _, err := os.Stat(filepath.Join(repo, inv.args[0])); err != nil {
				t.Errorf("%s: %v", c, err)
			}
		case "export":
			for _, a := range inv.args {
				if name, value, _ := strings.Cut(a, "="); name == "GOTOOLCHAIN" && value != toolchain {
					t.Errorf("%s: GOTOOLCHAIN=%s, go.mod's toolchain is %s", c, value, toolchain)
				}
			}
		}
	}
	t.Logf("%d commands in %d documents (running the cheap ones: %v)", len(cmds), len(docFiles), runCheap)
}

// checkFGN parses and validates an fgn command line with the command itself, which stops
// before any work; --help prints and succeeds.
func checkFGN(t *testing.T, c docCommand, repo string, args []string) {
	t.Helper()
	t.Chdir(repo)
	checkOnly = true
	defer func() { checkOnly = false }()
	err := run(args, io.Discard, io.Discard)
	if !errors.Is(err, errCheckOnly) && !errors.Is(err, flag.ErrHelp) && !(err == nil && isHelp(args)) {
		t.Errorf("%s: %v", c, err)
	}
}

func isHelp(args []string) bool {
	return slices.ContainsFunc(args, func(a string) bool { return a == "--help" || a == "-h" || a == "-help" || a == "help" })
}

// cheapFGN reports whether an fgn command is cheap enough to run in the test: the smoke
// profile of a command that needs nothing but this repository's data (not verify, which runs
// the test suite), or a figure drawn from its CSV files.
func cheapFGN(args []string) bool {
	if len(args) == 0 || args[0] == "verify" || isHelp(args) {
		return false
	}
	for i, a := range args {
		if (a == "--profile" && i+1 < len(args) && args[i+1] == "smoke") || a == "--profile=smoke" || a == "--from-csv" {
			return true
		}
	}
	return false
}

// runFGN runs an fgn command in a scratch directory holding copies of figures/ and bench/, and
// checks that the files it had are unchanged afterwards (a redraw gives the same bytes).
func runFGN(t *testing.T, c docCommand, repo string, args []string) {
	t.Helper()
	dir := t.TempDir()
	before := map[string][]byte{}
	for _, sub := range []string{"figures", "bench"} {
		entries, err := os.ReadDir(filepath.Join(repo, sub))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.IsDir() {
				continue
			}
			data, err := os.ReadFile(filepath.Join(repo, sub, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(sub, e.Name())
			before[path] = data
			if err := os.WriteFile(filepath.Join(dir, path), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Chdir(dir)
	var stdout, stderr bytes.Buffer
	if err := run(append(slices.Clone(args), quietFlag(args)...), &stdout, &stderr); err != nil {
		t.Errorf("%s: %v\n%s%s", c, err, stdout.String(), stderr.String())
		return
	}
	for path, data := range before {
		if after, err := os.ReadFile(filepath.Join(dir, path)); err != nil || !bytes.Equal(after, data) {
			t.Errorf("%s changed %s (%v): run again, the committed file must be what the command writes", c, path, err)
		}
	}
}

// quietFlag returns --quiet for the subcommands that have it, so that no progress bar is drawn.
func quietFlag(args []string) []string {
	switch args[0] {
	case "train", "headopt", "reproduce":
		return []string{"--quiet"}
	}
	return nil
}

// goRunFlags builds the package of a go run command and returns the flags its -help lists.
func goRunFlags(t *testing.T, c docCommand, repo, pkg string) []string {
	t.Helper()
	exe := buildPackage(t, c, repo, pkg)
	if exe == "" {
		return nil
	}
	out, _ := exec.Command(exe, "-help").CombinedOutput() // flag's -help exits with status 0 or 2
	var flags []string
	for _, m := range regexp.MustCompile(`(?m)^\s+-{1,2}([a-zA-Z0-9][a-zA-Z0-9._-]*)`).FindAllStringSubmatch(string(out), -1) {
		flags = append(flags, m[1])
	}
	if len(flags) == 0 {
		t.Errorf("%s: %s -help lists no flags:\n%s", c, pkg, out)
	}
	return flags
}

// built holds the executables buildPackage made, by package.
var built = map[string]string{}

// buildPackage builds a main package of the module (as go run would) and returns the executable.
func buildPackage(t *testing.T, c docCommand, repo, pkg string) string {
	t.Helper()
	if exe, ok := built[pkg]; ok {
		return exe
	}
	dir, err := os.MkdirTemp("", "fgn-doc-commands-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	exe := filepath.Join(dir, filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-o", exe, pkg)
	cmd.Dir = repo
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("%s: go build %s: %v\n%s", c, pkg, err, out)
		return ""
	}
	built[pkg] = exe
	return exe
}

// runExample runs an example at a tiny size: one epoch.
func runExample(t *testing.T, c docCommand, repo, pkg string) {
	t.Helper()
	exe := buildPackage(t, c, repo, pkg)
	if exe == "" {
		return
	}
	if out, err := exec.Command(exe, "-epochs", "1").CombinedOutput(); err != nil || !bytes.Contains(out, []byte("accuracy")) {
		t.Errorf("%s: %s -epochs 1: %v\n%s", c, pkg, err, out)
	}
}

// checkGo checks a go command other than go run: go install pins the versions .ci/install.sh
// installs, and a package pattern of this module names a directory that exists.
func checkGo(t *testing.T, c docCommand, repo string, args []string) {
	t.Helper()
	for _, a := range args {
		switch {
		case strings.Contains(a, "@"):
			path, version, _ := strings.Cut(a, "@")
			if want := installPins(t, repo)[path]; want != version {
				t.Errorf("%s: %s@%s, .ci/install.sh installs %q", c, path, version, want)
			}
		case strings.HasPrefix(a, "./"):
			dir := strings.TrimSuffix(strings.TrimSuffix(a, "..."), "/")
			if _, err := os.Stat(filepath.Join(repo, dir)); err != nil {
				t.Errorf("%s: %v", c, err)
			}
		}
	}
}

// installPins returns the package → version pins of .ci/install.sh's go_install lines.
func installPins(t *testing.T, repo string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repo, ".ci/install.sh"))
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^([A-Z_]+)=(\S+)$`).FindAllStringSubmatch(string(data), -1) {
		vars[m[1]] = m[2]
	}
	pins := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^go_install \S+ \S+ (\S+) "\$([A-Z_]+)"$`).FindAllStringSubmatch(string(data), -1) {
		pins[m[1]] = vars[m[2]]
	}
	if len(pins) == 0 {
		t.Fatal(".ci/install.sh: no go_install lines")
	}
	return pins
}

// goModToolchain returns go.mod's toolchain (go1.27.4).
func goModToolchain(t *testing.T, repo string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repo, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^toolchain (\S+)$`).FindSubmatch(data)
	if m == nil {
		t.Fatal("go.mod has no toolchain line")
	}
	return string(m[1])
}
