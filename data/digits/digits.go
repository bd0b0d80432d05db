// Package digits loads the optical-recognition-of-handwritten-digits data set (UCI optdigits,
// test part, as scikit-learn ships it): 1797 grey-scale 8×8 images of the digits 0-9, each pixel
// an integer count in [0, 16]. The data is embedded in the package, so it is available offline;
// README.md beside this file gives its provenance, checksum and licence (CC BY 4.0). Split and
// Datasets give the standardised training and held-out parts that the examples and the model zoo
// (experiments/zoo) train and evaluate on; SplitUnitRange and UnitRangeDatasets the same parts
// with the pixels scaled to [−1, 1], as GoMLX's KAN example feeds them.
package digits

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"encoding/csv"
	"fmt"
	"io"
	"math/rand"
	"strconv"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/dataset"

	"github.com/fgn-paper/fgn/features"
)

// Sizes of the data set: examples, pixels per image (8×8) and classes.
const (
	Examples = 1797
	Pixels   = 64
	Classes  = 10
)

//go:embed digits.csv.gz
var digitsCSV []byte

// Load returns the whole data set as a feature set: N = 1797 examples of D = 64 pixel counts in
// [0, 16] (row-major 8×8 images) with their digit labels in [0, 10).
func Load() (*features.Set, error) {
	return parse(digitsCSV)
}

// parse reads gzip-compressed CSV rows of Pixels integer pixel counts followed by the label.
func parse(gz []byte) (*features.Set, error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, fmt.Errorf("digits: %w", err)
	}
	r := csv.NewReader(zr)
	r.FieldsPerRecord = Pixels + 1
	r.ReuseRecord = true
	s := &features.Set{D: Pixels}
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("digits: %w", err)
		}
		for k, field := range rec {
			v, err := strconv.Atoi(field)
			switch {
			case err != nil:
				return nil, fmt.Errorf("digits: row %d, column %d: %w", s.N+1, k+1, err)
			case k < Pixels && (v < 0 || v > 16):
				return nil, fmt.Errorf("digits: row %d: pixel %d is %d, outside [0, 16]", s.N+1, k, v)
			case k == Pixels && (v < 0 || v >= Classes):
				return nil, fmt.Errorf("digits: row %d: label %d is outside [0, %d)", s.N+1, v, Classes)
			case k < Pixels:
				s.X = append(s.X, float32(v))
			default:
				s.Y = append(s.Y, int32(v))
			}
		}
		s.N++
	}
	if err := zr.Close(); err != nil {
		return nil, fmt.Errorf("digits: %w", err)
	}
	if s.N != Examples {
		return nil, fmt.Errorf("digits: %d examples, want %d", s.N, Examples)
	}
	return s, nil
}

// HeldOutFraction is the part of the data set that Split holds out: 20 %, stratified by digit.
const HeldOutFraction = 0.2

// Split loads the data set and splits it as the examples and experiments train on it: a
// stratified HeldOutFraction held out by a seeded shuffle within each digit, and both parts
// standardised per pixel with the training part's mean and standard deviation (a pixel constant
// over the training part is only centred).
func Split(seed uint64) (trainSet, heldOut *features.Set, err error) {
	return split(seed, func(trainSet, heldOut *features.Set) error {
		_, _, err := features.Standardize(trainSet, heldOut)
		return err
	})
}

// SplitUnitRange is Split with the pixels scaled to [−1, 1] instead of standardised, as GoMLX's
// cifar example scales its pixels for its KAN model (2x − 1 of x ∈ [0, 1]): each count v ∈ [0, 16]
// becomes v/8 − 1. The scaling is fixed, so it needs no statistics of the training part.
func SplitUnitRange(seed uint64) (trainSet, heldOut *features.Set, err error) {
	return split(seed, func(trainSet, heldOut *features.Set) error {
		for _, s := range []*features.Set{trainSet, heldOut} {
			for k, v := range s.X {
				s.X[k] = v/8 - 1
			}
		}
		return nil
	})
}

// split loads the data set, holds out a stratified HeldOutFraction by seed and scales both parts'
// pixels with scale.
func split(seed uint64, scale func(trainSet, heldOut *features.Set) error) (trainSet, heldOut *features.Set, err error) {
	all, err := Load()
	if err != nil {
		return nil, nil, err
	}
	if trainSet, heldOut, err = features.StratifiedSplit(all, HeldOutFraction, seed); err != nil {
		return nil, nil, fmt.Errorf("digits: %w", err)
	}
	if err := scale(trainSet, heldOut); err != nil {
		return nil, nil, fmt.Errorf("digits: %w", err)
	}
	return trainSet, heldOut, nil
}

// Datasets returns Split(seed) as GoMLX in-memory datasets on be, with inputs N×64 float32 and
// labels N×1 int32: the training part in static batches of batch examples, reshuffled every
// epoch by a generator seeded with seed (the last partial batch is dropped, so every step sees
// the same shapes), and the held-out part as a single batch, for train.Trainer.Eval.
func Datasets(be compute.Backend, batch int, seed uint64) (trainDS, heldOutDS *dataset.InMemoryDataset, err error) {
	return datasets(be, batch, seed, Split)
}

// UnitRangeDatasets is Datasets of SplitUnitRange(seed): the pixels in [−1, 1].
func UnitRangeDatasets(be compute.Backend, batch int, seed uint64) (trainDS, heldOutDS *dataset.InMemoryDataset, err error) {
	return datasets(be, batch, seed, SplitUnitRange)
}

// datasets returns the parts that split gives for seed as Datasets describes.
func datasets(be compute.Backend, batch int, seed uint64, split func(uint64) (*features.Set, *features.Set, error)) (
	trainDS, heldOutDS *dataset.InMemoryDataset, err error) {
	trainSet, heldOut, err := split(seed)
	if err != nil {
		return nil, nil, err
	}
	if batch < 1 || batch > trainSet.N {
		return nil, nil, fmt.Errorf("digits: batch size %d outside [1, %d], the training examples", batch, trainSet.N)
	}
	if trainDS, err = inMemory(be, "digits-train", trainSet); err != nil {
		return nil, nil, err
	}
	trainDS.BatchSize(batch, true).Shuffle().WithRand(rand.New(rand.NewSource(int64(seed))))
	if heldOutDS, err = inMemory(be, "digits-held-out", heldOut); err != nil {
		return nil, nil, err
	}
	heldOutDS.BatchSize(heldOut.N, false)
	return trainDS, heldOutDS, nil
}

// inMemory returns the set as a GoMLX in-memory dataset: inputs N×D float32, labels N×1 int32.
func inMemory(be compute.Backend, name string, s *features.Set) (*dataset.InMemoryDataset, error) {
	x := tensors.FromFlatDataAndDimensions(s.X, s.N, s.D)
	y := tensors.FromFlatDataAndDimensions(s.Y, s.N, 1)
	ds, err := dataset.InMemoryFromData(be, name, []any{x}, []any{y})
	if err != nil {
		return nil, fmt.Errorf("digits: %w", err)
	}
	return ds, nil
}
