package artifact

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fgn-paper/fgn/experiments/report"
	"github.com/fgn-paper/fgn/features"
	"github.com/fgn-paper/fgn/fgn/backend"
)

var toySubcommands = []string{"toy"}

// fakeExec stands for the real commands: "fgn toy" writes toy.csv into --out, "go test ./toy"
// prints the test2json events of a passing test with two subtests.
func fakeExec(t *testing.T, calls *int) ExecFunc {
	return func(_ context.Context, _ string, argv []string, log io.Writer) ([]byte, error) {
		*calls++
		switch argv[0] {
		case "fgn":
			out := argv[len(argv)-1]
			tab := report.NewTable("name", "x", "y", "z", "t")
			tab.Add("a", 1, 3.0, 3.0005, math.NaN())
			tab.Add("b", 1, 2.5, 2.5, 0.75)
			tab.Add("c", 4, 2.0, 2.0, math.NaN())
			if err := tab.Write(filepath.Join(out, "toy.csv")); err != nil {
				t.Fatal(err)
			}
			steps := report.NewTable("x", "method", "ms")
			for i, ms := range []float64{10, 10.5, 9.5, 11, 10.2, 30, 9.8, 10.1} {
				steps.Add(1, "fast", ms)
				steps.Add(1, "slow", 2*ms)
				steps.Add(1, "same", 2*ms*(1+0.05*float64(i%3-1)))
			}
			if err := steps.Write(filepath.Join(out, "steps.csv")); err != nil {
				t.Fatal(err)
			}
			return nil, nil
		case "go":
			events := goTestEvents("pass", "TestToy/a", "TestToy/b", "TestToy")
			if _, err := log.Write(events); err != nil {
				t.Fatal(err)
			}
			return events, nil
		}
		t.Fatalf("unexpected command %q", argv)
		return nil, nil
	}
}

func TestVerify(t *testing.T) {
	a, err := Load("testdata/artifact.yaml", toySubcommands)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	calls := 0
	results, err := Verify(context.Background(), a, Options{Profile: "quick", Out: out, Dir: ".",
		Subcommands: toySubcommands, Exec: fakeExec(t, &calls)})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"value-pass": Pass, "ordering-fail": Fail, "difference-pass": Pass,
		"needs-data": NotRun, "test-pass": Pass, "not-reached-pass": Pass, "not-reached-fail": Fail,
		"full-only": NotRun, "repeated-order-pass": Pass, "repeated-order-inconclusive": Inconclusive,
		"repeated-order-fail": Fail, "needs-canonical-cache": NotRun}
	if len(results) != len(want) {
		t.Fatalf("got %d results, want %d", len(results), len(want))
	}
	for _, r := range results {
		if r.Status != want[r.ID] {
			t.Errorf("claim %s: status %q, want %q (measured %s, detail %s)", r.ID, r.Status, want[r.ID], r.Measured, r.Detail)
		}
	}
	if calls != 2 {
		t.Errorf("ran %d commands, want 2 (the shared fgn toy command runs once)", calls)
	}
	if m := results[1].Measured; m != "a=3, b=2.5" {
		t.Errorf("ordering measured %q, want \"a=3, b=2.5\"", m)
	}
	if d := results[7].Detail; d != "checked only in profile full" {
		t.Errorf("profile-restricted claim detail %q", d)
	}
	if !strings.Contains(results[3].Detail, "big") {
		t.Errorf("not-run detail %q does not name the data set", results[3].Detail)
	}
	if m := results[4].Measured; m != "TestToy passed (2 subtests)" {
		t.Errorf("go-test measured %q, want \"TestToy passed (2 subtests)\"", m)
	}
	if m := results[6].Measured; m != "reached at 0.75" {
		t.Errorf("not-reached failure measured %q, want \"reached at 0.75\"", m)
	}
	if m := results[8].Measured; !strings.HasPrefix(m, "fast/slow median ratio 0.5") || !strings.Contains(m, "(n 8/8, holds)") {
		t.Errorf("repeated ordering measured %q", m)
	}
	if d := results[9].Detail; !strings.Contains(d, "not a failure") {
		t.Errorf("inconclusive detail %q", d)
	}
	if d := results[11].Detail; !strings.Contains(d, "testdata/cache is not the canonical cache: its test split has 20 examples (want 8041)") {
		t.Errorf("canonical-cache claim detail %q", d)
	}
	s := Summarize(results)
	if s != (Summary{Pass: 5, Fail: 3, Inconclusive: 1, NotRun: 3}) {
		t.Errorf("summary %v", s)
	}
	if !strings.Contains(s.String(), "1 inconclusive (timing claims the measurements cannot resolve; not failures)") {
		t.Errorf("summary %q does not explain inconclusive", s)
	}

	base := filepath.Join(out, "verify_quick")
	if err := WriteFiles(base, "quick", results); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(base + ".md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "| ordering-fail | Figure 1 | a < b (rel 0) | a=3, b=2.5 | fail |") {
		t.Errorf("Markdown table lacks the ordering row:\n%s", md)
	}
	var rep Report
	data, err := os.ReadFile(base + ".json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &rep); err != nil || len(rep.Results) != 12 || rep.Results[3].Status != NotRun {
		t.Errorf("JSON report %s (err %v)", data, err)
	}
}

