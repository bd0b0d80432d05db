package headopt

import (
	"fmt"
	"os"
	"slices"

	"github.com/fgn-paper/fgn/experiments/train"
	"github.com/fgn-paper/fgn/features"
)

// Data is the experiment's input: raw (unstandardised) training and test features, and what
// they are.
type Data struct {
	Train, Test *features.Set
	Classes     int
	// Synthetic marks the Gaussian-mixture stand-in.
	Synthetic bool
	// Source describes the data for the provenance comments.
	Source string
}

// Tag is the data's name in file names: "cars196", or "synthetic_standin" for the stand-in.
func (d *Data) Tag() string {
	if d.Synthetic {
		return "synthetic_standin"
	}
	return "cars196"
}

// Title names the data in figure titles and table captions.
func (d *Data) Title() string {
	if d.Synthetic {
		return "synthetic stand-in, NOT Cars196"
	}
	return "Cars196"
}

// LoadCache reads the train and test splits of a feature cache directory (features.CachePaths)
// and checks that both have the same dimension and labels in [0, classes).
func LoadCache(dir string, classes int) (*Data, error) {
	if classes < 2 {
		return nil, fmt.Errorf("headopt: need at least 2 classes, got %d", classes)
	}
	if st, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("headopt: feature cache: %w", err)
	} else if !st.IsDir() {
		return nil, fmt.Errorf("headopt: feature cache %s is not a directory", dir)
	}
	tr, err := features.LoadSplit(dir, "train")
	if err != nil {
		return nil, fmt.Errorf("headopt: feature cache: %w", err)
	}
	te, err := features.LoadSplit(dir, "test")
	if err != nil {
		return nil, fmt.Errorf("headopt: feature cache: %w", err)
	}
	if tr.D != te.D {
		return nil, fmt.Errorf("headopt: feature cache %s: training features have dimension %d, test features %d", dir, tr.D, te.D)
	}
	if err := tr.Validate("training split", classes); err != nil {
		return nil, fmt.Errorf("headopt: feature cache %s: %w", dir, err)
	}
	if err := te.Validate("test split", classes); err != nil {
		return nil, fmt.Errorf("headopt: feature cache %s: %w", dir, err)
	}
	return &Data{Train: tr, Test: te, Classes: classes,
		Source: fmt.Sprintf("feature cache %s (%d train, %d test, d=%d, C=%d)", dir, tr.N, te.N, tr.D, classes)}, nil
}

// Synthetic returns the profile's Gaussian-mixture stand-in (train.GaussianMixture, seed 1;
// draw 0 is the training split, draw 1 the test split).
func Synthetic(p Profile) (*Data, error) {
	tr, err := train.GaussianMixture(1, 0, p.SynthTrain, p.SynthDim, p.SynthClasses, p.SynthSeparation)
	if err != nil {
		return nil, err
	}
	te, err := train.GaussianMixture(1, 1, p.SynthTest, p.SynthDim, p.SynthClasses, p.SynthSeparation)
	if err != nil {
		return nil, err
	}
	return &Data{Train: tr, Test: te, Classes: p.SynthClasses, Synthetic: true,
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
