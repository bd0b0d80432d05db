package features

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var fixtureX = []float32{0, .25, .5, .75, 1, 1.25}

func TestLoadNumPyFixtures(t *testing.T) {
	for _, tc := range []struct{ features, labels string }{
		{"f64_c.npy", "i64_labels.npy"},
		{"f32_c.npy", "i64_labels.npy"},
		{"f32_fortran.npy", "i64_labels.npy"},
		{"f32_c.npy", "u8_labels.npy"},
	} {
		s, err := Load(filepath.Join("testdata", tc.features), filepath.Join("testdata", tc.labels))
		if err != nil {
			t.Errorf("%s/%s: %v", tc.features, tc.labels, err)
			continue
		}
		if s.N != 2 || s.D != 3 {
			t.Errorf("%s: shape %d×%d, want 2×3", tc.features, s.N, s.D)
		}
		for i, v := range fixtureX {
			if s.X[i] != v {
				t.Errorf("%s: X[%d] = %v, want %v", tc.features, i, s.X[i], v)
			}
		}
	}
	s, _ := Load("testdata/f32_c.npy", "testdata/u8_labels.npy")
	if s.Y[0] != 1 || s.Y[1] != 3 || s.Classes() != 4 {
		t.Errorf("u8 labels = %v (classes %d), want [1 3] (classes 4)", s.Y, s.Classes())
	}
}

// TestSaveMatchesNumPy checks that Save writes byte for byte what numpy.save writes.
func TestSaveMatchesNumPy(t *testing.T) {
	dir := t.TempDir()
	s := &Set{X: fixtureX, Y: []int32{2, 0}, N: 2, D: 3}
	fx, fy := CachePaths(dir, "train")
	if err := s.Save(fx, fy); err != nil {
		t.Fatal(err)
	}
	for _, pair := range [][2]string{{fx, "testdata/f32_c.npy"}, {fy, "testdata/i64_labels.npy"}} {
		got, _ := os.ReadFile(pair[0])
		want, _ := os.ReadFile(pair[1])
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from NumPy's %s:\n got %q\nwant %q", filepath.Base(pair[0]), pair[1], got, want)
		}
	}
	back, err := LoadSplit(dir, "train")
	if err != nil {
		t.Fatal(err)
	}
	if back.N != 2 || back.D != 3 || back.Y[0] != 2 || back.X[5] != 1.25 {
		t.Errorf("round trip gave %+v", back)
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, s *Set) string {
		fx, fy := filepath.Join(dir, name+"_x.npy"), filepath.Join(dir, name+"_y.npy")
		// Bypass Save's validation to produce bad files.
		if err := writeNPY(fx, "<f4", []int{s.N, s.D}, putFloat32s(s.X)); err != nil {
			t.Fatal(err)
		}
		if err := writeNPY(fy, "<i8", []int{len(s.Y)}, putInt64s(s.Y)); err != nil {
			t.Fatal(err)
		}
		return name
	}
	nan := float32(0)
	nan = nan / nan
	write("nan", &Set{X: []float32{1, nan}, Y: []int32{0}, N: 1, D: 2})
	write("neg", &Set{X: []float32{1, 2}, Y: []int32{-1}, N: 1, D: 2})
	write("count", &Set{X: []float32{1, 2}, Y: []int32{0, 1}, N: 1, D: 2})
	if err := os.WriteFile(filepath.Join(dir, "junk.npy"), []byte("hello world, not numpy"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "trunc.npy"), mustRead(t, "testdata/f32_c.npy")[:140], 0o644); err != nil {
		t.Fatal(err)
	}
	p := func(name string) string { return filepath.Join(dir, name) }
	for _, tc := range []struct{ name, features, labels, want string }{
		{"missing file", p("none.npy"), "testdata/i64_labels.npy", "no such file"},
		{"not npy", p("junk.npy"), "testdata/i64_labels.npy", "not a .npy file"},
		{"truncated", p("trunc.npy"), "testdata/i64_labels.npy", "truncated"},
		{"integer features", "testdata/i64_labels.npy", "testdata/i64_labels.npy", "must be float32 or float64"},
		{"3-D features", "testdata/i32_3d.npy", "testdata/i64_labels.npy", "must be float32 or float64"},
		{"big endian", "testdata/f32_big_endian.npy", "testdata/i64_labels.npy", "big-endian"},
		{"2-D labels", "testdata/f32_c.npy", "testdata/f64_c.npy", "labels must be 1-D"},
		{"NaN feature", p("nan_x.npy"), p("nan_y.npy"), "must be finite"},
		{"negative label", p("neg_x.npy"), p("neg_y.npy"), "label -1 of example 0 is not a non-negative integer"},
		{"count mismatch", p("count_x.npy"), p("count_y.npy"), "has 2 labels but"},
	} {
		_, err := Load(tc.features, tc.labels)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Load error = %v, want one containing %q", tc.name, err, tc.want)
		}
	}
	s, _ := Load("testdata/f32_c.npy", "testdata/i64_labels.npy")
	if err := s.Validate("x", 2); err == nil || !strings.Contains(err.Error(), "label 2 of example 0 is outside [0, 2)") {
		t.Errorf("Validate with 2 classes: %v", err)
	}
}

