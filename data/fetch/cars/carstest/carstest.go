// Package carstest writes small fake Cars196 directories in torchvision's layout (see package
// cars) for tests: generated JPEG images and devkit MAT-files with the real files' structure.
package carstest

import (
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"os"
	"path/filepath"

	"github.com/fgn-paper/fgn/data/fetch/cars"
	"github.com/fgn-paper/fgn/data/fetch/matfile"
)

// Image is one fake annotated image. Class is 1-based, as in the devkit, so that tests can
// write out-of-range ids.
type Image struct {
	Name  string
	Class int
	Image image.Image // nil: write Raw instead
	Raw   []byte      // file content when Image is nil (e.g. a corrupt JPEG)
}

// Dataset is a fake dataset.
type Dataset struct {
	ClassNames  []string
	Train, Test []Image
}

// New returns a fake dataset with the given class count and split sizes: colourful RGB
// images of varying sizes (some portrait, some landscape) and every fifth one grey-scale.
func New(classes, train, test int) Dataset {
	d := Dataset{}
	for c := range classes {
		d.ClassNames = append(d.ClassNames, fmt.Sprintf("Make %d Model %d", c+1, 2000+c))
	}
	gen := func(n, seed int) []Image {
		out := make([]Image, n)
		for i := range out {
			k := seed + i
			w, h := 40+7*(k%5), 30+11*(k%4)
			out[i] = Image{Name: fmt.Sprintf("%05d.jpg", i+1), Class: 1 + k%classes, Image: Pattern(w, h, k, k%5 == 4)}
		}
		return out
	}
	d.Train, d.Test = gen(train, 0), gen(test, 1000)
	return d
}

// Pattern returns a deterministic smooth w×h test image (grey-scale if grey).
func Pattern(w, h, seed int, grey bool) image.Image {
	if grey {
		img := image.NewGray(image.Rect(0, 0, w, h))
		for y := range h {
			for x := range w {
				img.SetGray(x, y, color.Gray{Y: uint8((x*5 + y*3 + seed*17) % 256)})
			}
		}
		return img
	}
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.SetRGBA(x, y, color.RGBA{R: uint8((x*6 + seed*29) % 256), G: uint8((y*4 + seed*13) % 256),
				B: uint8((x*y + seed) % 256), A: 255})
		}
	}
	return img
}

// Write writes d under root in torchvision's layout.
func Write(root string, d Dataset) error {
	for _, dir := range []string{cars.TrainDir, cars.TestDir, "devkit"} {
		if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
			return err
		}
	}
	names := &matfile.Array{Name: "class_names", Class: matfile.Cell, Dims: []int{1, len(d.ClassNames)}}
	for _, n := range d.ClassNames {
		names.Cells = append(names.Cells, Text(n))
	}
	if err := writeMAT(filepath.Join(root, cars.MetaFile), names); err != nil {
		return err
	}
	for _, split := range []struct {
		images     []Image
		dir, annos string
	}{{d.Train, cars.TrainDir, cars.TrainAnnoFile}, {d.Test, cars.TestDir, cars.TestAnnoFile}} {
		if err := writeMAT(filepath.Join(root, split.annos), Annotations(split.images)); err != nil {
			return err
		}
		for _, im := range split.images {
			if err := writeImage(filepath.Join(root, split.dir, im.Name), im); err != nil {
				return err
			}
		}
	}
	return nil
}

// Annotations returns the devkit's "annotations" struct array for images: fields bbox_x1,
// bbox_y1, bbox_x2, bbox_y2 (uint16 scalars), class (uint8 scalar) and fname (char).
func Annotations(images []Image) *matfile.Array {
	a := &matfile.Array{Name: "annotations", Class: matfile.Struct, Dims: []int{1, len(images)},
		Fields: []string{"bbox_x1", "bbox_y1", "bbox_x2", "bbox_y2", "class", "fname"}}
	for _, im := range images {
		w, h := 10, 10
		if im.Image != nil {
			w, h = im.Image.Bounds().Dx(), im.Image.Bounds().Dy()
		}
		a.Values = append(a.Values, []*matfile.Array{scalar(matfile.Uint16, 1), scalar(matfile.Uint16, 2),
			scalar(matfile.Uint16, float64(w)), scalar(matfile.Uint16, float64(h)),
			scalar(matfile.Uint8, float64(im.Class)), Text(im.Name)})
	}
	return a
}

// Text returns a 1×len(s) char array.
func Text(s string) *matfile.Array {
	r := []rune(s)
	return &matfile.Array{Class: matfile.Char, Dims: []int{1, len(r)}, Chars: r}
}

func scalar(c matfile.Class, v float64) *matfile.Array {
	return &matfile.Array{Class: c, Dims: []int{1, 1}, Numbers: []float64{v}}
}

func writeMAT(path string, vars ...*matfile.Array) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := matfile.Write(f, vars...); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func writeImage(path string, im Image) error {
	if im.Image == nil {
		return os.WriteFile(path, im.Raw, 0o644)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := jpeg.Encode(f, im.Image, &jpeg.Options{Quality: 95}); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
