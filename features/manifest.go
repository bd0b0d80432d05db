package features

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/fgn-paper/fgn/internal/atomicfile"
	"github.com/fgn-paper/fgn/internal/filehash"
)

// ManifestName is the file name of a feature cache's manifest.
const ManifestName = "manifest.json"

// Manifest describes how a feature cache was made and fingerprints its files. It is written
// last, after every data file, so a cache directory with a manifest is complete.
type Manifest struct {
	Source    string            `json:"source"`    // the dataset and where it was read from
	Weights   ManifestWeights   `json:"weights"`   // the encoder's weights
	Model     string            `json:"model"`     // the encoder's architecture and output
	Transform string            `json:"transform"` // the image preprocessing
	Backend   string            `json:"backend"`   // the compute backend that extracted the features
	Splits    map[string]Split  `json:"splits"`    // "train", "test"
	Files     map[string]string `json:"files"`     // cache-relative file name → sha256 (hex)
	Created   string            `json:"created"`   // RFC 3339 time
}

// The canonical Cars196 split of Krause et al. (2013), as torchvision's StanfordCars lays it out.
const (
	Cars196Train   = 8144
	Cars196Test    = 8041
	Cars196Classes = 196
)

// Cars196 returns nil when the manifest records the canonical Cars196 split (Cars196Train
// training and Cars196Test test examples of Cars196Classes classes), else an error naming the
// first difference. It says nothing about the encoder that made the features.
func (m *Manifest) Cars196() error {
	for _, want := range []struct {
		split    string
		examples int
	}{{"train", Cars196Train}, {"test", Cars196Test}} {
		s, ok := m.Splits[want.split]
		switch {
		case !ok:
			return fmt.Errorf("not the canonical Cars196 split: no %s split", want.split)
		case s.Examples != want.examples || s.Classes != Cars196Classes:
			return fmt.Errorf("not the canonical Cars196 split: %s has %d examples of %d classes (Cars196: %d of %d)",
				want.split, s.Examples, s.Classes, want.examples, Cars196Classes)
		}
	}
	return nil
}

// ManifestWeights identifies a weight file.
type ManifestWeights struct {
	Name   string `json:"name"` // e.g. "torchvision ResNet50_Weights.IMAGENET1K_V2"
	URL    string `json:"url,omitempty"`
	File   string `json:"file"`
	SHA256 string `json:"sha256"`
}

// Split summarises one split of a cache.
type Split struct {
	Examples int `json:"examples"`
	Features int `json:"features"` // the feature dimension
	Classes  int `json:"classes"`  // the dataset's class count (labels lie in [0, Classes))
}

// WriteManifest fingerprints the splits' feature and label files in dir (see [CachePaths]) into
// m.Files and writes m atomically as dir/manifest.json.
func WriteManifest(dir string, m *Manifest) error {
	m.Files = map[string]string{}
	for split := range m.Splits {
		fx, fy := CachePaths(dir, split)
		for _, p := range []string{fx, fy} {
			sum, err := filehash.SHA256(p)
			if err != nil {
				return err
			}
			m.Files[filepath.Base(p)] = sum
		}
	}
	return atomicfile.Write(filepath.Join(dir, ManifestName), func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(m)
	})
}

// ReadManifest reads dir/manifest.json.
func ReadManifest(dir string) (*Manifest, error) {
	b, err := os.ReadFile(filepath.Join(dir, ManifestName))
	if err != nil {
		return nil, fmt.Errorf("feature cache %s has no readable manifest (incomplete or not made by data/fetch): %w", dir, err)
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, ManifestName), err)
	}
	return &m, nil
}

// VerifyCache reads the manifest of a feature cache and checks it: every split's feature and
// label files are listed, every listed file's sha256 matches, and every split loads with the
// recorded example count, feature dimension and label range. The error names the first
// problem found.
func VerifyCache(dir string) (*Manifest, error) {
	m, err := ReadManifest(dir)
	if err != nil {
		return nil, err
	}
	if len(m.Splits) == 0 {
		return nil, fmt.Errorf("feature cache %s: manifest lists no splits", dir)
	}
	names := make([]string, 0, len(m.Files))
	for name := range m.Files {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if name != filepath.Base(name) || strings.HasPrefix(name, ".") {
			return nil, fmt.Errorf("feature cache %s: manifest lists a file outside the cache: %q", dir, name)
		}
		sum, err := filehash.SHA256(filepath.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("feature cache %s: %w", dir, err)
		}
		if sum != m.Files[name] {
			return nil, fmt.Errorf("feature cache %s: %s has sha256 %s, the manifest says %s (file changed or corrupt)", dir, name, sum, m.Files[name])
		}
	}
	for split, info := range m.Splits {
		fx, fy := CachePaths(dir, split)
		for _, p := range []string{fx, fy} {
			if _, ok := m.Files[filepath.Base(p)]; !ok {
				return nil, fmt.Errorf("feature cache %s: manifest has no checksum for %s", dir, filepath.Base(p))
			}
		}
		s, err := LoadSplit(dir, split)
		if err != nil {
			return nil, err
		}
		if s.N != info.Examples || s.D != info.Features {
			return nil, fmt.Errorf("feature cache %s: split %s has %d×%d features, the manifest says %d×%d", dir, split, s.N, s.D, info.Examples, info.Features)
		}
		if err := s.Validate(fx, info.Classes); err != nil {
			return nil, err
		}
	}
	return m, nil
}