func TestStandardize(t *testing.T) {
	train := &Set{X: []float32{1, 5, 3, 5}, Y: []int32{0, 1}, N: 2, D: 2}
	test := &Set{X: []float32{2, 7}, Y: []int32{0}, N: 1, D: 2}
	mean, std, err := Standardize(train, test)
	if err != nil {
		t.Fatal(err)
	}
	if mean[0] != 2 || std[0] != 1 || mean[1] != 5 || std[1] != 1 {
		t.Errorf("mean %v std %v, want [2 5] [1 1] (constant coordinate gets std 1)", mean, std)
	}
	if want := []float32{-1, 0, 1, 0}; !equal(train.X, want) {
		t.Errorf("standardized train %v, want %v", train.X, want)
	}
	if want := []float32{0, 2}; !equal(test.X, want) {
		t.Errorf("standardized test %v, want %v", test.X, want)
	}
}

func equal(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestStratifiedSplit(t *testing.T) {
	s := &Set{D: 1}
	for i := range 30 {
		s.X = append(s.X, float32(i))
		s.Y = append(s.Y, int32(i%3)) // 10 per class
		s.N++
	}
	kept, held, err := StratifiedSplit(s, 0.2, 5)
	if err != nil {
		t.Fatal(err)
	}
	count := func(x *Set) [3]int {
		var c [3]int
		for _, y := range x.Y {
			c[y]++
		}
		return c
	}
	if got := count(held); got != [3]int{2, 2, 2} {
		t.Errorf("held-out class counts %v, want [2 2 2]", got)
	}
	if kept.N+held.N != s.N {
		t.Errorf("split sizes %d + %d ≠ %d", kept.N, held.N, s.N)
	}
	seen := map[float32]bool{}
	for _, x := range append(append([]float32(nil), kept.X...), held.X...) {
		if seen[x] {
			t.Errorf("example %v in both parts", x)
		}
		seen[x] = true
	}
	if _, _, err := StratifiedSplit(s, 1, 5); err == nil || !strings.Contains(err.Error(), "fraction must be in (0, 1)") {
		t.Errorf("fraction 1: error %v", err)
	}
}

// TestStratifiedSplitProportions checks, for several class-size distributions and held-out
// fractions, that every class's held-out count is within one example of fraction·n_c (so its
// proportion in each part matches the whole to within one example), that a class of ≥ 2
// examples keeps and holds out at least one, that the parts partition s with each example's
// features and label kept together and in order, and that the split is a function of the seed.
func TestStratifiedSplitProportions(t *testing.T) {
	cars196 := make([]int, 196) // Cars196's training split: 24 to 68 examples per class
	for c := range cars196 {
		cars196[c] = 24 + (c*37)%45
	}
	for _, tc := range []struct {
		name      string
		sizes     []int // examples per class
		fractions []float64
	}{
		{"balanced", []int{10, 10, 10}, []float64{0.1, 0.2, 0.5, 0.9}},
		{"tiny classes", []int{1, 2, 3, 1, 2, 4}, []float64{0.1, 0.3, 0.5, 0.7, 0.99}},
		{"skewed", []int{2, 5, 50, 500}, []float64{0.01, 0.1, 0.33, 0.8}},
		{"Cars196 sizes", cars196, []float64{0.1, 0.2}},
	} {
		// Examples of all classes interleaved; feature i·2 and i·2+1 identify example i.
		s := &Set{D: 2}
		left := append([]int(nil), tc.sizes...)
		for more := true; more; {
			more = false
			for c := range left {
				if left[c] > 0 {
					left[c]--
					s.X = append(s.X, float32(2*s.N), float32(2*s.N+1))
					s.Y = append(s.Y, int32(c))
					s.N++
					more = true
				}
			}
		}
		for _, f := range tc.fractions {
			name := fmt.Sprintf("%s, fraction %g", tc.name, f)
			kept, held, err := StratifiedSplit(s, f, 7)
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			hc, kc := make([]int, len(tc.sizes)), make([]int, len(tc.sizes))
			for _, part := range []struct {
				set   *Set
				count []int
			}{{held, hc}, {kept, kc}} {
				p := part.set
				if len(p.X) != p.N*p.D || len(p.Y) != p.N || p.D != s.D {
					t.Fatalf("%s: part of %d examples has %d values, %d labels, d = %d", name, p.N, len(p.X), len(p.Y), p.D)
				}
				prev := -1
				for j := range p.N {
					i := int(p.X[j*2]) / 2
					if i <= prev || i >= s.N || p.X[j*2+1] != float32(2*i+1) || p.Y[j] != s.Y[i] {
						t.Fatalf("%s: example %d of a part is not example %d of s in order (after %d), or its label %d ≠ %d",
							name, j, i, prev, p.Y[j], s.Y[min(i, s.N-1)])
					}
					prev = i
					part.count[p.Y[j]]++
				}
			}
			for c, n := range tc.sizes {
				if hc[c]+kc[c] != n {
					t.Errorf("%s: class %d: %d held + %d kept ≠ %d", name, c, hc[c], kc[c], n)
				}
				if d := math.Abs(float64(hc[c]) - f*float64(n)); d >= 1 {
					t.Errorf("%s: class %d of %d holds out %d, %g from fraction·n = %g (tolerance: < 1 example)",
						name, c, n, hc[c], d, f*float64(n))
				}
				if n >= 2 && (hc[c] == 0 || kc[c] == 0) {
					t.Errorf("%s: class %d of %d split %d held / %d kept, want ≥ 1 in each", name, c, n, hc[c], kc[c])
				}
			}
			again, _, err := StratifiedSplit(s, f, 7)
			if err != nil || !slices.Equal(again.X, kept.X) {
				t.Errorf("%s: the same seed gave another split (%v)", name, err)
			}
		}
	}
	// A balanced set whose classes are large enough for a choice: another seed, another split.
	s := &Set{D: 1}
	for i := range 100 {
		s.X, s.Y, s.N = append(s.X, float32(i)), append(s.Y, int32(i%2)), s.N+1
	}
	a, _, _ := StratifiedSplit(s, 0.5, 1)
	b, _, _ := StratifiedSplit(s, 0.5, 2)
	if slices.Equal(a.X, b.X) {
		t.Errorf("seeds 1 and 2 chose the same held-out examples")
	}
	// Only singleton classes: nothing can be held out.
	single := &Set{X: []float32{0, 1, 2}, Y: []int32{0, 1, 2}, N: 3, D: 1}
	if _, _, err := StratifiedSplit(single, 0.4, 1); err == nil || !strings.Contains(err.Error(), "leaves one part empty") {
		t.Errorf("singleton classes: error %v, want one saying a part is empty", err)
	}
}
