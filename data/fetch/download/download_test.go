package download

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// server serves content with Range support; while cut > 0, responses stop after cut bytes
// (announcing the full length, so the client sees a truncated body) and cut is cleared.
type server struct {
	content []byte
	cut     atomic.Int64
	ranges  atomic.Int64 // Range requests seen
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body := s.content
	if rg := r.Header.Get("Range"); rg != "" {
		s.ranges.Add(1)
		var from int
		if _, err := fmt.Sscanf(rg, "bytes=%d-", &from); err != nil || from > len(body) {
			w.WriteHeader(http.StatusRequestedRangeNotSatisfiable)
			return
		}
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", from, len(body)-1, len(body)))
		w.Header().Set("Content-Length", fmt.Sprint(len(body)-from))
		w.WriteHeader(http.StatusPartialContent)
		body = body[from:]
	} else {
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	}
	if cut := s.cut.Swap(0); cut > 0 {
		w.Write(body[:cut])
		// Abort the connection so the client sees fewer bytes than announced.
		panic(http.ErrAbortHandler)
	}
	w.Write(body)
}

func sums(b []byte) (string, string) {
	s, m := sha256.Sum256(b), md5.Sum(b)
	return hex.EncodeToString(s[:]), hex.EncodeToString(m[:])
}

func TestGetResumesAfterTruncation(t *testing.T) {
	content := bytes.Repeat([]byte("0123456789abcdef"), 4096)
	srv := &server{content: content}
	srv.cut.Store(10000)
	ts := httptest.NewServer(srv)
	defer ts.Close()
	sha, md := sums(content)
	f := File{URL: ts.URL + "/weights.pth", Name: "weights.pth", SHA256Prefix: sha[:8], MD5: md}
	dir := t.TempDir()
	var progress bytes.Buffer

	_, _, err := Get(context.Background(), f, dir, Options{Progress: &progress})
	if err == nil || !strings.Contains(err.Error(), "run again to resume") || !strings.Contains(err.Error(), "by hand") {
		t.Fatalf("truncated download: error = %v, want one saying to resume or fetch by hand", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "weights.pth")); !os.IsNotExist(err) {
		t.Errorf("truncated download left %s in place (stat error %v)", f.Name, err)
	}
	if st, err := os.Stat(filepath.Join(dir, "weights.pth.part")); err != nil || st.Size() != 10000 {
		t.Fatalf("partial file: %v, %v; want 10000 bytes", st, err)
	}

	path, gotSHA, err := Get(context.Background(), f, dir, Options{Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	if srv.ranges.Load() != 1 || gotSHA != sha {
		t.Errorf("resume: %d range requests, sha %s; want 1 and %s", srv.ranges.Load(), gotSHA, sha)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, content) {
		t.Errorf("resumed file differs from the served content")
	}
	if !strings.Contains(progress.String(), "weights.pth") {
		t.Errorf("no progress bar output: %q", progress.String())
	}
	// A second call finds the verified file and does not download.
	srv.content = nil
	if _, _, err := Get(context.Background(), f, dir, Options{}); err != nil {
		t.Errorf("existing verified file: %v", err)
	}
}

func TestGetErrors(t *testing.T) {
	content := []byte("the real file")
	sha, md := sums(content)
	ts := httptest.NewServer(&server{content: content})
	defer ts.Close()
	missing := httptest.NewServer(http.NotFoundHandler())
	defer missing.Close()
	offline := httptest.NewServer(http.NotFoundHandler())
	offline.Close()
	for _, tc := range []struct {
		name string
		f    File
		want string
	}{
		{"sha256 mismatch", File{URL: ts.URL, Name: "a", SHA256: strings.Repeat("0", 64)}, "does not match the expected"},
		{"prefix mismatch", File{URL: ts.URL, Name: "b", SHA256Prefix: "ffffffff"}, "does not start with the expected ffffffff"},
		{"md5 mismatch", File{URL: ts.URL, Name: "c", SHA256: sha, MD5: strings.Repeat("1", 32)}, "md5"},
		{"404", File{URL: missing.URL + "/x", Name: "d", MD5: md}, "HTTP 404"},
		{"offline", File{URL: offline.URL + "/x", Name: "e", MD5: md}, "offline?"},
	} {
		dir := t.TempDir()
		_, _, err := Get(context.Background(), tc.f, dir, Options{})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "by hand") ||
			!strings.Contains(err.Error(), filepath.Join(dir, tc.f.Name)) {
			t.Errorf("%s: error = %v, want one containing %q, \"by hand\" and the destination", tc.name, err, tc.want)
		}
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if e.Name() == tc.f.Name {
				t.Errorf("%s: unverified file %s left in place", tc.name, e.Name())
			}
		}
	}
}

func writeTgz(t *testing.T, path string, files map[string]string) {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for name, body := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		io.WriteString(tw, body)
	}
	tw.Close()
	zw.Close()
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestExtractTarGz(t *testing.T) {
	dir := t.TempDir()
	archive := filepath.Join(dir, "a.tgz")
	writeTgz(t, archive, map[string]string{"devkit/cars_meta.mat": "meta", "devkit/README.txt": "hi"})
	if err := ExtractTarGz(archive, dir); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "devkit", "cars_meta.mat")); err != nil || string(b) != "meta" {
		t.Errorf("extracted file: %q, %v", b, err)
	}
	evil := filepath.Join(dir, "evil.tgz")
	writeTgz(t, evil, map[string]string{"../outside": "x"})
	if err := ExtractTarGz(evil, dir); err == nil || !strings.Contains(err.Error(), "escapes") {
		t.Errorf("escaping entry: %v", err)
	}
	b, _ := os.ReadFile(archive)
	trunc := filepath.Join(dir, "trunc.tgz")
	os.WriteFile(trunc, b[:len(b)/2], 0o644)
	other := t.TempDir()
	if err := ExtractTarGz(trunc, other); err == nil {
		t.Error("truncated archive: no error")
	}
	if entries, _ := os.ReadDir(other); len(entries) != 0 {
		t.Errorf("truncated archive left %d entries behind", len(entries))
	}
}
