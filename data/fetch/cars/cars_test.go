package cars_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fgn-paper/fgn/data/fetch/cars"
	"github.com/fgn-paper/fgn/data/fetch/cars/carstest"
)

func TestLoad(t *testing.T) {
	parent := t.TempDir()
	root := filepath.Join(parent, "stanford_cars")
	fake := carstest.New(4, 6, 5)
	if err := carstest.Write(root, fake); err != nil {
		t.Fatal(err)
	}
	if got := cars.ResolveRoot(parent); got != root {
		t.Errorf("ResolveRoot(%s) = %s, want %s", parent, got, root)
	}
	d, err := cars.Load(cars.ResolveRoot(parent))
	if err != nil {
		t.Fatal(err)
	}
	if len(d.ClassNames) != 4 || d.ClassNames[2] != "Make 3 Model 2002" {
		t.Errorf("class names %q", d.ClassNames)
	}
	for _, split := range []struct {
		name string
		want []carstest.Image
		dir  string
	}{{"train", fake.Train, cars.TrainDir}, {"test", fake.Test, cars.TestDir}} {
		got, err := d.Split(split.name)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(split.want) {
			t.Fatalf("%s: %d examples, want %d", split.name, len(got), len(split.want))
		}
		for i, ex := range got {
			w := split.want[i]
			b := w.Image.Bounds()
			if ex.Label != w.Class-1 || ex.Path != filepath.Join(root, split.dir, w.Name) || ex.BBox != [4]int{1, 2, b.Dx(), b.Dy()} {
				t.Errorf("%s example %d = %+v, want label %d, file %s, bbox [1 2 %d %d]", split.name, i, ex, w.Class-1, w.Name, b.Dx(), b.Dy())
			}
		}
	}
}

func TestLoadErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		modify func(root string, d *carstest.Dataset)
		want   string
	}{
		{"missing meta", func(root string, _ *carstest.Dataset) { os.Remove(filepath.Join(root, cars.MetaFile)) },
			"cars_meta.mat is missing"},
		{"missing test annotations", func(root string, _ *carstest.Dataset) { os.Remove(filepath.Join(root, cars.TestAnnoFile)) },
			"cars_test_annos_withlabels.mat is missing"},
		{"class id too large", func(_ string, d *carstest.Dataset) { d.Train[1].Class = 5 },
			"annotation 2 has class id 5, outside 1..4"},
		{"class id zero", func(_ string, d *carstest.Dataset) { d.Test[0].Class = 0 },
			"annotation 1 has class id 0, outside 1..4"},
		{"missing image", func(root string, _ *carstest.Dataset) { os.Remove(filepath.Join(root, cars.TestDir, "00003.jpg")) },
			"image of annotation 3"},
		{"path in file name", func(_ string, d *carstest.Dataset) { d.Train[0].Name = "../x.jpg" },
			"want a plain file name"},
		{"not a MAT-file", func(root string, _ *carstest.Dataset) {
			os.WriteFile(filepath.Join(root, cars.TrainAnnoFile), []byte("<html>404 not found</html>"), 0o644)
		}, "shorter than the 128-byte header"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			fake := carstest.New(4, 3, 3)
			// Modifications of the dataset happen before writing, of files after.
			tc.modify(root, &fake)
			if err := carstest.Write(root, fake); err != nil {
				t.Fatal(err)
			}
			tc.modify(root, &fake)
			_, err := cars.Load(root)
			if err == nil || !strings.Contains(filepath.ToSlash(err.Error()), tc.want) {
				t.Errorf("Load error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}
