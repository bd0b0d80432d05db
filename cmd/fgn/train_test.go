package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fgn-paper/fgn/features"
)

// TestTrainWarns runs fgn train on the runs that go wrong and on a healthy one: each run
// prints its epochs' telemetry, a run that did not train gets a warning on stderr, and
// --fail-on-divergence turns the warning into a failure (exit status 1) that names the methods.
func TestTrainWarns(t *testing.T) {
	dir := t.TempDir()
	s, err := features.GaussianMixture(2, 0, 96, 4, 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	for k := range s.X {
		s.X[k] *= 1e30
	}
	hx, hy := filepath.Join(dir, "huge_x.npy"), filepath.Join(dir, "huge_y.npy")
	if err := s.Save(hx, hy); err != nil {
		t.Fatal(err)
	}
	synthetic := []string{"--examples", "96", "--dim", "4", "--classes", "3", "--batch", "32", "--epochs", "2"}
	for _, tc := range []struct {
		name           string
		args           []string
		warning, epoch string
	}{
		{"learning rate 1e30", append([]string{"--method", "adam", "--learning-rate", "1e30"}, synthetic...),
			"fgn: warning: adam: the loss rose from", "adam epoch 2/2: batch CE"},
		{"features ×1e30 not standardised", []string{"--method", "fgn", "--train-features", hx, "--train-labels", hy,
			"--standardize=false", "--batch", "16", "--epochs", "2"},
			"fgn: warning: fgn: no step was taken: 12 of 12 skipped", "fgn epoch 2/2: batch CE"},
		{"healthy", append([]string{"--method", "sgn", "--damping-policy", "lm"}, synthetic...), "", "sgn epoch 1/2: batch CE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, fail := range []bool{false, true} {
				args := append([]string{"train", "--out", t.TempDir()}, tc.args...)
				if fail {
					args = append(args, "--fail-on-divergence")
				}
				var stdout, stderr bytes.Buffer
				err := run(args, &stdout, &stderr)
				got := stderr.String()
				switch {
				case tc.warning == "" && (err != nil || strings.Contains(got, "fgn: warning")):
					t.Errorf("--fail-on-divergence=%v: error %v, stderr:\n%s\nwant neither a warning nor an error", fail, err, got)
				case tc.warning != "" && !strings.Contains(got, tc.warning):
					t.Errorf("--fail-on-divergence=%v: stderr:\n%s\nwant the warning %q", fail, got, tc.warning)
				case tc.warning != "" && fail != (err != nil):
					t.Errorf("--fail-on-divergence=%v: error %v", fail, err)
				case err != nil && !strings.Contains(err.Error(), "did not train (--fail-on-divergence)"):
					t.Errorf("error %q does not name the flag", err)
				}
				if !strings.Contains(got, tc.epoch) {
					t.Errorf("stderr:\n%s\nwant the epoch telemetry %q", got, tc.epoch)
				}
			}
		})
	}
}
