package matfile

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

func readFixture(t *testing.T, name string) map[string]*Array {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	vars, err := Parse(b)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return vars
}

// TestSciPyDevkitFixtures reads devkit-shaped files written by scipy.io.savemat (testdata/gen.py),
// compressed and not.
func TestSciPyDevkitFixtures(t *testing.T) {
	for _, suffix := range []string{"", "_z"} {
		meta := readFixture(t, "cars_meta"+suffix+".mat")["class_names"]
		if meta == nil || meta.Class != Cell || len(meta.Cells) != 3 {
			t.Fatalf("cars_meta%s: class_names = %+v, want a 3-cell array", suffix, meta)
		}
		for i, want := range []string{"AM General Hummer SUV 2000", "Acura RL Sedan 2012", "Élan ü"} {
			if got, err := meta.Cells[i].String(); err != nil || got != want {
				t.Errorf("cars_meta%s: class_names{%d} = %q, %v; want %q", suffix, i+1, got, err, want)
			}
		}
		annos := readFixture(t, "annos"+suffix+".mat")["annotations"]
		if annos == nil || annos.Class != Struct || annos.Len() != 2 {
			t.Fatalf("annos%s: annotations = %+v, want a 1×2 struct array", suffix, annos)
		}
		want := []map[string]float64{
			{"bbox_x1": 39, "bbox_y1": 116, "bbox_x2": 569, "bbox_y2": 375, "class": 14},
			{"bbox_x1": 36, "bbox_y1": 116, "bbox_x2": 868, "bbox_y2": 587, "class": 3},
		}
		for i, fields := range want {
			for name, v := range fields {
				f, err := annos.Field(i, name)
				if err != nil {
					t.Fatalf("annos%s: %v", suffix, err)
				}
				if got, err := f.Scalar(); err != nil || got != v {
					t.Errorf("annos%s: element %d %s = %v, %v; want %v", suffix, i, name, got, err, v)
				}
			}
			f, _ := annos.Field(i, "fname")
			if got, err := f.String(); err != nil || got != []string{"00001.jpg", "00002.jpg"}[i] {
				t.Errorf("annos%s: element %d fname = %q, %v", suffix, i, got, err)
			}
		}
	}
}

func TestColumnMajor(t *testing.T) {
	vars := readFixture(t, "misc.mat")
	m := vars["m"]
	if m == nil || m.Class != Double || len(m.Dims) != 2 || m.Dims[0] != 2 || m.Dims[1] != 3 {
		t.Fatalf("m = %+v, want a 2×3 double matrix", m)
	}
	for i, want := range []float64{1.5, 4, -2, 5, 3, 6e10} { // column-major
		if m.Numbers[i] != want {
			t.Errorf("m(%d) = %v, want %v", i+1, m.Numbers[i], want)
		}
	}
	if f := vars["flag"]; f == nil || !f.Logical || f.Numbers[0] != 1 || f.Numbers[1] != 0 {
		t.Errorf("flag = %+v, want logical [1 0]", f)
	}
	if s, err := vars["rows"].String(); err != nil || s != "ab\ncde" {
		t.Errorf("rows = %q, %v; want \"ab\\ncde\"", s, err)
	}
}

// TestWriteRoundTrip checks that Write's output reads back identically, and that it agrees
// with SciPy's encoding of the same devkit structure.
func TestWriteRoundTrip(t *testing.T) {
	text := func(s string) *Array {
		return &Array{Class: Char, Dims: []int{1, len([]rune(s))}, Chars: []rune(s)}
	}
	num := func(c Class, v float64) *Array { return &Array{Class: c, Dims: []int{1, 1}, Numbers: []float64{v}} }
	annos := &Array{Name: "annotations", Class: Struct, Dims: []int{1, 2},
		Fields: []string{"bbox_x1", "bbox_y1", "bbox_x2", "bbox_y2", "class", "fname"},
		Values: [][]*Array{
			{num(Uint8, 39), num(Uint8, 116), num(Uint16, 569), num(Uint16, 375), num(Uint8, 14), text("00001.jpg")},
			{num(Uint8, 36), num(Uint8, 116), num(Uint16, 868), num(Uint16, 587), num(Uint8, 3), text("00002.jpg")},
		}}
	names := &Array{Name: "class_names", Class: Cell, Dims: []int{1, 3},
		Cells: []*Array{text("AM General Hummer SUV 2000"), text("Acura RL Sedan 2012"), text("Élan ü")}}
	var buf bytes.Buffer
	if err := Write(&buf, annos, names); err != nil {
		t.Fatal(err)
	}
	got, err := Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	sciAnnos := readFixture(t, "annos.mat")["annotations"]
	sciNames := readFixture(t, "cars_meta.mat")["class_names"]
	if d := diff(got["annotations"], sciAnnos); d != "" {
		t.Errorf("written annotations differ from SciPy's: %s", d)
	}
	if d := diff(got["class_names"], sciNames); d != "" {
		t.Errorf("written class_names differ from SciPy's: %s", d)
	}
}

// diff compares two arrays' classes, dimensions and contents (not names of nested arrays).
func diff(a, b *Array) string {
	switch {
	case a.Class != b.Class:
		return "class " + a.Class.String() + " vs " + b.Class.String()
	case len(a.Dims) != len(b.Dims) || a.Len() != b.Len():
		return "dimensions differ"
	case string(a.Chars) != string(b.Chars):
		return "chars " + string(a.Chars) + " vs " + string(b.Chars)
	case strings.Join(a.Fields, ",") != strings.Join(b.Fields, ","):
		return "fields " + strings.Join(a.Fields, ",") + " vs " + strings.Join(b.Fields, ",")
	}
	for i := range a.Numbers {
		if a.Numbers[i] != b.Numbers[i] {
			return "numbers differ"
		}
	}
	for i := range a.Cells {
		if d := diff(a.Cells[i], b.Cells[i]); d != "" {
			return d
		}
	}
	for i := range a.Values {
		for f := range a.Values[i] {
			if d := diff(a.Values[i][f], b.Values[i][f]); d != "" {
				return a.Fields[f] + ": " + d
			}
		}
	}
	return ""
}

func TestParseErrors(t *testing.T) {
	good, err := os.ReadFile("testdata/annos.mat")
	if err != nil {
		t.Fatal(err)
	}
	compressed, err := os.ReadFile("testdata/annos_z.mat")
	if err != nil {
		t.Fatal(err)
	}
	corrupt := bytes.Clone(compressed)
	for i := 150; i < len(corrupt)-8; i++ {
		corrupt[i] ^= 0x5a
	}
	v73 := append([]byte("MATLAB 7.3 MAT-file, Platform: GLNXA64"), make([]byte, 600)...)
	copy(v73[512:], "\x89HDF\r\n")
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "shorter than the 128-byte header"},
		{"text", bytes.Repeat([]byte("not a mat file "), 20), "not a level-5 MAT-file"},
		{"v7.3", v73, "v7.3 (HDF5)"},
		{"truncated", good[:len(good)-100], "truncated element"},
		{"corrupt zlib", corrupt, "compressed element"},
	} {
		_, err := Parse(tc.data)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Parse error = %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}
