package main

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fgn-paper/fgn/data/fetch/cars"
	"github.com/fgn-paper/fgn/data/fetch/cars/carstest"
	"github.com/fgn-paper/fgn/data/fetch/resnet"
	"github.com/fgn-paper/fgn/data/fetch/resnet/resnettest"
	"github.com/fgn-paper/fgn/data/fetch/transform"
	"github.com/fgn-paper/fgn/features"
	"github.com/fgn-paper/fgn/fgn/backend"
)

// tinyWeights writes a narrow bottleneck ResNet (one block per stage, stem width 4, 128-d
// features) with formula weights as a safetensors file: the full ResNet-50 is tested against
// torchvision in package resnet; here the pipeline around it is tested, quickly.
func tinyWeights(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "tiny.safetensors")
	if err := os.WriteFile(path, resnet.WriteSafetensors(resnettest.FormulaWeights([4]int{1, 1, 1, 1}, 4)), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func cacheFiles(t *testing.T, out string) []string {
	t.Helper()
	var names []string
	entries, _ := os.ReadDir(out)
	for _, e := range entries {
		if !e.IsDir() {
			names = append(names, e.Name())
		}
	}
	return names
}

func TestFetchEndToEnd(t *testing.T) {
	dir := t.TempDir()
	data, out := filepath.Join(dir, "data"), filepath.Join(dir, "cache")
	fake := carstest.New(3, 5, 4)
	if err := carstest.Write(filepath.Join(data, "stanford_cars"), fake); err != nil {
		t.Fatal(err)
	}
	weights := tinyWeights(t, dir)
	args := []string{"--data", data, "--out", out, "--weights", weights, "--batch", "2", "--chunk", "3"}

	// A corrupt test image stops the run with an error naming it; the train chunks survive
	// for the next run and no cache file is written.
	bad := filepath.Join(data, "stanford_cars", cars.TestDir, "00003.jpg")
	good, _ := os.ReadFile(bad)
	if err := os.WriteFile(bad, good[:len(good)/3], 0o644); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	err := run(context.Background(), args, &log)
	if err == nil || !strings.Contains(err.Error(), "test image 3") || !strings.Contains(err.Error(), "00003.jpg") {
		t.Fatalf("corrupt image: error = %v, want one naming test image 3 (00003.jpg)", err)
	}
	if files := cacheFiles(t, out); len(files) != 0 {
		t.Errorf("failed run left cache files %v", files)
	}
	chunks, _ := filepath.Glob(filepath.Join(out, partialDir, "train-*_features.npy"))
	if len(chunks) != 2 {
		t.Errorf("failed run kept %d train chunks, want 2", len(chunks))
	}

	if err := os.WriteFile(bad, good, 0o644); err != nil {
		t.Fatal(err)
	}
	log.Reset()
	if err := run(context.Background(), args, &log); err != nil {
		t.Fatalf("%v\nlog:\n%s", err, log.String())
	}
	if !strings.Contains(log.String(), "resuming") {
		t.Errorf("second run did not resume:\n%s", log.String())
	}
	if _, err := os.Stat(filepath.Join(out, partialDir)); !os.IsNotExist(err) {
		t.Errorf("partial chunks not removed after success: %v", err)
	}

	m, err := features.VerifyCache(out)
	if err != nil {
		t.Fatal(err)
	}
	if m.Splits["train"] != (features.Split{Examples: 5, Features: 128, Classes: 3}) || !strings.HasPrefix(m.Weights.Name, weightSets["V2"].name+" (as declared") ||
		!strings.Contains(m.Transform, "232") || len(m.Files) != 4 {
		t.Errorf("manifest %+v", m)
	}

	// The cached features are the model's features of the transformed images.
	b, err := backend.New()
	if err != nil {
		t.Fatal(err)
	}
	w, err := resnet.LoadFile(weights)
	if err != nil {
		t.Fatal(err)
	}
	model, err := resnet.New(b, w, resnet.ConvAuto)
	if err != nil {
		t.Fatal(err)
	}
	for _, split := range []struct {
		name   string
		images []carstest.Image
		dir    string
	}{{"train", fake.Train, cars.TrainDir}, {"test", fake.Test, cars.TestDir}} {
		s, err := features.LoadSplit(out, split.name)
		if err != nil {
			t.Fatal(err)
		}
		if s.N != len(split.images) || s.D != 128 {
			t.Fatalf("%s: %d×%d features", split.name, s.N, s.D)
		}
		for i, im := range split.images {
			if int(s.Y[i]) != im.Class-1 {
				t.Errorf("%s label %d = %d, want %d", split.name, i, s.Y[i], im.Class-1)
			}
			raw, _ := os.ReadFile(filepath.Join(data, "stanford_cars", split.dir, im.Name))
			rgb, err := transform.DecodeJPEG(raw)
			if err != nil {
				t.Fatal(err)
			}
			x := make([]float32, 3*224*224)
			if err := transform.ImageNetV2.Apply(rgb, x); err != nil {
				t.Fatal(err)
			}
			want, err := model.Features(x, 1, 224, 224)
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range want {
				if got := s.Example(i)[k]; math.Abs(float64(got-v)) > 1e-5*math.Max(1, math.Abs(float64(v))) {
					t.Fatalf("%s image %d feature %d = %v, want %v (tolerance 1e-5)", split.name, i, k, got, v)
				}
			}
		}
	}
}

// renamed copies a file under another name in the same directory.
func renamed(t *testing.T, path, name string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(filepath.Dir(path), name)
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}

func TestFetchErrors(t *testing.T) {
	dir := t.TempDir()
	weights := tinyWeights(t, dir)
	for _, tc := range []struct {
		name   string
		modify func(root string, d *carstest.Dataset)
		args   []string
		want   string
	}{
		{"missing annotations", func(root string, _ *carstest.Dataset) { os.Remove(filepath.Join(root, cars.TrainAnnoFile)) }, nil,
			"cars_train_annos.mat is missing"},
		{"class out of range", func(_ string, d *carstest.Dataset) { d.Test[1].Class = 7 }, nil, "class id 7, outside 1..3"},
		{"bad weights version", nil, []string{"--weights-version", "V3"}, "want V1 or V2"},
		{"weights missing", nil, []string{"--weights", filepath.Join(dir, "none.pth")}, "none.pth"},
		{"torchvision name, wrong content", nil, []string{"--weights", renamed(t, weights, "resnet50-0676ba61.pth"), "--weights-version", "V1"},
			"its torchvision name says it starts with 0676ba61"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "cars")
			out := filepath.Join(t.TempDir(), "cache")
			fake := carstest.New(3, 2, 2)
			if tc.modify != nil {
				tc.modify(root, &fake)
			}
			if err := carstest.Write(root, fake); err != nil {
				t.Fatal(err)
			}
			if tc.modify != nil {
				tc.modify(root, &fake)
			}
			args := append([]string{"--data", root, "--out", out, "--weights", weights}, tc.args...)
			var log bytes.Buffer
			err := run(context.Background(), args, &log)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want one containing %q", err, tc.want)
			}
			if files := cacheFiles(t, out); len(files) != 0 {
				t.Errorf("failed run left cache files %v", files)
			}
		})
	}
}

