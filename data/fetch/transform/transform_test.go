package transform

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"math"
	"os"
	"testing"
)

func TestSizes(t *testing.T) {
	for _, tc := range []struct{ w, h, size, nw, nh int }{
		{500, 375, 232, 309, 232}, // 232·500/375 = 309.33
		{375, 500, 256, 256, 341}, // 256·500/375 = 341.33
		{300, 300, 232, 232, 232},
		{640, 427, 232, 347, 232}, // 232·640/427 = 347.73 (truncated, not rounded)
	} {
		if nw, nh := ResizedSize(tc.w, tc.h, tc.size); nw != tc.nw || nh != tc.nh {
			t.Errorf("ResizedSize(%d, %d, %d) = %d×%d, want %d×%d", tc.w, tc.h, tc.size, nw, nh, tc.nw, tc.nh)
		}
	}
	for _, tc := range []struct{ size, crop, want int }{
		{309, 224, 42}, // round(42.5) = 42: ties to even, as Python's round
		{235, 224, 6},  // round(5.5) = 6
		{232, 224, 4},
		{224, 224, 0},
	} {
		if got := CropOffset(tc.size, tc.crop); got != tc.want {
			t.Errorf("CropOffset(%d, %d) = %d, want %d", tc.size, tc.crop, got, tc.want)
		}
	}
}

// TestResizeHandComputed checks one-row resizes worked out by hand from PIL's filter.
func TestResizeHandComputed(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []uint8
		w    int
		want []uint8
	}{
		// Downscale 4→2: scale 2, triangle of half-width 2; output 0 is centred at 1 and weighs
		// inputs 0,1,2 by 3/7,3/7,1/7: (30+60+30)/7 = 17.1; output 1 by 1/7,3/7,3/7: 230/7 = 32.9.
		{"down 4→2", []uint8{10, 20, 30, 40}, 2, []uint8{17, 33}},
		// Upscale 2→4: centres 0.25, 0.75, 1.25, 1.75; weights 1−|j+½−centre| clipped to the image.
		{"up 2→4", []uint8{0, 100}, 4, []uint8{0, 25, 75, 100}},
		{"same size", []uint8{3, 1, 4}, 3, []uint8{3, 1, 4}},
	} {
		img := &RGB{W: len(tc.in), H: 1, Pix: make([]uint8, 3*len(tc.in))}
		for i, v := range tc.in {
			img.Pix[3*i], img.Pix[3*i+1], img.Pix[3*i+2] = v, 255-v, v/2
		}
		out := Resize(img, tc.w, 1)
		for i, v := range tc.want {
			if got := out.Pix[3*i : 3*i+3]; got[0] != v {
				t.Errorf("%s: pixel %d red = %d, want %d", tc.name, i, got[0], v)
			}
		}
		// Transposed: a column resizes the same way (the vertical pass).
		col := &RGB{W: 1, H: img.W, Pix: img.Pix}
		outCol := Resize(col, 1, tc.w)
		if !bytes.Equal(outCol.Pix, out.Pix) {
			t.Errorf("%s: vertical pass %v differs from horizontal pass %v", tc.name, outCol.Pix, out.Pix)
		}
	}
}

func pattern(w, h int) *RGB {
	img := &RGB{W: w, H: h, Pix: make([]uint8, 3*w*h)}
	for y := range h {
		for x := range w {
			p := img.Pix[3*(y*w+x):]
			p[0], p[1], p[2] = uint8((7*x+3*y)%256), uint8((x*y+11)%256), uint8((5*x+13*y+x*x)%256)
		}
	}
	return img
}

// TestResizeMatchesPIL compares with PIL's Image.resize(…, BILINEAR) output (testdata/gen.py),
// which must agree byte for byte.
func TestResizeMatchesPIL(t *testing.T) {
	for _, tc := range []struct{ W, H, w, h int }{{37, 23, 13, 29}, {37, 23, 50, 9}, {64, 48, 21, 16}} {
		name := fmt.Sprintf("testdata/pattern_%d_%d_to_%d_%d.rgb", tc.W, tc.H, tc.w, tc.h)
		want, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		got := Resize(pattern(tc.W, tc.H), tc.w, tc.h)
		if !bytes.Equal(got.Pix, want) {
			diffs := 0
			for i := range want {
				if got.Pix[i] != want[i] {
					diffs++
				}
			}
			t.Errorf("%s: %d of %d bytes differ from PIL's", name, diffs, len(want))
		}
	}
}

// TestApply checks the whole transform on an 8×4 image with a 2-pixel resize and crop: the
// image is resized to 4×2, then columns 1 and 2 are kept and normalised.
func TestApply(t *testing.T) {
	img := pattern(8, 4)
	spec := Spec{ResizeSize: 2, CropSize: 2, Mean: imageNetMean, Std: imageNetStd}
	dst := make([]float32, 3*2*2)
	if err := spec.Apply(img, dst); err != nil {
		t.Fatal(err)
	}
	r := Resize(img, 4, 2)
	for c := range 3 {
		for y := range 2 {
			for x := range 2 {
				v := float64(r.Pix[3*(y*4+x+1)+c])
				want := (v/255 - float64(spec.Mean[c])) / float64(spec.Std[c])
				got := float64(dst[c*4+y*2+x])
				if math.Abs(got-want) > 1e-6*math.Max(1, math.Abs(want)) {
					t.Errorf("channel %d pixel (%d,%d) = %v, want %v (tolerance 1e-6 relative)", c, x, y, got, want)
				}
			}
		}
	}
	// Resize 8×4 → 4×2 by hand for red pixel (1, 0): the horizontal pass weighs inputs 1..4 of
	// row r by 1/7, 3/7, 3/7, 1/7 (centre 3, half-width 2), the vertical pass rows 0..2 by 3/7, 3/7, 1/7.
	var want float64
	for dy, wy := range []float64{3, 3, 1} {
		var row float64
		for dx, wx := range []float64{1, 3, 3, 1} {
			row += wx / 8 * float64((7*(1+dx)+3*dy)%256)
		}
		want += wy / 7 * math.Floor(row+0.5)
	}
	if got := r.Pix[3*1]; float64(got) != math.Floor(want+0.5) {
		t.Errorf("resized red pixel (1,0) = %d, want %v", got, math.Floor(want+0.5))
	}
	if err := spec.Apply(img, dst[:3]); err == nil {
		t.Error("Apply with a short destination: no error")
	}
}

