package digits

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/fgn-paper/fgn/features"
)

// TestLoad checks the embedded file against the checksum in README.md and the loaded set's
// shape, value ranges and class balance.
func TestLoad(t *testing.T) {
	const wantSHA = "46abec6b12486ad9e51943373abcf22bbea1b5a51a1619b361570d8893f1464a"
	sum := sha256.Sum256(digitsCSV)
	if got := hex.EncodeToString(sum[:]); got != wantSHA {
		t.Fatalf("digits.csv.gz has SHA-256 %s, want %s (README.md)", got, wantSHA)
	}
	s, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate("digits", Classes); err != nil {
		t.Fatal(err)
	}
	if s.N != Examples || s.D != Pixels || s.Classes() != Classes {
		t.Fatalf("got %d examples × %d pixels, %d classes; want %d × %d, %d", s.N, s.D, s.Classes(),
			Examples, Pixels, Classes)
	}
	counts := make([]int, Classes)
	for _, y := range s.Y {
		counts[y]++
	}
	for c, n := range counts { // the test part holds 174-183 examples of each digit
		if n < 174 || n > 183 {
			t.Errorf("digit %d: %d examples, want 174-183", c, n)
		}
	}
	if first := s.Example(0); first[2] != 5 || first[3] != 13 || s.Y[0] != 0 {
		t.Errorf("first image starts %v with label %d, want pixels 2-3 = 5, 13 and label 0", first[:4], s.Y[0])
	}
}

// TestParseRejects checks that malformed rows are rejected with an error naming the problem.
func TestParseRejects(t *testing.T) {
	row := func(pixel, label string) string {
		fields := make([]string, Pixels+1)
		for k := range fields {
			fields[k] = "0"
		}
		fields[5], fields[Pixels] = pixel, label
		return strings.Join(fields, ",") + "\n"
	}
	for _, tc := range []struct{ name, csv, want string }{
		{"pixel out of range", row("17", "3"), "pixel 5 is 17, outside [0, 16]"},
		{"label out of range", row("1", "10"), "label 10 is outside [0, 10)"},
		{"not a number", row("x", "1"), "row 1, column 6"},
		{"short row", "1,2,3\n", "wrong number of fields"},
		{"too few examples", row("1", "1"), "1 examples, want 1797"},
	} {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write([]byte(tc.csv))
		zw.Close()
		_, err := parse(buf.Bytes())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

// TestSplit checks Split's parts: sizes, stratification (every digit held out in proportion),
// and standardisation (training pixels of mean 0 and standard deviation 1 or, constant, 0).
func TestSplit(t *testing.T) {
	trainSet, heldOut, err := Split(1)
	if err != nil {
		t.Fatal(err)
	}
	if trainSet.N+heldOut.N != Examples || heldOut.N < 355 || heldOut.N > 365 {
		t.Fatalf("split %d + %d examples, want %d with about %.0f held out", trainSet.N, heldOut.N, Examples,
			HeldOutFraction*Examples)
	}
	counts := make([]int, Classes)
	for _, y := range heldOut.Y {
		counts[y]++
	}
	for c, n := range counts { // round(0.2·n_c) with n_c in [174, 183]
		if n < 35 || n > 37 {
			t.Errorf("digit %d: %d held out, want 35-37", c, n)
		}
	}
	for k := range Pixels {
		var sum, sq float64
		for i := range trainSet.N {
			v := float64(trainSet.Example(i)[k])
			sum += v
			sq += v * v
		}
		mean, variance := sum/float64(trainSet.N), sq/float64(trainSet.N)
		if math.Abs(mean) > 1e-5 || (math.Abs(variance-1) > 1e-4 && variance > 1e-10) {
			t.Errorf("pixel %d: training mean %g and mean square %g, want 0 and 1 (or 0 if constant)", k, mean, variance)
		}
	}
}

// TestSplitUnitRange checks that SplitUnitRange holds out the examples Split holds out, with each
// pixel count v of the raw data (the same split of Load, unscaled) as v/8 − 1.
func TestSplitUnitRange(t *testing.T) {
	const seed = 2
	trainSet, heldOut, err := SplitUnitRange(seed)
	if err != nil {
		t.Fatal(err)
	}
	all, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	rawTrain, rawHeldOut, err := features.StratifiedSplit(all, HeldOutFraction, seed)
	if err != nil {
		t.Fatal(err)
	}
	stdTrain, stdHeldOut, err := Split(seed)
	if err != nil {
		t.Fatal(err)
	}
	for _, part := range []struct {
		name          string
		got, raw, std *features.Set
	}{{"training", trainSet, rawTrain, stdTrain}, {"held-out", heldOut, rawHeldOut, stdHeldOut}} {
		if !slices.Equal(part.got.Y, part.std.Y) {
			t.Errorf("%s part: labels differ from Split's", part.name)
		}
		for k, v := range part.got.X {
			if want := float64(part.raw.X[k])/8 - 1; float64(v) != want || v < -1 || v > 1 {
				t.Fatalf("%s part: pixel value %d is %g, want %g (tolerance 0) in [−1, 1]", part.name, k, v, want)
			}
		}
	}
}

// TestDatasetsRejectsBatch checks that a batch size outside [1, training examples] is an error
// naming it.
func TestDatasetsRejectsBatch(t *testing.T) {
	for _, batch := range []int{0, Examples} {
		_, _, err := Datasets(nil, batch, 1)
		if err == nil || !strings.Contains(err.Error(), "batch size") {
			t.Errorf("batch %d: error %v, want one naming the batch size", batch, err)
		}
	}
}
