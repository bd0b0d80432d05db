// Package digits loads the optical-recognition-of-handwritten-digits data set (UCI optdigits,
// test part, as scikit-learn ships it): 1797 grey-scale 8×8 images of the digits 0-9, each pixel
// an integer count in [0, 16]. The data is embedded in the package, so it is available offline;
// README.md beside this file gives its provenance, checksum and licence (CC BY 4.0).
package digits

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"encoding/csv"
	"fmt"
	"io"
	"strconv"

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
