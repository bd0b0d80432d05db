package artifact

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// instruction is one Dockerfile instruction (continuation lines joined).
type instruction struct {
	line      int
	cmd, args string
}

// parseDockerfile splits a Dockerfile into instructions: comments and blank lines are skipped,
// lines ending in a backslash continue on the next line.
func parseDockerfile(text string) []instruction {
	var (
		out  []instruction
		cur  strings.Builder
		line int
	)
	for i, l := range strings.Split(text, "\n") {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		if cur.Len() == 0 {
			line = i + 1
		}
		if strings.HasSuffix(t, `\`) {
			cur.WriteString(strings.TrimSuffix(t, `\`) + " ")
			continue
		}
		cur.WriteString(t)
		cmd, args, _ := strings.Cut(cur.String(), " ")
		out = append(out, instruction{line: line, cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args)})
		cur.Reset()
	}
	return out
}

var knownInstructions = []string{"FROM", "RUN", "CMD", "LABEL", "EXPOSE", "ENV", "ADD", "COPY",
	"ENTRYPOINT", "VOLUME", "USER", "WORKDIR", "ARG", "ONBUILD", "STOPSIGNAL", "HEALTHCHECK", "SHELL"}

// lintDockerfile returns the problems of a Dockerfile for this artifact: unknown instructions,
// unpinned images or packages, and missing parts of the artifact image.
func lintDockerfile(text string) []string {
	var problems []string
	ins := parseDockerfile(text)
	has := func(cmd, substr string) bool {
		return slices.ContainsFunc(ins, func(in instruction) bool { return in.cmd == cmd && strings.Contains(in.args, substr) })
	}
	latest := regexp.MustCompile(`(?i)(:|@|\b)latest\b`)
	pinned := regexp.MustCompile(`^[\w./-]+(:[\w.-]*\d[\w.-]*|@sha256:[0-9a-f]{64})$`)
	sawFrom := false
	for _, in := range ins {
		if !slices.Contains(knownInstructions, in.cmd) {
			problems = append(problems, "line "+strconv.Itoa(in.line)+": unknown instruction "+in.cmd)
		}
		if latest.MatchString(in.args) {
			problems = append(problems, "line "+strconv.Itoa(in.line)+": uses \"latest\"")
		}
		switch in.cmd {
		case "FROM":
			sawFrom = true
			image := strings.Fields(in.args)[0]
			if !pinned.MatchString(image) {
				problems = append(problems, "line "+strconv.Itoa(in.line)+": base image "+image+" is not pinned to a version")
			}
		case "RUN", "CMD", "ENTRYPOINT", "COPY", "ENV", "WORKDIR", "EXPOSE":
			if !sawFrom {
				problems = append(problems, "line "+strconv.Itoa(in.line)+": "+in.cmd+" before FROM")
			}
		}
		if _, pkgs, ok := strings.Cut(in.args, "pip install "); in.cmd == "RUN" && ok {
			pkgs, _, _ = strings.Cut(pkgs, "&&")
			for _, f := range strings.Fields(pkgs) {
				if !strings.HasPrefix(f, "-") && !strings.Contains(f, "==") {
					problems = append(problems, "line "+strconv.Itoa(in.line)+": pip package "+f+" is not pinned with ==")
				}
			}
		}
	}
	for _, want := range []struct{ cmd, substr, why string }{
		{"RUN", "bash .ci/install.sh", "the install steps shared with CI (.ci/install.sh)"},
		{"ENV", "GOMLX_NO_AUTO_INSTALL=1", "GOMLX_NO_AUTO_INSTALL=1 at run time"},
		{"ENV", "GOEXPERIMENT=simd", "the SIMD build of fgn"},
		{"RUN", "go build -o /usr/local/bin/fgn ./cmd/fgn", "the fgn binary on PATH"},
		{"RUN", "./cmd/pjrt-install -plugin cuda13 -version", "the CUDA PJRT plugin at a pinned version"},
		{"RUN", "jupyterlab==", "JupyterLab at a pinned version"},
		{"EXPOSE", "8888", "EXPOSE 8888"},
		{"ENTRYPOINT", "docker/entrypoint.sh", "the entry point choosing the backend (docker/entrypoint.sh)"},
		{"CMD", `"--ip=0.0.0.0"`, "JupyterLab on 0.0.0.0"},
		{"CMD", "notebooks", "JupyterLab opening notebooks/"},
	} {
		if !has(want.cmd, want.substr) {
			problems = append(problems, "missing "+want.why+": no "+want.cmd+" containing "+want.substr)
		}
	}
	for _, a := range ins {
		if a.cmd == "ARG" && strings.HasSuffix(a.args, "VERSION") {
			problems = append(problems, "line "+strconv.Itoa(a.line)+": ARG "+a.args+" has no pinned default")
		}
	}
	return problems
}

func TestDockerfileLint(t *testing.T) {
	data, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range lintDockerfile(string(data)) {
		t.Errorf("Dockerfile: %s", p)
	}
	if _, err := os.Stat("../../.ci/install.sh"); err != nil {
		t.Errorf("the Dockerfile runs .ci/install.sh: %v", err)
	}
	gomod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	toolchain := regexp.MustCompile(`(?m)^toolchain (go\S+)$`).FindSubmatch(gomod)
	if toolchain == nil {
		t.Fatal("go.mod has no toolchain line")
	}
	for _, want := range []string{
		"FROM golang:" + strings.TrimPrefix(string(toolchain[1]), "go") + "-",
		"GOTOOLCHAIN=" + string(toolchain[1]) + " ",
	} {
		if !strings.Contains(string(data), want) {
			t.Errorf("Dockerfile: no %q (go.mod's toolchain line is %s)", want, toolchain[1])
		}
	}
}

// TestEntrypoint runs docker/entrypoint.sh: it keeps an explicit GOMLX_BACKEND, and without one
// it selects xla:cuda exactly when a GPU device node is visible.
func TestEntrypoint(t *testing.T) {
	_, err := os.Stat("/dev/nvidiactl")
	gpu := err == nil
	for _, tc := range []struct{ env, want string }{
		{"GOMLX_BACKEND=go", "go"},
		{"GOMLX_BACKEND=", map[bool]string{true: "xla:cuda", false: ""}[gpu]},
	} {
		cmd := exec.Command("sh", "../../docker/entrypoint.sh", "sh", "-c", `printf %s "$GOMLX_BACKEND"`)
		cmd.Env = append(os.Environ(), tc.env)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: %v", tc.env, err)
		}
		if string(out) != tc.want {
			t.Errorf("%s (GPU visible: %v): GOMLX_BACKEND=%q, want %q", tc.env, gpu, out, tc.want)
		}
	}
}

// TestDockerfileLintCatches checks that the linter reports each kind of problem.
func TestDockerfileLintCatches(t *testing.T) {
	good, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, old, new, want string }{
		{"unpinned base", "FROM golang:1.27.4-bookworm", "FROM golang", "is not pinned"},
		{"latest tag", "FROM golang:1.27.4-bookworm", "FROM golang:latest", "latest"},
		{"unknown instruction", "EXPOSE 8888", "EXPOSE 8888\nPUBLISH 8888", "unknown instruction PUBLISH"},
		{"no install script", "RUN bash .ci/install.sh", "RUN true", ".ci/install.sh"},
		{"no port", "EXPOSE 8888", "EXPOSE 9999", "EXPOSE 8888"},
		{"unpinned pip", `"jupyterlab==${JUPYTERLAB_VERSION}"`, "jupyterlab", "not pinned with =="},
		{"unpinned ARG", "ARG JAX_PJRT_VERSION=0.8.0", "ARG JAX_PJRT_VERSION", "no pinned default"},
		{"auto install on", "GOMLX_NO_AUTO_INSTALL=1", "GOMLX_NO_AUTO_INSTALL=0", "GOMLX_NO_AUTO_INSTALL=1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := strings.Replace(string(good), tc.old, strings.ReplaceAll(tc.new, "\\n", "\n"), 1)
			if bad == string(good) {
				t.Fatalf("the Dockerfile has no %q to replace", tc.old)
			}
			problems := strings.Join(lintDockerfile(bad), "; ")
			if !strings.Contains(problems, tc.want) {
				t.Errorf("lint of the modified Dockerfile: %q, want a problem containing %q", problems, tc.want)
			}
		})
	}
}

func TestParseDockerfile(t *testing.T) {
	ins := parseDockerfile("# c\nFROM a:1\n\nRUN x \\\n && y\nCMD [\"z\"]\n")
	want := []instruction{{2, "FROM", "a:1"}, {4, "RUN", "x  && y"}, {6, "CMD", `["z"]`}}
	if !slices.Equal(ins, want) {
		t.Errorf("parseDockerfile = %+v, want %+v", ins, want)
	}
}

// dockerignored reports whether the .dockerignore patterns exclude path (slash-separated,
// relative to the context) from the build context: a pattern (leading "/" ignored, "**"
// any number of directories, "*" and "?" within one name) matches the path or one of its
// parent directories; a later "!pattern" re-includes.
func dockerignored(patterns []string, path string) bool {
	ignored := false
	for _, p := range patterns {
		keep := strings.HasPrefix(p, "!")
		p = strings.TrimPrefix(strings.TrimPrefix(p, "!"), "/")
		p = strings.TrimSuffix(p, "/")
		var re strings.Builder
		for i := 0; i < len(p); i++ {
			switch {
			case strings.HasPrefix(p[i:], "**/"):
				re.WriteString("(.*/)?")
				i += 2
			case strings.HasPrefix(p[i:], "**"):
				re.WriteString(".*")
				i++
			case p[i] == '*':
				re.WriteString("[^/]*")
			case p[i] == '?':
				re.WriteString("[^/]")
			default:
				re.WriteString(regexp.QuoteMeta(p[i : i+1]))
			}
		}
		m := regexp.MustCompile("^" + re.String() + "(/.*)?$")
		if m.MatchString(path) {
			ignored = !keep
		}
	}
	return ignored
}

// TestDockerignore checks that the image's build context leaves out the data, caches, outputs
// and build products, and keeps the sources, the committed figures and the notebooks.
func TestDockerignore(t *testing.T) {
	data, err := os.ReadFile("../../.dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	var patterns []string
	for _, l := range strings.Split(string(data), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			patterns = append(patterns, l)
		}
	}
	for _, tc := range []struct {
		path    string
		ignored bool
	}{
		{"data/cars196/train_features.npy", true},
		{"data/cars196/images/car_ims/000001.jpg", true},
		{"results/figure1_mechanism.png", true},
		{"results/verify/verify_quick.json", true},
		{"figures/.reproduce/figure1.json", true},
		{"results/.reproduce/headopt_synthetic_standin-0123456789ab/traces/adam_seed1.csv", true},
		{"fgn", true},
		{"cmd/fgn/fgn.test", true},
		{"cpu.prof", true},
		{"notebooks/.ipynb_checkpoints/01-margin-checkpoint.ipynb", true},
		{"go.mod", false},
		{"data/fetch/main.go", false},
		{"data/fetch/README.md", false},
		{"cmd/fgn/main.go", false},
		{"figures/figure1_mechanism.png", false},
		{"notebooks/01-margin.ipynb", false},
		{".ci/install.sh", false},
		{"docker/entrypoint.sh", false},
		{"artifact.yaml", false},
	} {
		if got := dockerignored(patterns, tc.path); got != tc.ignored {
			t.Errorf(".dockerignore: %s excluded = %v, want %v", tc.path, got, tc.ignored)
		}
	}
}
