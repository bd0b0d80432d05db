package resnet_test

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fgn-paper/fgn/data/fetch/resnet"
	"github.com/fgn-paper/fgn/data/fetch/resnet/resnettest"
	"github.com/fgn-paper/fgn/fgn/backend"
)

// TestResNet50MatchesTorchvision runs the full-width ResNet-50 with formula weights on three
// 72×56 images and compares the pooled features with torchvision's, computed in float64 by
// testdata/gen.py.
func TestResNet50MatchesTorchvision(t *testing.T) {
	raw, err := os.ReadFile("testdata/resnet50_formula_features.f64")
	if err != nil {
		t.Fatal(err)
	}
	want := make([]float64, len(raw)/8)
	for i := range want {
		want[i] = math.Float64frombits(binary.LittleEndian.Uint64(raw[8*i:]))
	}
	b, err := backend.New()
	if err != nil {
		t.Fatal(err)
	}
	weights := resnettest.FormulaWeights([4]int{3, 4, 6, 3}, 64)
	for _, method := range []struct {
		name string
		m    resnet.ConvMethod
	}{{"direct", resnet.ConvDirect}, {"im2col", resnet.ConvIm2Col}} {
		m, err := resnet.New(b, weights, method.m)
		if err != nil {
			t.Fatal(err)
		}
		if !m.Arch.IsResNet50() {
			t.Errorf("Arch = %v, want ResNet-50", m.Arch)
		}
		got, err := m.Features(resnettest.Images(3, 72, 56), 3, 72, 56)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%d features, want %d", len(got), len(want))
		}
		// Relative error in the max norm of each image's feature vector.
		const tol = 1e-4
		for n := range 3 {
			var maxDiff, maxRef float64
			for k := range 2048 {
				i := n*2048 + k
				maxDiff = math.Max(maxDiff, math.Abs(float64(got[i])-want[i]))
				maxRef = math.Max(maxRef, math.Abs(want[i]))
			}
			if rel := maxDiff / maxRef; !(rel <= tol) {
				t.Errorf("%s, image %d: max |Go − torchvision| = %.3g, relative %.3g > %g", method.name, n, maxDiff, rel, tol)
			} else {
				t.Logf("%s, image %d: relative max-norm error %.2g (tolerance %g)", method.name, n, rel, tol)
			}
		}
	}
}

func TestNewErrors(t *testing.T) {
	b, err := backend.New()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		modify func(resnet.Weights)
		want   string
	}{
		{"no stem", func(w resnet.Weights) { delete(w, "conv1.weight") }, "no conv1.weight"},
		{"no bn stat", func(w resnet.Weights) { delete(w, "layer2.1.bn2.running_var") }, "no layer2.1.bn2.running_var"},
		{"basic block", func(w resnet.Weights) {
			w["layer1.0.conv2.weight"] = &resnet.Tensor{Shape: []int{8, 8, 1, 1}, Data: make([]float32, 64)}
		}, "want 1, 3, 1 (bottleneck)"},
		{"channel mismatch", func(w resnet.Weights) { delete(w, "layer3.0.downsample.0.weight") }, "has no downsample weights"},
		{"inconsistent tensor", func(w resnet.Weights) { w["layer1.0.conv3.weight"].Data = nil }, "0 values for shape [32 8 1 1]"},
		{"negative variance", func(w resnet.Weights) { w["bn1.running_var"].Data[3] = -1 }, "bn1.running_var[3] = -1"},
	} {
		w := resnettest.FormulaWeights([4]int{1, 2, 1, 1}, 8)
		tc.modify(w)
		if _, err := resnet.New(b, w, resnet.ConvAuto); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: New error = %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

// TestLoadFile reads the same weights from a safetensors file and from torch.save's format.
func TestLoadFile(t *testing.T) {
	w, err := resnet.LoadFile("testdata/state_dict.pth")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]resnet.Tensor{
		"a.weight":               {Shape: []int{3, 4}, Data: []float32{0, .25, .5, .75, 1, 1.25, 1.5, 1.75, 2, 2.25, 2.5, 2.75}},
		"a.transposed":           {Shape: []int{4, 3}, Data: []float32{0, 1, 2, .25, 1.25, 2.25, .5, 1.5, 2.5, .75, 1.75, 2.75}},
		"b.double":               {Shape: []int{1, 2}, Data: []float32{1.5, -2.25}},
		"b.half":                 {Shape: []int{3}, Data: []float32{0.5, -3, 65504}},
		"b.bfloat":               {Shape: []int{2}, Data: []float32{1, -0.15625}},
		"c.view1":                {Shape: []int{3}, Data: []float32{-1, 0, 1}},
		"c.view2":                {Shape: []int{2, 2}, Data: []float32{3, 4, 5, 6}},
		"d.param":                {Shape: []int{2}, Data: []float32{7, 8}},
		"bn.num_batches_tracked": {Shape: []int{}, Data: []float32{42}},
	}
	check := func(source string, w resnet.Weights) {
		if len(w) != len(want) {
			t.Errorf("%s: %d tensors %v, want %d", source, len(w), w.Names(), len(want))
		}
		for name, wt := range want {
			g, ok := w[name]
			if !ok {
				t.Errorf("%s: no tensor %q", source, name)
				continue
			}
			if !equalInts(g.Shape, wt.Shape) || !equalFloats(g.Data, wt.Data) {
				t.Errorf("%s: %s = %v %v, want %v %v", source, name, g.Shape, g.Data, wt.Shape, wt.Data)
			}
		}
	}
	check("state_dict.pth", w)
	path := filepath.Join(t.TempDir(), "w.safetensors")
	if err := os.WriteFile(path, resnet.WriteSafetensors(w), 0o644); err != nil {
		t.Fatal(err)
	}
	back, err := resnet.LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	check("safetensors round trip", back)

	pth, _ := os.ReadFile("testdata/state_dict.pth")
	st, _ := os.ReadFile(path)
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"truncated pth", pth[:len(pth)/2], "zip"},
		{"truncated safetensors", st[:len(st)-10], "truncated?"},
		{"html", []byte("<html>rate limited</html>"), "neither a PyTorch zip checkpoint nor a safetensors file"},
		{"legacy", []byte{0x80, 0x02, 0x8a, 0x0a, 0x6c}, "legacy"},
	} {
		p := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_"))
		if err := os.WriteFile(p, tc.data, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := resnet.LoadFile(p); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: LoadFile error = %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

func equalInts(a, b []int) bool {
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

func equalFloats(a, b []float32) bool {
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

// BenchmarkResNet50 measures the full-width ResNet-50 on a batch of 224×224 images (formula
// weights; the speed does not depend on the values). Run with GOEXPERIMENT=simd on the pure-Go
// backend.
func BenchmarkResNet50(b *testing.B) {
	const batch = 4
	be, err := backend.New()
	if err != nil {
		b.Fatal(err)
	}
	m, err := resnet.New(be, resnettest.FormulaWeights([4]int{3, 4, 6, 3}, 64), resnet.ConvAuto)
	if err != nil {
		b.Fatal(err)
	}
	images := resnettest.Images(batch, 224, 224)
	if _, err := m.Features(images, batch, 224, 224); err != nil { // compile
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := m.Features(images, batch, 224, 224); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(batch*b.N)/b.Elapsed().Seconds(), "images/s")
}