// goTestEvents returns test2json events: a run and an output line for each test, then its result.
func goTestEvents(action string, tests ...string) []byte {
	var b strings.Builder
	for _, test := range tests {
		for _, ev := range []testEvent{{Action: "run", Test: test}, {Action: "output", Test: test, Output: "    x_test.go:9: a line\n"},
			{Action: action, Test: test}} {
			line, _ := json.Marshal(ev)
			b.Write(line)
			b.WriteByte('\n')
		}
	}
	return []byte(b.String())
}

func TestCheckGoTest(t *testing.T) {
	mixed := append(goTestEvents("pass", "TestA/x", "TestA"), goTestEvents("fail", "TestB/y")...)
	mixed = append(mixed, goTestEvents("fail", "TestB")...)
	for _, tc := range []struct {
		name     string
		out      []byte
		runErr   error
		want     string
		measured string
	}{
		{"passed", goTestEvents("pass", "TestA/x", "TestA/y", "TestA"), nil, Pass, "TestA passed (2 subtests)"},
		{"a subtest failed", mixed, io.ErrUnexpectedEOF, Fail, "failed: TestB/y, TestB"},
		{"skipped", goTestEvents("skip", "TestA"), nil, Fail, "skipped: TestA"},
		{"no test ran", []byte(`{"Action":"output","Output":"testing: warning: no tests to run\n"}` + "\n"), nil, Fail, ""},
		{"build failed", []byte("# pkg\nx.go:1: syntax error\n"), io.ErrUnexpectedEOF, Fail, ""},
		{"log text is not read", []byte("--- PASS: TestA (0.00s)\nPASS\n"), nil, Fail, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			measured, status, err := checkGoTest(tc.out, tc.runErr)
			if status != tc.want || measured != tc.measured {
				t.Errorf("status %q, measured %q (error %v); want %q, %q", status, measured, err, tc.want, tc.measured)
			}
			if status == Fail && tc.measured == "" && err == nil {
				t.Errorf("a failure without a measurement gives no reason")
			}
		})
	}
}

func TestTestLog(t *testing.T) {
	var b strings.Builder
	tl := &testLog{w: &b}
	events := goTestEvents("pass", "TestA")
	// Written in pieces that split lines, then a non-JSON line without a newline.
	for _, part := range [][]byte{events[:7], events[7:40], events[40:], []byte("exit status 0")} {
		if _, err := tl.Write(part); err != nil {
			t.Fatal(err)
		}
	}
	tl.Flush()
	if want := "    x_test.go:9: a line\nexit status 0\n"; b.String() != want {
		t.Errorf("log %q, want %q", b.String(), want)
	}
}

