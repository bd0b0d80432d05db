// Package download fetches files over HTTP(S) resumably and verifies them: a download goes to
// <name>.part and continues from its length with a Range request after an interruption; the
// file is renamed into place only once its checksum matches. Every failure returns an error
// that says what to download by hand and where to put it.
package download

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/fgn-paper/fgn/internal/progress"
)

// File is a file to fetch and how to verify it. At least one checksum should be set; a file
// with none is accepted as downloaded (and the caller should say so).
type File struct {
	URL          string
	Name         string // file name in the destination directory
	SHA256       string // full hex sha256, if published
	SHA256Prefix string // leading hex digits of the sha256 (torchvision puts 8 in weight file names)
	MD5          string // hex md5 (torchvision's dataset checksums)
}

// Verified reports which checksums f carries, for logs and manifests.
func (f File) Verified() string {
	var s []string
	if f.SHA256 != "" {
		s = append(s, "sha256")
	}
	if f.SHA256Prefix != "" {
		s = append(s, fmt.Sprintf("sha256 prefix %s", f.SHA256Prefix))
	}
	if f.MD5 != "" {
		s = append(s, "md5 "+f.MD5)
	}
	if len(s) == 0 {
		return "no published checksum"
	}
	return strings.Join(s, ", ")
}

// Check verifies the file at path against f's checksums and returns its sha256.
func (f File) Check(path string) (sha string, err error) {
	fh, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer fh.Close()
	s, m := sha256.New(), md5.New()
	if _, err := io.Copy(io.MultiWriter(s, m), fh); err != nil {
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	sha = hex.EncodeToString(s.Sum(nil))
	if err := f.compare(sha, m); err != nil {
		return sha, fmt.Errorf("%s: %w", path, err)
	}
	return sha, nil
}

func (f File) compare(sha string, m hash.Hash) error {
	switch {
	case f.SHA256 != "" && !strings.EqualFold(sha, f.SHA256):
		return fmt.Errorf("sha256 %s does not match the expected %s", sha, f.SHA256)
	case f.SHA256Prefix != "" && !strings.HasPrefix(sha, strings.ToLower(f.SHA256Prefix)):
		return fmt.Errorf("sha256 %s does not start with the expected %s", sha, f.SHA256Prefix)
	case f.MD5 != "" && !strings.EqualFold(hex.EncodeToString(m.Sum(nil)), f.MD5):
		return fmt.Errorf("md5 %s does not match the expected %s", hex.EncodeToString(m.Sum(nil)), f.MD5)
	}
	return nil
}

// Options configure Get.
type Options struct {
	Client   *http.Client // nil: http.DefaultClient
	Progress io.Writer    // where the progress bar goes; nil: none
}

// Get makes sure dir/f.Name exists and matches f's checksums, downloading it (or the rest of
// an interrupted download) if needed, and returns its path and sha256.
func Get(ctx context.Context, f File, dir string, opt Options) (path, sha string, err error) {
	path = filepath.Join(dir, f.Name)
	byHand := func(err error) error {
		return fmt.Errorf("%w\n  download %s by hand (checksum: %s) and put it at %s", err, f.URL, f.Verified(), path)
	}
	if _, statErr := os.Stat(path); statErr == nil {
		sha, err := f.Check(path)
		if err != nil {
			return "", "", byHand(fmt.Errorf("existing file does not verify: %w (delete it to download again)", err))
		}
		return path, sha, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", err
	}
	part := path + ".part"
	if err := fetch(ctx, f.URL, part, opt); err != nil {
		return "", "", byHand(err)
	}
	sha, err = f.Check(part)
	if err != nil {
		os.Remove(part)
		return "", "", byHand(fmt.Errorf("downloaded file is not the expected one (removed): %w", err))
	}
	if err := os.Rename(part, path); err != nil {
		return "", "", err
	}
	return path, sha, nil
}

// fetch appends the rest of url to part, resuming from part's current length.
func fetch(ctx context.Context, url, part string, opt Options) error {
	client := opt.Client
	if client == nil {
		client = http.DefaultClient
	}
	var have int64
	if st, err := os.Stat(part); err == nil {
		have = st.Size()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	if have > 0 {
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-", have))
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("cannot download %s (offline?): %w", url, err)
	}
	defer resp.Body.Close()
	flags := os.O_CREATE | os.O_WRONLY
	total := resp.ContentLength
	switch {
	case resp.StatusCode == http.StatusPartialContent && have > 0:
		flags |= os.O_APPEND
		if total >= 0 {
			total += have
		}
	case resp.StatusCode == http.StatusRequestedRangeNotSatisfiable && have > 0:
		return nil // the part is complete; the checksum decides
	case resp.StatusCode == http.StatusOK:
		flags |= os.O_TRUNC // no range support: start over
		have = 0
	default:
		return fmt.Errorf("downloading %s: HTTP %s", url, resp.Status)
	}
	out, err := os.OpenFile(part, flags, 0o644)
	if err != nil {
		return err
	}
	var w io.Writer = out
	if opt.Progress != nil {
		bar := progress.New(opt.Progress, total, progress.Options{Description: filepath.Base(strings.TrimSuffix(part, ".part")),
			Bytes: true, ETA: true})
		bar.Set(have)
		w = io.MultiWriter(out, bar)
	}
	n, copyErr := io.Copy(w, resp.Body)
	closeErr := out.Close()
	if copyErr != nil {
		return fmt.Errorf("download of %s interrupted after %d bytes (%v); run again to resume from %s", url, have+n, copyErr, part)
	}
	if total >= 0 && have+n != total {
		return fmt.Errorf("download of %s stopped at %d of %d bytes; run again to resume from %s", url, have+n, total, part)
	}
	return closeErr
}

// ExtractTarGz extracts a .tgz archive into dir. Entries are first written under a temporary
// directory in dir and each top-level entry is renamed into place at the end, so an
// interrupted extraction leaves no partial directory behind; top-level entries that already
// exist are left alone. Paths escaping dir, links and special files are rejected.
func ExtractTarGz(archive, dir string) error {
	f, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("%s: %w", archive, err)
	}
	tmp, err := os.MkdirTemp(dir, ".extract-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	tops := map[string]bool{}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("%s is corrupt or truncated: %w", archive, err)
		}
		name := filepath.Clean(filepath.FromSlash(h.Name))
		if filepath.IsAbs(name) || name == ".." || strings.HasPrefix(name, ".."+string(filepath.Separator)) {
			return fmt.Errorf("%s: entry %q escapes the destination", archive, h.Name)
		}
		if name == "." {
			continue
		}
		tops[strings.Split(name, string(filepath.Separator))[0]] = true
		target := filepath.Join(tmp, name)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			out, err := os.Create(target)
			if err != nil {
				return err
			}
			_, err = io.Copy(out, tr)
			if cerr := out.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return fmt.Errorf("%s: extracting %s: %w", archive, h.Name, err)
			}
		default:
			return fmt.Errorf("%s: entry %q is not a regular file or directory", archive, h.Name)
		}
	}
	for top := range tops {
		dst := filepath.Join(dir, top)
		if _, err := os.Stat(dst); err == nil {
			continue
		}
		if err := os.Rename(filepath.Join(tmp, top), dst); err != nil {
			return err
		}
	}
	return nil
}
