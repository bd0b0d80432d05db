package filehash

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSHA256(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ content, want string }{
		// sha256sum of the content, computed independently.
		{"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		{"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
	} {
		path := filepath.Join(dir, "f")
		if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
			t.Fatal(err)
		}
		if got, err := SHA256(path); err != nil || got != tc.want {
			t.Errorf("SHA256(%q) = %s, %v; want %s", tc.content, got, err, tc.want)
		}
	}
	if _, err := SHA256(filepath.Join(dir, "missing")); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("SHA256 of a missing file: error %v, want one naming it", err)
	}
}