func TestParseErrors(t *testing.T) {
	const head = "profiles: {quick: {hardware: cpu}}\nclaims:\n"
	const claim = "  - id: c\n    reference: Eq. 1\n    statement: s\n"
	for _, tc := range []struct {
		name, yaml string
		want       string
	}{
		{"unknown field", head + claim + "    command: fgn toy\n    output: a.csv\n    measure: {column: y}\n    expected: \"1\"\n    tolerance: {absolute: 1}\n    colour: red\n",
			`line 11: unknown field "colour"`},
		{"unknown nested field", head + claim + "    command: fgn toy\n    output: a.csv\n    measure: {column: y, colum: z}\n    expected: \"1\"\n    tolerance: {absolute: 1}\n",
			`line 8: unknown field "colum" in artifact.claims[0].measure`},
		{"missing tolerance", head + claim + "    command: fgn toy\n    output: a.csv\n    measure: {column: y}\n    expected: \"1\"\n",
			`line 3: claim "c": missing tolerance`},
		{"empty tolerance", head + claim + "    command: fgn toy\n    output: a.csv\n    measure: {column: y}\n    expected: \"1\"\n    tolerance: {}\n",
			`line 10: claim "c": missing tolerance`},
		{"unknown subcommand", head + claim + "    command: fgn nosuch --out x\n    output: a.csv\n    measure: {column: y}\n    expected: \"1\"\n    tolerance: {absolute: 1}\n",
			`line 6: claim "c": command "fgn nosuch --out x": unknown fgn subcommand "nosuch"`},
		{"unknown program", head + claim + "    command: python run.py\n    output: a.csv\n    measure: {column: y}\n    expected: \"1\"\n    tolerance: {absolute: 1}\n",
			`line 6: claim "c": command "python run.py": unknown program "python"`},
		{"go test without -json", head + claim + "    command: go test ./fgn -run TestX\n    output: go-test\n    expected: pass\n",
			`line 6: claim "c": command "go test ./fgn -run TestX": a go test claim needs -run <regexp> and -json`},
		{"go test with a tolerance", head + claim + "    command: go test ./fgn -run TestX -json\n    output: go-test\n    expected: pass\n    tolerance: {absolute: 1}\n",
			`line 9: claim "c": a go-test claim takes no tolerance`},
		{"go test expecting a number", head + claim + "    command: go test ./fgn -run TestX -json\n    output: go-test\n    expected: \"0\"\n",
			`line 8: claim "c": a go-test claim expects "pass"`},
		{"bad expected", head + claim + "    command: fgn toy\n    output: a.csv\n    measure: {column: y}\n    expected: big\n    tolerance: {absolute: 1}\n",
			`line 9: claim "c": expected "big" is neither a number, an ordering`},
		{"not reached with a tolerance", head + claim + "    command: fgn toy\n    output: a.csv\n    measure: {column: y}\n    expected: not reached\n    tolerance: {absolute: 1}\n",
			`line 10: claim "c": a "not reached" claim takes no tolerance`},
		{"unknown profile", head + claim + "    command: fgn toy\n    profiles: [gpu]\n    output: a.csv\n    measure: {column: y}\n    expected: \"1\"\n    tolerance: {absolute: 1}\n",
			`line 7: claim "c": unknown profile "gpu"`},
		{"ordering without group", head + claim + "    command: fgn toy\n    output: a.csv\n    measure: {column: y}\n    expected: a < b\n    tolerance: {absolute: 0}\n",
			`line 8: claim "c": an ordering needs measure.group`},
		{"unknown data set", head + claim + "    command: fgn toy\n    requires: [cars]\n    output: a.csv\n    measure: {column: y}\n    expected: \"1\"\n    tolerance: {absolute: 1}\n",
			`line 7: claim "c": requires unknown data set "cars"`},
		{"duplicate id", head + claim + "    command: fgn toy\n    output: a.csv\n    measure: {column: y}\n    expected: \"1\"\n    tolerance: {absolute: 1}\n" +
			claim + "    command: fgn toy\n    output: a.csv\n    measure: {column: y}\n    expected: \"1\"\n    tolerance: {absolute: 1}\n",
			`line 11: claim id "c" already used on line 3`},
		{"no claims", "profiles: {quick: {hardware: cpu}}\n", "lists no claims"},
		{"not YAML", "claims: [\n", "yaml:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml), toySubcommands)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Parse error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestConfigErrors checks that a bad configuration is one *ConfigError before any claim runs.
func TestConfigErrors(t *testing.T) {
	a, err := Load("testdata/artifact.yaml", toySubcommands)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, profile, backend, fgn string
		want                        string
	}{
		{"unknown profile", "huge", "", "", `unknown profile "huge"`},
		{"unusable backend", "quick", "bogus", "", `the claims' backend cannot be created: GOMLX_BACKEND="bogus": unknown backend "bogus"`},
		{"missing program", "quick", "", "/nonexistent/fgn", "claim value-pass runs /nonexistent/fgn"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(backend.EnvVar, tc.backend)
			calls := 0
			opt := Options{Profile: tc.profile, Out: t.TempDir(), Dir: ".", Subcommands: toySubcommands, FGN: tc.fgn}
			if tc.fgn == "" {
				opt.Exec = fakeExec(t, &calls)
			}
			results, err := Verify(context.Background(), a, opt)
			var ce *ConfigError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want a *ConfigError containing %q", err, tc.want)
			}
			if len(results) > 0 || calls > 0 {
				t.Errorf("%d results and %d commands despite the configuration error", len(results), calls)
			}
		})
	}
	for _, path := range []string{"testdata/absent.yaml", "artifact_test.go"} {
		var ce *ConfigError
		if _, err := Load(path, toySubcommands); !errors.As(err, &ce) {
			t.Errorf("Load(%s): error %v, want a *ConfigError", path, err)
		}
	}
}

