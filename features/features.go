// Package features reads and writes the feature files the experiments train on: a float
// feature matrix (N×D) and an integer label vector (N) as NumPy .npy files, so that features
// extracted by PyTorch users (np.save of a float32/float64 array and of integer labels) load
// directly. Every reader validates shape, dtype, label range and finiteness, and its errors
// name the file and the problem. Writers are atomic: a file is either complete or absent.
//
// A feature cache (written by data/fetch, read by the Cars196 experiment) is a directory with
// one feature and one label file per split, named by [CachePaths].
package features

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
)

// Set is a labelled feature set held in memory as float32, the dtype the experiments train in.
type Set struct {
	X    []float32 // N×D, row-major
	Y    []int32   // N labels in [0, classes)
	N, D int
}

// Example returns the features of example i (a view into X).
func (s *Set) Example(i int) []float32 { return s.X[i*s.D : (i+1)*s.D] }

// Classes returns 1 + the largest label, the smallest class count consistent with the labels.
func (s *Set) Classes() int {
	c := int32(-1)
	for _, y := range s.Y {
		c = max(c, y)
	}
	return int(c) + 1
}

// Validate checks the internal consistency of s and that every label lies in [0, classes)
// (classes ≤ 0 skips the upper bound) and every feature is finite. name is used in errors.
func (s *Set) Validate(name string, classes int) error {
	switch {
	case s.N < 1 || s.D < 1:
		return fmt.Errorf("%s: empty feature set (%d examples × %d features)", name, s.N, s.D)
	case len(s.X) != s.N*s.D:
		return fmt.Errorf("%s: %d feature values for %d×%d", name, len(s.X), s.N, s.D)
	case len(s.Y) != s.N:
		return fmt.Errorf("%s: %d labels for %d examples", name, len(s.Y), s.N)
	}
	for i, y := range s.Y {
		if y < 0 || (classes > 0 && int(y) >= classes) {
			return fmt.Errorf("%s: label %d of example %d is outside [0, %d)", name, y, i, classes)
		}
	}
	for k, v := range s.X {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return fmt.Errorf("%s: feature %d of example %d is %v (features must be finite)", name, k%s.D, k/s.D, v)
		}
	}
	return nil
}

// Load reads a feature file (2-D, float32 or float64) and a label file (1-D, any integer
// dtype, or float with integral values) and validates them: matching example counts, finite
// features, non-negative labels. Use [Set.Validate] to also bound the labels by a class count.
func Load(featuresPath, labelsPath string) (*Set, error) {
	hx, x, err := readNPY(featuresPath)
	if err != nil {
		return nil, err
	}
	if kind, _, _ := hx.dtype(); kind != 'f' {
		return nil, fmt.Errorf("%s: features must be float32 or float64, got dtype %q", featuresPath, hx.descr)
	}
	if len(hx.shape) != 2 {
		return nil, fmt.Errorf("%s: features must be 2-D (examples × features), got shape %v", featuresPath, hx.shape)
	}
	hy, y, err := readNPY(labelsPath)
	if err != nil {
		return nil, err
	}
	if len(hy.shape) != 1 {
		return nil, fmt.Errorf("%s: labels must be 1-D, got shape %v", labelsPath, hy.shape)
	}
	n, d := hx.shape[0], hx.shape[1]
	if hy.shape[0] != n {
		return nil, fmt.Errorf("%s has %d labels but %s has %d examples", labelsPath, hy.shape[0], featuresPath, n)
	}
	s := &Set{X: make([]float32, len(x)), Y: make([]int32, n), N: n, D: d}
	for i, v := range x {
		f := float32(v)
		if math.IsNaN(v) || math.IsInf(float64(f), 0) {
			return nil, fmt.Errorf("%s: feature %d of example %d is %v (features must be finite in float32)", featuresPath, i%d, i/d, v)
		}
		s.X[i] = f
	}
	for i, v := range y {
		if v != math.Trunc(v) || v < 0 || v > math.MaxInt32 {
			return nil, fmt.Errorf("%s: label %v of example %d is not a non-negative integer", labelsPath, v, i)
		}
		s.Y[i] = int32(v)
	}
	if err := s.Validate(featuresPath, 0); err != nil {
		return nil, err
	}
	return s, nil
}