// BenchmarkExtract measures the whole extraction (JPEG decoding, transform, full-width
// ResNet-50 with formula weights, cache writing) of 48 camera-sized JPEGs (about 700×470, the
// typical Cars196 size; 32 train, 16 test, so that no batch is padded), in images per second,
// start-up (weight loading, graph compilation) included. Run with GOEXPERIMENT=simd for the
// pure-Go backend's fast matrix products.
func BenchmarkExtract(b *testing.B) {
	dir := b.TempDir()
	fake := carstest.New(4, 32, 16)
	for _, split := range [][]carstest.Image{fake.Train, fake.Test} {
		for i := range split {
			split[i].Image = carstest.Pattern(640+13*(i%9), 420+11*(i%7), i, i%10 == 9)
		}
	}
	if err := carstest.Write(filepath.Join(dir, "cars"), fake); err != nil {
		b.Fatal(err)
	}
	weights := filepath.Join(dir, "resnet50-formula.safetensors")
	if err := os.WriteFile(weights, resnet.WriteSafetensors(resnettest.FormulaWeights([4]int{3, 4, 6, 3}, 64)), 0o644); err != nil {
		b.Fatal(err)
	}
	for _, batch := range []string{"8", "16"} {
		b.Run("batch="+batch, func(b *testing.B) {
			for b.Loop() {
				out := b.TempDir()
				var log bytes.Buffer
				if err := run(context.Background(), []string{"--data", filepath.Join(dir, "cars"), "--out", out,
					"--weights", weights, "--batch", batch}, &log); err != nil {
					b.Fatalf("%v\n%s", err, log.String())
				}
			}
			b.ReportMetric(float64(48*b.N)/b.Elapsed().Seconds(), "images/s")
		})
	}
}
