// Package cars reads the Stanford Cars (Cars196) dataset of Krause et al. (3DRR 2013) from a
// directory in torchvision's layout (torchvision.datasets.StanfordCars):
//
//	<root>/cars_train/00001.jpg …               the 8,144 training images
//	<root>/cars_test/00001.jpg …                the 8,041 test images
//	<root>/devkit/cars_meta.mat                 class_names: 1×196 cell array of char
//	<root>/devkit/cars_train_annos.mat          annotations: 1×8144 struct array
//	<root>/cars_test_annos_withlabels.mat       annotations: 1×8041 struct array
//
// Each annotation has the fields bbox_x1, bbox_y1, bbox_x2, bbox_y2, class (1-based) and fname.
// Labels are returned 0-based (class−1), as torchvision does. Bounding boxes are read and
// checked but not used: the paper's features are of the whole image.
package cars

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/fgn-paper/fgn/data/fetch/matfile"
	"github.com/fgn-paper/fgn/features"
)

// The canonical split sizes and class count (those a feature cache's manifest is checked
// against, features.Manifest.Cars196).
const (
	TrainCount = features.Cars196Train
	TestCount  = features.Cars196Test
	Classes    = features.Cars196Classes
)

// Relative paths of the annotation files and image directories under the dataset root.
const (
	MetaFile      = "devkit/cars_meta.mat"
	TrainAnnoFile = "devkit/cars_train_annos.mat"
	TestAnnoFile  = "cars_test_annos_withlabels.mat"
	TrainDir      = "cars_train"
	TestDir       = "cars_test"
)

// Example is one annotated image.
type Example struct {
	Path  string // absolute or root-relative path of the JPEG file
	Label int    // 0-based class index
	BBox  [4]int // x1, y1, x2, y2 (1-based pixel coordinates, as in the devkit)
}

// Dataset is the class list and both splits.
type Dataset struct {
	Root       string
	ClassNames []string
	Train      []Example
	Test       []Example
}

// Split returns the examples of split "train" or "test".
func (d *Dataset) Split(name string) ([]Example, error) {
	switch name {
	case "train":
		return d.Train, nil
	case "test":
		return d.Test, nil
	}
	return nil, fmt.Errorf("unknown split %q (want train or test)", name)
}

// ResolveRoot returns the dataset root for dir: dir itself if it holds the devkit, or
// dir/stanford_cars (where torchvision puts it) if that does.
func ResolveRoot(dir string) string {
	if _, err := os.Stat(filepath.Join(dir, MetaFile)); err != nil {
		sub := filepath.Join(dir, "stanford_cars")
		if _, err := os.Stat(filepath.Join(sub, MetaFile)); err == nil {
			return sub
		}
	}
	return dir
}

// Load reads the class names and the annotations of both splits from a dataset root (see
// [ResolveRoot]) and checks that every class id is in range and every image file exists.
func Load(root string) (*Dataset, error) {
	d := &Dataset{Root: root}
	var err error
	if d.ClassNames, err = readClassNames(filepath.Join(root, MetaFile)); err != nil {
		return nil, err
	}
	if d.Train, err = readAnnotations(filepath.Join(root, TrainAnnoFile), filepath.Join(root, TrainDir), len(d.ClassNames)); err != nil {
		return nil, err
	}
	if d.Test, err = readAnnotations(filepath.Join(root, TestAnnoFile), filepath.Join(root, TestDir), len(d.ClassNames)); err != nil {
		return nil, err
	}
	return d, nil
}

func readMAT(path string) (map[string]*matfile.Array, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("annotation file %s is missing (see data/fetch/README.md for the expected layout): %w", path, err)
		}
		return nil, err
	}
	defer f.Close()
	vars, err := matfile.Read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return vars, nil
}

func readClassNames(path string) ([]string, error) {
	vars, err := readMAT(path)
	if err != nil {
		return nil, err
	}
	names, ok := vars["class_names"]
	if !ok {
		return nil, fmt.Errorf("%s has no variable class_names", path)
	}
	if names.Class != matfile.Cell {
		return nil, fmt.Errorf("%s: class_names is a %s array, want a cell array of char", path, names.Class)
	}
	out := make([]string, len(names.Cells))
	for i, c := range names.Cells {
		if out[i], err = c.String(); err != nil {
			return nil, fmt.Errorf("%s: class_names{%d}: %w", path, i+1, err)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: class_names is empty", path)
	}
	return out, nil
}

func readAnnotations(path, imageDir string, classes int) ([]Example, error) {
	vars, err := readMAT(path)
	if err != nil {
		return nil, err
	}
	annos, ok := vars["annotations"]
	if !ok {
		return nil, fmt.Errorf("%s has no variable annotations", path)
	}
	if annos.Class != matfile.Struct {
		return nil, fmt.Errorf("%s: annotations is a %s array, want a struct array", path, annos.Class)
	}
	examples := make([]Example, len(annos.Values))
	for i := range examples {
		ex := &examples[i]
		for k, field := range []string{"bbox_x1", "bbox_y1", "bbox_x2", "bbox_y2"} {
			if ex.BBox[k], err = intField(annos, i, field); err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
		}
		class, err := intField(annos, i, "class")
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if class < 1 || class > classes {
			return nil, fmt.Errorf("%s: annotation %d has class id %d, outside 1..%d (the classes of %s)", path, i+1, class, classes, MetaFile)
		}
		ex.Label = class - 1
		f, err := annos.Field(i, "fname")
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		name, err := f.String()
		if err != nil {
			return nil, fmt.Errorf("%s: annotation %d fname: %w", path, i+1, err)
		}
		if name == "" || name != filepath.Base(name) || strings.ContainsAny(name, `/\`) {
			return nil, fmt.Errorf("%s: annotation %d has file name %q, want a plain file name", path, i+1, name)
		}
		ex.Path = filepath.Join(imageDir, name)
		if _, err := os.Stat(ex.Path); err != nil {
			return nil, fmt.Errorf("%s: image of annotation %d: %w", path, i+1, err)
		}
	}
	return examples, nil
}

func intField(s *matfile.Array, i int, name string) (int, error) {
	f, err := s.Field(i, name)
	if err != nil {
		return 0, err
	}
	v, err := f.Scalar()
	if err != nil {
		return 0, fmt.Errorf("annotation %d field %s: %w", i+1, name, err)
	}
	if v != math.Trunc(v) || math.Abs(v) > 1<<31 {
		return 0, fmt.Errorf("annotation %d field %s is %v, want an integer", i+1, name, v)
	}
	return int(v), nil
}
