package headopt

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/fgn-paper/fgn/features"
)

// Data is the experiment's input: raw (unstandardised) training and test features, and what
// they are.
type Data struct {
	Train, Test *features.Set
	Classes     int
	// Synthetic marks the Gaussian-mixture stand-in, Cars196 a feature cache whose manifest
	// records the canonical Cars196 split (features.Manifest.Cars196).
	Synthetic, Cars196 bool
	// Source describes the data for the provenance comments.
	Source string
	// tag and title: see Tag and Title.
	tag, title string
}

// Tag is the data's name in file names: "cars196" for the canonical Cars196 cache,
// "synthetic_standin" for the stand-in, "features_<directory name>" for any other cache.
func (d *Data) Tag() string { return d.tag }

// Title names the data in figure titles and table captions; it says when the data is not
// Cars196.
func (d *Data) Title() string { return d.title }

// LoadCache reads a feature cache directory made by data/fetch: its manifest
// (features.Manifest), which gives the class count and what the data is, and the train and test
// splits (features.CachePaths), checking that they have the manifest's example counts, one
// dimension, and labels in [0, classes).
func LoadCache(dir string) (*Data, error) {
	if st, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("headopt: feature cache: %w", err)
	} else if !st.IsDir() {
		return nil, fmt.Errorf("headopt: feature cache %s is not a directory", dir)
	}
	m, err := features.ReadManifest(dir)
	if err != nil {
		return nil, fmt.Errorf("headopt: %w", err)
	}
	d := &Data{}
	sets := map[string]**features.Set{"train": &d.Train, "test": &d.Test}
	for _, split := range []string{"train", "test"} {
		info, ok := m.Splits[split]
		if !ok {
			return nil, fmt.Errorf("headopt: feature cache %s: the manifest has no %s split", dir, split)
		}
		s, err := features.LoadSplit(dir, split)
		if err != nil {
			return nil, fmt.Errorf("headopt: feature cache: %w", err)
		}
		if s.N != info.Examples {
			return nil, fmt.Errorf("headopt: feature cache %s: the %s split has %d examples, its manifest says %d", dir, split, s.N, info.Examples)
		}
		*sets[split] = s
	}
	d.Classes = m.Splits["train"].Classes
	if c := m.Splits["test"].Classes; c != d.Classes {
		return nil, fmt.Errorf("headopt: feature cache %s: the manifest gives the training split %d classes and the test split %d", dir, d.Classes, c)
	}
	if d.Classes < 2 {
		return nil, fmt.Errorf("headopt: feature cache %s: need at least 2 classes, the manifest says %d", dir, d.Classes)
	}
	if d.Train.D != d.Test.D {
		return nil, fmt.Errorf("headopt: feature cache %s: training features have dimension %d, test features %d", dir, d.Train.D, d.Test.D)
	}
	if err := d.Train.Validate("training split", d.Classes); err != nil {
		return nil, fmt.Errorf("headopt: feature cache %s: %w", dir, err)
	}
	if err := d.Test.Validate("test split", d.Classes); err != nil {
		return nil, fmt.Errorf("headopt: feature cache %s: %w", dir, err)
	}
	shape := fmt.Sprintf("%d train, %d test, d=%d, C=%d", d.Train.N, d.Test.N, d.Train.D, d.Classes)
	d.Source = fmt.Sprintf("feature cache %s: %s; encoder weights %s (%s)", dir, m.Source, m.Weights.Name, shape)
	d.tag, d.title, d.Cars196 = cacheNames(dir, m)
	if err := m.Cars196(); err != nil {
		d.Source += "; " + err.Error()
	}
	return d, nil
}

// SyntheticTag and SyntheticTitle are the Tag and Title of the synthetic stand-in (Synthetic).
const (
	SyntheticTag   = "synthetic_standin"
	SyntheticTitle = "synthetic stand-in, NOT Cars196"
)

// CacheNames reads the manifest of the feature cache in dir and returns the Tag and Title that
// LoadCache gives its data; for dir "", those of the synthetic stand-in.
func CacheNames(dir string) (tag, title string, err error) {
	if dir == "" {
		return SyntheticTag, SyntheticTitle, nil
	}
	m, err := features.ReadManifest(dir)
	if err != nil {
		return "", "", fmt.Errorf("headopt: %w", err)
	}
	tag, title, _ = cacheNames(dir, m)
	return tag, title, nil
}

// cacheNames names the cache in dir from its manifest m: "cars196" and "Cars196" for the
// canonical split, otherwise "features_<directory name>" and a title saying it is not Cars196.
func cacheNames(dir string, m *features.Manifest) (tag, title string, cars196 bool) {
	notCars := m.Cars196()
	if notCars == nil {
		return "cars196", "Cars196", true
	}
	name := fileName(dir)
	return "features_" + name, fmt.Sprintf("feature cache %s (C = %d, not Cars196)", name, m.Splits["train"].Classes), false
}

// fileName is the directory's base name with every character outside [A-Za-z0-9_-] replaced by
// '_', for file names.
func fileName(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	return strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			return r
		}
		return '_'
	}, filepath.Base(abs))
}

// Synthetic returns the profile's Gaussian-mixture stand-in (features.GaussianMixture, seed 1;
// draw 0 is the training split, draw 1 the test split).
func Synthetic(p Profile) (*Data, error) {
	tr, err := features.GaussianMixture(1, 0, p.SynthTrain, p.SynthDim, p.SynthClasses, p.SynthSeparation)
	if err != nil {
		return nil, err
	}
	te, err := features.GaussianMixture(1, 1, p.SynthTest, p.SynthDim, p.SynthClasses, p.SynthSeparation)
	if err != nil {
		return nil, err
	}
	return &Data{Train: tr, Test: te, Classes: p.SynthClasses, Synthetic: true,
		tag: SyntheticTag, title: SyntheticTitle,
		Source: fmt.Sprintf("synthetic stand-in, NOT Cars196: Gaussian mixture (%d train, %d test, d=%d, C=%d, separation %g)",
			tr.N, te.N, tr.D, p.SynthClasses, p.SynthSeparation)}, nil
}

// standardized returns copies of fit and others standardised per coordinate with fit's mean
// and standard deviation (features.Standardize), leaving the inputs unchanged.
func standardized(fit *features.Set, others ...*features.Set) (*features.Set, []*features.Set, error) {
	clone := func(s *features.Set) *features.Set {
		return &features.Set{X: slices.Clone(s.X), Y: slices.Clone(s.Y), N: s.N, D: s.D}
	}
	f := clone(fit)
	outs := make([]*features.Set, len(others))
	for i, o := range others {
		outs[i] = clone(o)
	}
	if _, _, err := features.Standardize(f, outs...); err != nil {
		return nil, nil, err
	}
	return f, outs, nil
}
