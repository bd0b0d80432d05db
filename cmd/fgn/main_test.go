package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestRunErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"nope"}, "unknown subcommand"},
		{[]string{"demo", "--classes", "1"}, "--classes must be ≥ 2"},
		{[]string{"demo", "--alpha", "0"}, "--alpha must be > 0"},
		{[]string{"demo", "--lambda", "-1", "--steps", "1"}, "damping"},
		{[]string{"demo", "--bogus"}, "flag provided but not defined"},
	} {
		var out, errOut bytes.Buffer
		err := run(tc.args, &out, &errOut)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("run(%q) error = %v, want one containing %q", tc.args, err, tc.want)
		}
	}
}

func TestDemoRuns(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := run([]string{"demo", "--steps", "2", "--examples", "32", "--dim", "4", "--classes", "3"}, &out, &errOut); err != nil {
		t.Fatalf("demo: %v\n%s", err, errOut.String())
	}
	for _, want := range []string{"FGN (closed form)", "SGN", "gradient", "backend:"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("demo output lacks %q:\n%s", want, out.String())
		}
	}
}
