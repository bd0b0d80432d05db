package backend

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

func TestNewWithConfig(t *testing.T) {
	for _, tc := range []struct {
		config, wantName, wantErr string
	}{
		{"", "go", ""},
		{"go", "go", ""},
		{"go:num_executors=2,ops_sequential", "go", ""},
		{"go:num_executors=x", "", "invalid value for \"num_executors\""},
		{"tpu:0", "", "unknown backend \"tpu\""},
		{"xla", "", "needs a PJRT plugin"},
		{"xla:/nonexistent/pjrt_plugin.so", "", "PJRT plugin file /nonexistent/pjrt_plugin.so cannot be used"},
		{"/nonexistent/pjrt_plugin.so", "", "PJRT plugin file /nonexistent/pjrt_plugin.so cannot be used"},
	} {
		t.Run(tc.config, func(t *testing.T) {
			b, err := NewWithConfig(tc.config)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("NewWithConfig(%q) error = %v, want one containing %q", tc.config, err, tc.wantErr)
				}
				if strings.Contains(err.Error(), EnvVar) {
					t.Errorf("NewWithConfig(%q) error %q blames %s, which did not give the configuration", tc.config, err, EnvVar)
				}
				return
			}
			if err != nil {
				t.Fatalf("NewWithConfig(%q): %v", tc.config, err)
			}
			if b.String() != tc.wantName {
				t.Errorf("NewWithConfig(%q) = %q backend, want %q", tc.config, b.String(), tc.wantName)
			}
		})
	}
}

// TestNewDefaultIsGo checks that an unset GOMLX_BACKEND selects the pure-Go backend (GoMLX's own
// default would try to download an XLA plugin).
func TestNewDefaultIsGo(t *testing.T) {
	t.Setenv(EnvVar, "")
	b, err := New()
	if err != nil || b.String() != "go" {
		t.Fatalf("New() with %s unset = %v, %v; want the go backend", EnvVar, b, err)
	}
}

// TestNewNamesTheVariable checks that an unusable GOMLX_BACKEND is reported with its value.
func TestNewNamesTheVariable(t *testing.T) {
	t.Setenv(EnvVar, "bogus")
	_, err := New()
	if want := EnvVar + `="bogus": unknown backend "bogus"`; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("New() with %s=bogus: error = %v, want one containing %q", EnvVar, err, want)
	}
}

// TestMissingPluginIsAnError checks that a named plugin that is not installed is reported, not
// downloaded.
func TestMissingPluginIsAnError(t *testing.T) {
	t.Setenv("PJRT_PLUGIN_LIBRARY_PATH", t.TempDir())
	_, err := NewWithConfig("xla:cuda")
	if err == nil || !strings.Contains(err.Error(), "never downloads") {
		t.Fatalf("xla:cuda without a plugin: error = %v, want a not-installed error", err)
	}
}

// TestDescribeGo checks that the pure-Go backend's description names the CPU threads it runs on
// (GOMAXPROCS) beside its worker pool, for the default pool (2·GOMAXPROCS) and a configured one.
func TestDescribeGo(t *testing.T) {
	procs := runtime.GOMAXPROCS(0)
	for _, tc := range []struct {
		config string
		pool   int
	}{{"go", 2 * procs}, {"go:parallelism=3", 3}} {
		b, err := NewWithConfig(tc.config)
		if err != nil {
			t.Fatal(err)
		}
		got := Describe(b)
		want := fmt.Sprintf("(GOMAXPROCS %d, worker pool of %d tasks)", procs, tc.pool)
		if !strings.Contains(got, want) || strings.Contains(got, "parallelism=") {
			t.Errorf("Describe(%s) = %q, want it to contain %q and no parallelism=", tc.config, got, want)
		}
	}
}