// Save validates s and writes it atomically as a float32 feature file and an int64 label file.
func (s *Set) Save(featuresPath, labelsPath string) error {
	if err := s.Validate(featuresPath, 0); err != nil {
		return err
	}
	if err := writeNPY(featuresPath, "<f4", []int{s.N, s.D}, putFloat32s(s.X)); err != nil {
		return err
	}
	return writeNPY(labelsPath, "<i8", []int{s.N}, putInt64s(s.Y))
}

// CachePaths returns the feature and label file of a split ("train" or "test") in a feature
// cache directory: <dir>/<split>_features.npy and <dir>/<split>_labels.npy.
func CachePaths(dir, split string) (featuresPath, labelsPath string) {
	return filepath.Join(dir, split+"_features.npy"), filepath.Join(dir, split+"_labels.npy")
}

// LoadSplit loads one split of a feature cache directory.
func LoadSplit(dir, split string) (*Set, error) {
	return Load(CachePaths(dir, split))
}

// Standardize returns the per-coordinate mean and standard deviation of ref (population
// standard deviation; a constant coordinate gets 1) and applies (x-mean)/std in place to ref
// and to every other set, which must have ref's dimension.
func Standardize(ref *Set, others ...*Set) (mean, std []float64, err error) {
	for _, o := range others {
		if o.D != ref.D {
			return nil, nil, fmt.Errorf("standardize: dimension %d differs from the reference's %d", o.D, ref.D)
		}
	}
	mean, std = make([]float64, ref.D), make([]float64, ref.D)
	for i := range ref.N {
		for k, v := range ref.Example(i) {
			mean[k] += float64(v)
		}
	}
	for k := range mean {
		mean[k] /= float64(ref.N)
	}
	for i := range ref.N {
		for k, v := range ref.Example(i) {
			dv := float64(v) - mean[k]
			std[k] += dv * dv
		}
	}
	for k := range std {
		std[k] = math.Sqrt(std[k] / float64(ref.N))
		if std[k] == 0 {
			std[k] = 1
		}
	}
	for _, s := range append([]*Set{ref}, others...) {
		for i := range s.N {
			x := s.Example(i)
			for k := range x {
				x[k] = float32((float64(x[k]) - mean[k]) / std[k])
			}
		}
	}
	return mean, std, nil
}

// StratifiedSplit carves a held-out part from s: within every class, a seeded shuffle puts
// round(fraction·n_c) of its n_c examples into held (at least one when n_c ≥ 2, and never all
// of them), the rest into kept. Example order within each part follows s.
func StratifiedSplit(s *Set, fraction float64, seed uint64) (kept, held *Set, err error) {
	if !(fraction > 0 && fraction < 1) {
		return nil, nil, fmt.Errorf("held-out fraction must be in (0, 1), got %g", fraction)
	}
	byClass := map[int32][]int{}
	for i, y := range s.Y {
		byClass[y] = append(byClass[y], i)
	}
	rng := rand.New(rand.NewPCG(seed, 0x57a7))
	isHeld := make([]bool, s.N)
	for c := range int32(s.Classes()) {
		idx := byClass[c]
		k := int(math.Round(fraction * float64(len(idx))))
		if len(idx) >= 2 {
			k = min(max(k, 1), len(idx)-1)
		} else {
			k = 0
		}
		rng.Shuffle(len(idx), func(a, b int) { idx[a], idx[b] = idx[b], idx[a] })
		for _, i := range idx[:k] {
			isHeld[i] = true
		}
	}
	kept, held = &Set{D: s.D}, &Set{D: s.D}
	for i := range s.N {
		dst := kept
		if isHeld[i] {
			dst = held
		}
		dst.X = append(dst.X, s.Example(i)...)
		dst.Y = append(dst.Y, s.Y[i])
		dst.N++
	}
	if held.N == 0 || kept.N == 0 {
		return nil, nil, fmt.Errorf("a held-out fraction of %g of %d examples leaves one part empty", fraction, s.N)
	}
	return kept, held, nil
}
