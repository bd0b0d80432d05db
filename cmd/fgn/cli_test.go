package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fgn-paper/fgn/features"
	"github.com/fgn-paper/fgn/internal/cli"
)

// TestCLIConventions runs command lines as main does and checks the exit status and where the
// messages go: help on stdout with status 0, usage and configuration errors once on stderr with
// status 2 and nothing on stdout (no work started).
func TestCLIConventions(t *testing.T) {
	dir := t.TempDir()
	// Training labels in [0, 3); held-out labels with a 9 among them.
	trainSet, err := features.GaussianMixture(1, 0, 30, 3, 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	evalSet, err := features.GaussianMixture(1, 1, 12, 3, 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	evalSet.Y[4] = 9
	tx, ty := filepath.Join(dir, "tx.npy"), filepath.Join(dir, "ty.npy")
	ex, ey := filepath.Join(dir, "ex.npy"), filepath.Join(dir, "ey.npy")
	if err := trainSet.Save(tx, ty); err != nil {
		t.Fatal(err)
	}
	if err := evalSet.Save(ex, ey); err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(dir, "cache")
	for split, s := range map[string]*features.Set{"train": trainSet, "test": trainSet} {
		x, y := features.CachePaths(cache, split)
		if err := s.Save(x, y); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(dir, "out")
	files := []string{"--train-features", tx, "--train-labels", ty, "--out", out}
	for _, tc := range []struct {
		name   string
		args   []string
		env    string // GOMLX_BACKEND
		code   int
		stdout string // contained in stdout ("" : stdout must be empty)
		stderr string // contained exactly once in stderr ("" : stderr must be empty)
	}{
		{"no arguments", nil, "", 2, "", "usage: fgn <subcommand>"},
		{"help", []string{"--help"}, "", 0, "usage: fgn <subcommand>", ""},
		{"-h", []string{"-h"}, "", 0, "usage: fgn <subcommand>", ""},
		{"unknown subcommand", []string{"nope"}, "", 2, "", `fgn: unknown subcommand "nope"`},
		{"train --help", []string{"train", "--help"}, "", 0, "-damping", ""},
		{"train -h", []string{"train", "-h"}, "", 0, "usage: fgn train", ""},
		{"train beyond the machine's memory", []string{"train", "--method", "fgn", "--dim", "2048", "--classes", "100000000", "--out", out},
			"", 2, "", "GiB available on this machine (MemAvailable in /proc/meminfo)"},
		{"figure --help", []string{"figure", "--help"}, "", 0, "usage: fgn figure", ""},
		{"figure mechanism --help", []string{"figure", "mechanism", "--help"}, "", 0, "-panels", ""},
		{"headopt --help", []string{"headopt", "--help"}, "", 0, "usage: fgn headopt", ""},
		{"headopt select --help", []string{"headopt", "select", "--help"}, "", 0, "-val-fraction", ""},
		{"reproduce --help", []string{"reproduce", "--help"}, "", 0, "usage: fgn reproduce", ""},
		{"verify --help", []string{"verify", "--help"}, "", 0, "usage: fgn verify", ""},
		{"version --help", []string{"version", "--help"}, "", 0, "usage: fgn version", ""},
		{"unknown flag", []string{"train", "--bogus"}, "", 2, "", "flag provided but not defined: -bogus"},
		{"damping 0", []string{"train", "--damping", "0"}, "", 2, "", `train: invalid value "0" for flag -damping`},
		{"learning rate 0", []string{"train", "--learning-rate", "0"}, "", 2, "", `invalid value "0" for flag -learning-rate`},
		{"cg-max-iterations 0", []string{"train", "--cg-max-iterations", "0"}, "", 2, "", `invalid value "0" for flag -cg-max-iterations`},
		{"cg-tolerance negative", []string{"train", "--cg-tolerance", "-1e-5"}, "", 2, "", `invalid value "-1e-5" for flag -cg-tolerance`},
		{"cg-stopping-rule unknown", []string{"train", "--cg-stopping-rule", "loose"}, "", 2, "", `unknown CG stopping rule "loose"`},
		{"damping NaN", []string{"train", "--damping", "NaN"}, "", 2, "", `invalid value "NaN" for flag -damping`},
		{"duplicate method", []string{"train", "--method", "fgn,fgn"}, "", 2, "", "--method: fgn is listed twice"},
		{"data and files", append([]string{"train", "--data", cache}, files...), "", 2, "", "--data and --train-features"},
		{"stray argument", []string{"reproduce", "quick"}, "", 2, "", `reproduce: unexpected argument "quick"`},
		{"reproduce profile", []string{"reproduce", "--profile", "huge", "--out", out}, "", 2, "", `unknown profile "huge"`},
		{"figure without a name", []string{"figure"}, "", 2, "", "name the figure"},
		{"bad backend variable", []string{"train", "--out", out}, "bogus", 2, "", `fgn: GOMLX_BACKEND="bogus": unknown backend "bogus"`},
		{"bad backend flag", []string{"train", "--backend", "bogus", "--out", out}, "", 2, "", `fgn: --backend bogus: unknown backend "bogus"`},
		{"verify with a bad backend", []string{"verify", "--artifact", "../../artifact.yaml", "--profile", "smoke", "--out", out}, "bogus", 2, "", `GOMLX_BACKEND="bogus"`},
		{"verify profile", []string{"verify", "--artifact", "../../artifact.yaml", "--profile", "huge", "--out", out}, "", 2, "", "--profile huge: the manifest has profiles"},
		{"version with a bad backend", []string{"version"}, "bogus", 2, "", `GOMLX_BACKEND="bogus"`},
		{"eval label outside the training classes", append([]string{"train", "--eval-features", ex, "--eval-labels", ey}, files...), "", 1, "",
			"train: evaluation split: label 9 of example 4 is outside [0, 3)"},
		// Flags that do not apply, and impossible outputs, stop the command before any work.
		{"learning rate 0 names no method", []string{"train", "--learning-rate", "0", "--method", "fgn"}, "", 2, "",
			`train: invalid value "0" for flag -learning-rate: want a finite value > 0`},
		{"fgn on an MLP", []string{"train", "--hidden", "8", "--method", "adam,fgn", "--out", out}, "", 2, "",
			"train: --method fgn needs an affine head's closed-form row Gram, which an MLP (--hidden 8) has not: use fgn-matrix-free in --method, or --hidden 0"},
		{"holdout with an evaluation pair", append([]string{"train", "--eval-features", ex, "--eval-labels", ey, "--holdout", "0.5"}, files...), "", 2, "",
			"train: --holdout does not apply: --eval-features and --eval-labels are evaluated"},
		{"holdout with a cache", []string{"train", "--data", cache, "--holdout", "0.5", "--out", out}, "", 2, "", "train: --holdout does not apply: the data come from --data"},
		{"dim with file data", append([]string{"train", "--dim", "5"}, files...), "", 2, "", "train: --dim does not apply: the data come from --train-features"},
		{"separation with a cache", []string{"train", "--data", cache, "--separation", "1", "--out", out}, "", 2, "", "train: --separation does not apply"},
		{"standardize with the synthetic mixture", []string{"train", "--standardize=false", "--out", out}, "", 2, "", "train: --standardize does not apply"},
		{"damping with adam only", []string{"train", "--method", "adam", "--damping", "2", "--out", out}, "", 2, "",
			"train: --damping does not apply: it sets SGN and FGN, and --method has neither"},
		{"stopping rule without fgn", []string{"train", "--method", "adam,sgn", "--cg-stopping-rule", "parameter", "--out", out}, "", 2, "",
			"train: --cg-stopping-rule does not apply: it sets FGN's CG"},
		{"train out is a file", []string{"train", "--out", tx}, "", 2, "", "--out " + tx + ": a file is there, not a directory"},
		{"train out under a file", []string{"train", "--out", filepath.Join(tx, "sub")}, "", 2, "", "is a file, not a directory"},
		{"reproduce out is a file", []string{"reproduce", "--out", tx}, "", 2, "", "--out " + tx + ": a file is there"},
		{"figure out is a file", []string{"figure", "mechanism", "--panels", "b", "--out", tx}, "", 2, "", "--out " + tx + ": a file is there"},
		{"headopt out is a file", []string{"headopt", "--synthetic", "--out", tx}, "", 2, "", "--out " + tx + ": a file is there"},
		{"verify out is a file", []string{"verify", "--artifact", "../../artifact.yaml", "--out", tx}, "", 2, "", "--out " + tx + ": a file is there"},
		{"from-csv computes nothing", []string{"figure", "mechanism", "--from-csv", "--panels", "a", "--out", out}, "", 2, "",
			"figure mechanism: --panels does not apply: --from-csv computes no panel"},
		{"profile without panel (a)", []string{"figure", "mechanism", "--panels", "b,c", "--profile", "smoke", "--out", out}, "", 2, "",
			"figure mechanism: --profile does not apply: it sets panel (a)'s timing"},
		{"t-max without panel (c)", []string{"figure", "mechanism", "--panels", "b", "--t-max", "2", "--out", out}, "", 2, "",
			"figure mechanism: --t-max does not apply"},
		{"select writes --config, not under --out", []string{"headopt", "select", "--synthetic", "--config", filepath.Join(dir, "c.json"), "--out", out}, "", 2, "",
			"headopt select: --out does not apply: --config names the output file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GOMLX_BACKEND", tc.env)
			var stdout, stderr bytes.Buffer
			code := cli.Exit(run(tc.args, &stdout, &stderr), &stderr, "fgn")
			if code != tc.code {
				t.Errorf("exit status %d, want %d (stderr %q)", code, tc.code, stderr.String())
			}
			if tc.stdout == "" && stdout.Len() > 0 {
				t.Errorf("stdout %q, want nothing", stdout.String())
			}
			if tc.stdout != "" && !strings.Contains(stdout.String(), tc.stdout) {
				t.Errorf("stdout lacks %q:\n%s", tc.stdout, stdout.String())
			}
			if tc.stderr == "" && stderr.Len() > 0 {
				t.Errorf("stderr %q, want nothing", stderr.String())
			}
			if n := strings.Count(stderr.String(), tc.stderr); tc.stderr != "" && n != 1 {
				t.Errorf("stderr has %q %d times, want once:\n%s", tc.stderr, n, stderr.String())
			}
			if strings.Contains(tc.name, "backend flag") && strings.Contains(stderr.String(), "GOMLX_BACKEND") {
				t.Errorf("--backend's error blames GOMLX_BACKEND: %q", stderr.String())
			}
		})
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("failed command lines created %s (stat: %v)", out, err)
	}
}

// TestTrainPrintsClasses checks that the class count and where it came from are printed.
func TestTrainPrintsClasses(t *testing.T) {
	dir := t.TempDir()
	s, err := features.GaussianMixture(1, 0, 40, 2, 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	x, y := filepath.Join(dir, "x.npy"), filepath.Join(dir, "y.npy")
	if err := s.Save(x, y); err != nil {
		t.Fatal(err)
	}
	// The largest label, 7, first at example 5: it sets C = 8.
	s.Y[5], s.Y[9] = 7, 7
	x7, y7 := filepath.Join(dir, "x7.npy"), filepath.Join(dir, "y7.npy")
	if err := s.Save(x7, y7); err != nil {
		t.Fatal(err)
	}
	synthetic := []string{"--examples", "64", "--dim", "2"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{synthetic, "C=32 classes (the synthetic mixture's default)"},
		{append(synthetic, "--classes", "4"), "C=4 classes (--classes)"},
		{[]string{"--train-features", x, "--train-labels", y, "--holdout", "0.25"},
			"C=3 classes (1 + the largest training label, 2, of example "},
		{[]string{"--train-features", x7, "--train-labels", y7, "--holdout", "0.25"},
			"C=8 classes (1 + the largest training label, 7, of example 5 in " + y7 + "; --classes sets it)"},
		{[]string{"--train-features", x, "--train-labels", y, "--holdout", "0.25", "--classes", "5"}, "C=5 classes (--classes)"},
	} {
		var stdout, stderr bytes.Buffer
		args := append([]string{"train", "--batch", "8", "--epochs", "1", "--method", "adam", "--out", t.TempDir(), "--quiet"}, tc.args...)
		if err := run(args, &stdout, &stderr); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(stdout.String(), tc.want) {
			t.Errorf("train %q output lacks %q:\n%s", tc.args, tc.want, stdout.String())
		}
	}
}

// TestCodeIdentityGoRunGoBuild checks that "go run" and a "go build" binary of the same source
// report the same code identity, the one fgn reproduce's stamps record: neither rebuilds what
// the other made.
func TestCodeIdentityGoRunGoBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the fgn command twice")
	}
	code := func(argv ...string) string {
		t.Helper()
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = append(os.Environ(), "GOMLX_BACKEND=")
		b, err := cmd.Output()
		if err != nil {
			t.Fatalf("%q: %v", argv, err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "code: ") {
				return line
			}
		}
		t.Fatalf("%q printed no code line:\n%s", argv, b)
		return ""
	}
	exe := filepath.Join(t.TempDir(), "fgn")
	if b, err := exec.Command("go", "build", "-o", exe, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	built, ran := code(exe, "version"), code("go", "run", ".", "version")
	if built != ran || !strings.Contains(built, "source sha256:") {
		t.Errorf("code identity: go build %q, go run %q; want the same source hash", built, ran)
	}
}

// TestTrainHiddenAndTable trains an MLP with the default methods: FGN becomes its matrix-free
// variant, which the output says, and every row of the summary table puts its numbers in the
// header's columns, the longest method name included.
func TestTrainHiddenAndTable(t *testing.T) {
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	args := []string{"train", "--hidden", "4", "--examples", "64", "--dim", "3", "--classes", "3", "--batch", "16", "--epochs", "1",
		"--out", out, "--quiet"}
	if err := run(args, &stdout, &stderr); err != nil {
		t.Fatalf("train --hidden 4: %v\n%s", err, stderr.String())
	}
	if want := "methods: adam,sgn,fgn-matrix-free (an MLP, --hidden 4, has no closed-form row Gram"; !strings.Contains(stdout.String(), want) {
		t.Errorf("output lacks %q:\n%s", want, stdout.String())
	}
	if _, err := os.Stat(filepath.Join(out, "fgn-matrix-free_seed1.csv")); err != nil {
		t.Error(err)
	}
	lines := strings.Split(stdout.String(), "\n")
	header := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "method ") })
	if header < 0 || header+3 >= len(lines) {
		t.Fatalf("no summary table:\n%s", stdout.String())
	}
	// Each column ends where the header's title ends, in characters (the header has a λ).
	var ends []int
	for _, title := range []string{"train CE", "eval CE", "eval acc", "opt seconds", "ms/step", "CG its", "skipped", "rejected", "λ"} {
		i := strings.Index(lines[header], title)
		ends = append(ends, len([]rune(lines[header][:i]))+len([]rune(title)))
	}
	for _, line := range lines[header+1 : header+4] {
		row, fields := []rune(line), strings.Fields(line)
		for k, end := range ends {
			if end > len(row) || !strings.HasSuffix(string(row[:end]), " "+fields[k+1]) {
				t.Errorf("row %q: column %d (%s) does not end at the header's column %d:\n%s", fields[0], k+1, fields[k+1], end, stdout.String())
				break
			}
		}
	}
}
