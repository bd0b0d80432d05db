package features

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestManifest(t *testing.T) {
	dir := t.TempDir()
	if _, err := VerifyCache(dir); err == nil || !strings.Contains(err.Error(), "no readable manifest") {
		t.Errorf("VerifyCache without manifest: %v", err)
	}
	train := &Set{X: []float32{1, 2, 3, 4}, Y: []int32{0, 2}, N: 2, D: 2}
	test := &Set{X: []float32{5, 6}, Y: []int32{1}, N: 1, D: 2}
	for split, s := range map[string]*Set{"train": train, "test": test} {
		if err := s.Save(CachePaths(dir, split)); err != nil {
			t.Fatal(err)
		}
	}
	m := &Manifest{Source: "fake", Weights: ManifestWeights{Name: "formula", File: "w", SHA256: "00"},
		Splits: map[string]Split{"train": {Examples: 2, Features: 2, Classes: 3}, "test": {Examples: 1, Features: 2, Classes: 3}}}
	if err := WriteManifest(dir, m); err != nil {
		t.Fatal(err)
	}
	if len(m.Files) != 4 {
		t.Errorf("manifest lists %d files, want 4: %v", len(m.Files), m.Files)
	}
	got, err := VerifyCache(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got.Source != "fake" || got.Splits["train"].Classes != 3 {
		t.Errorf("read back %+v", got)
	}

	for _, tc := range []struct {
		name   string
		modify func(m *Manifest)
		want   string
	}{
		{"wrong count", func(m *Manifest) { m.Splits["test"] = Split{Examples: 2, Features: 2, Classes: 3} }, "split test has 1×2 features, the manifest says 2×2"},
		{"label range", func(m *Manifest) { m.Splits["train"] = Split{Examples: 2, Features: 2, Classes: 2} }, "label 2 of example 1 is outside [0, 2)"},
	} {
		m2 := *m
		m2.Splits = map[string]Split{"train": m.Splits["train"], "test": m.Splits["test"]}
		tc.modify(&m2)
		d2 := t.TempDir()
		for split, s := range map[string]*Set{"train": train, "test": test} {
			if err := s.Save(CachePaths(d2, split)); err != nil {
				t.Fatal(err)
			}
		}
		if err := WriteManifest(d2, &m2); err != nil {
			t.Fatal(err)
		}
		if _, err := VerifyCache(d2); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: VerifyCache error = %v, want one containing %q", tc.name, err, tc.want)
		}
	}

	// A changed data file no longer matches its checksum.
	fx, _ := CachePaths(dir, "test")
	b, _ := os.ReadFile(fx)
	b[len(b)-1] ^= 1
	if err := os.WriteFile(fx, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := VerifyCache(dir); err == nil || !strings.Contains(err.Error(), filepath.Base(fx)+" has sha256") {
		t.Errorf("VerifyCache after corrupting %s: %v", fx, err)
	}
}