func TestColourModels(t *testing.T) {
	grey := image.NewGray(image.Rect(0, 0, 2, 1))
	grey.Pix = []uint8{7, 200}
	if got := ToRGB(grey).Pix; !bytes.Equal(got, []uint8{7, 7, 7, 200, 200, 200}) {
		t.Errorf("grey → RGB = %v", got)
	}
	cmyk := image.NewCMYK(image.Rect(0, 0, 1, 1))
	cmyk.SetCMYK(0, 0, color.CMYK{C: 100, M: 0, Y: 50, K: 40})
	// (255−40) − round(100·215/255) = 215 − 84 = 131; 215 − 0; 215 − round(42.16) = 173.
	if got := ToRGB(cmyk).Pix; !bytes.Equal(got, []uint8{131, 215, 173}) {
		t.Errorf("CMYK → RGB = %v, want [131 215 173]", got)
	}
	// A flat CMYK JPEG written by Pillow; PIL's convert("RGB") of it gives (131, 215, 173).
	data, err := os.ReadFile("testdata/cmyk.jpg")
	if err != nil {
		t.Fatal(err)
	}
	img, err := DecodeJPEG(data)
	if err != nil {
		t.Fatal(err)
	}
	if got := img.Pix[3*(5*16+5):][:3]; !bytes.Equal(got, []uint8{131, 215, 173}) {
		t.Errorf("CMYK JPEG pixel = %v, want PIL's [131 215 173]", got)
	}
	// A grey-scale JPEG decodes to equal channels.
	var buf bytes.Buffer
	g := image.NewGray(image.Rect(0, 0, 8, 8))
	for i := range g.Pix {
		g.Pix[i] = uint8(i * 4)
	}
	if err := jpeg.Encode(&buf, g, nil); err != nil {
		t.Fatal(err)
	}
	img, err = DecodeJPEG(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(img.Pix); i += 3 {
		if img.Pix[i] != img.Pix[i+1] || img.Pix[i] != img.Pix[i+2] {
			t.Fatalf("grey JPEG pixel %d = %v, want equal channels", i/3, img.Pix[i:i+3])
		}
	}
	if _, err := DecodeJPEG([]byte("\xff\xd8\xff\xe0 truncated")); err == nil {
		t.Error("corrupt JPEG: no error")
	}
}

// TestFancyUpsampling checks libjpeg's chroma upsampling on hand-computed rows.
func TestFancyUpsampling(t *testing.T) {
	// h2v1: out[2i] = (3a[i] + a[i−1] + 1) >> 2, out[2i+1] = (3a[i] + a[i+1] + 2) >> 2, edges copied.
	out := make([]uint8, 6)
	upsampleH2V1([]uint8{10, 20, 40}, out)
	if want := []uint8{10, 13, 17, 25, 35, 40}; !bytes.Equal(out, want) {
		t.Errorf("h2v1 = %v, want %v", out, want)
	}
	// h2v2: column sums c = 3·near + far = [60, 100]; out = [(4·60+8)>>4, (3·60+100+7)>>4,
	// (3·100+60+8)>>4, (4·100+7)>>4]. An odd width drops the last sample.
	out = make([]uint8, 3)
	upsampleH2V2([]uint8{10, 20}, []uint8{30, 40}, out)
	if want := []uint8{15, 17, 23}; !bytes.Equal(out, want) {
		t.Errorf("h2v2 = %v, want %v", out, want)
	}
}

// TestDecodeMatchesPIL compares the decoding of Pillow-written 4:2:0 and 4:2:2 JPEGs with PIL's
// (libjpeg's) RGB. The chroma upsampling and colour conversion are libjpeg's; the inverse DCTs
// differ (Go's image/jpeg is not libjpeg's islow), which leaves differences of a few levels in
// a few pixels. (Go's own conversion, nearest-neighbour chroma, differs by up to ~50 levels.)
func TestDecodeMatchesPIL(t *testing.T) {
	for _, name := range []string{"420", "422"} {
		data, err := os.ReadFile("testdata/pattern_" + name + ".jpg")
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile("testdata/pattern_" + name + ".pil.rgb")
		if err != nil {
			t.Fatal(err)
		}
		img, err := DecodeJPEG(data)
		if err != nil {
			t.Fatal(err)
		}
		if img.W != 45 || img.H != 31 || len(img.Pix) != len(want) {
			t.Fatalf("%s: decoded %d×%d, want 45×31", name, img.W, img.H)
		}
		maxDiff, sum := 0, 0
		for i := range want {
			d := int(img.Pix[i]) - int(want[i])
			d = max(d, -d)
			maxDiff, sum = max(maxDiff, d), sum+d
		}
		mean := float64(sum) / float64(len(want))
		const maxTol, meanTol = 4, 0.25
		if maxDiff > maxTol || mean > meanTol {
			t.Errorf("%s: |Go − PIL| max %d, mean %.3f; tolerance max %d, mean %g", name, maxDiff, mean, maxTol, meanTol)
		} else {
			t.Logf("%s: |Go − PIL| max %d, mean %.3f levels", name, maxDiff, mean)
		}
	}
}