// TestIdentity checks the gate of data sets with an identity: only a manifest recording the
// canonical splits, class count and weights admits the claims.
func TestIdentity(t *testing.T) {
	id := &Identity{Splits: map[string]int{"train": 8144, "test": 8041}, Classes: 196, Weights: "ResNet50 V2"}
	canonical := features.Manifest{Weights: features.ManifestWeights{Name: "ResNet50 V2"},
		Splits: map[string]features.Split{"train": {Examples: 8144, Features: 2048, Classes: 196}, "test": {Examples: 8041, Features: 2048, Classes: 196}}}
	for _, tc := range []struct {
		name   string
		edit   func(m *features.Manifest)
		noFile bool
		want   string
	}{
		{"canonical", func(*features.Manifest) {}, false, ""},
		{"toy cache", func(m *features.Manifest) {
			m.Splits = map[string]features.Split{"train": {Examples: 40, Classes: 5}, "test": {Examples: 20, Classes: 5}}
		}, false, "test split has 20 examples (want 8041)"},
		{"other class count", func(m *features.Manifest) {
			m.Splits["train"] = features.Split{Examples: 8144, Classes: 5}
		}, false, "train split has 5 classes (want 196)"},
		{"missing split", func(m *features.Manifest) { delete(m.Splits, "test") }, false, "no test split"},
		{"other weights", func(m *features.Manifest) { m.Weights.Name = "ResNet50 V2 (as declared)" }, false, `weights "ResNet50 V2 (as declared)"`},
		{"no manifest", nil, true, "no readable manifest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if !tc.noFile {
				m := canonical
				m.Splits = maps.Clone(canonical.Splits)
				tc.edit(&m)
				data, err := json.Marshal(m)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, features.ManifestName), data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			err := id.check(dir)
			if (tc.want == "" && err != nil) || (tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want))) {
				t.Errorf("check: error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
