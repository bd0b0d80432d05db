// Package transform is TorchVision's ImageClassification preset (the inference transform of
// its ImageNet weights) in Go, for images as torchvision's dataset loaders see them (a PIL
// image converted to RGB):
//
//  1. resize so that the shorter side is ResizeSize, the longer ⌊ResizeSize·long/short⌋, with
//     PIL's antialiased bilinear filter (a triangle filter widened by the downscaling factor);
//  2. crop the centre CropSize×CropSize (offsets round((size−crop)/2), rounding half to even as
//     Python's round does);
//  3. scale to [0,1] (divide by 255) and normalise each channel c as (x−Mean[c])/Std[c].
//
// The resize reproduces PIL's 8-bit resampling exactly, including its 22-bit fixed-point
// coefficients, the horizontal-then-vertical order and the rounding to 8 bits between the
// passes, so for the same RGB pixels the output equals torchvision's in float32.
//
// JPEGs are decoded by Go's image/jpeg, but the conversion of its YCbCr planes to RGB is
// libjpeg's (which PIL uses): "fancy" triangle-filter upsampling of 4:2:0 and 4:2:2 chroma and
// libjpeg's fixed-point colour tables (Go's own conversion repeats chroma samples and differs
// from PIL by up to ~50 levels at colour edges). What remains is the inverse DCT, which differs
// from libjpeg's islow one: a few pixels differ by 1–3 levels (mean ≈ 0.05 levels on the test
// images).
package transform

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"math"
)

// Spec is the transform of one set of TorchVision weights.
type Spec struct {
	ResizeSize, CropSize int
	Mean, Std            [3]float32
}

// ImageNet normalisation constants of TorchVision's classification weights.
var (
	imageNetMean = [3]float32{0.485, 0.456, 0.406}
	imageNetStd  = [3]float32{0.229, 0.224, 0.225}
)

// The transforms of torchvision's ResNet50_Weights.IMAGENET1K_V1 (resize 256) and
// IMAGENET1K_V2 (resize 232), both with a 224 crop.
var (
	ImageNetV1 = Spec{ResizeSize: 256, CropSize: 224, Mean: imageNetMean, Std: imageNetStd}
	ImageNetV2 = Spec{ResizeSize: 232, CropSize: 224, Mean: imageNetMean, Std: imageNetStd}
)

// String describes the transform, for manifests.
func (s Spec) String() string {
	return fmt.Sprintf("resize shorter side to %d (PIL bilinear, antialiased), centre crop %d, /255, "+
		"normalise mean %v std %v", s.ResizeSize, s.CropSize, s.Mean, s.Std)
}

// RGB is an 8-bit RGB image, pixels interleaved row by row.
type RGB struct {
	W, H int
	Pix  []uint8 // len 3·W·H
}

// DecodeJPEG decodes a JPEG file's bytes into RGB, as PIL's convert("RGB") would: colour
// images with libjpeg's chroma upsampling and colour conversion (see the package
// documentation), grey-scale images replicated into the three channels, and CMYK (Adobe)
// images with PIL's formula R = (255−K) − round(C·(255−K)/255).
func DecodeJPEG(data []byte) (*RGB, error) {
	img, err := jpeg.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("decoding JPEG: %w", err)
	}
	return ToRGB(img), nil
}

// ToRGB converts any image to 8-bit RGB (alpha is dropped; see [DecodeJPEG] for CMYK).
func ToRGB(img image.Image) *RGB {
	b := img.Bounds()
	out := &RGB{W: b.Dx(), H: b.Dy(), Pix: make([]uint8, 3*b.Dx()*b.Dy())}
	if m, ok := img.(*image.YCbCr); ok && fromYCbCr(m, out) {
		return out
	}
	p := out.Pix
	switch m := img.(type) {
	case *image.Gray:
		for y := range out.H {
			for x := range out.W {
				v := m.GrayAt(b.Min.X+x, b.Min.Y+y).Y
				p[0], p[1], p[2] = v, v, v
				p = p[3:]
			}
		}
	case *image.CMYK:
		for y := range out.H {
			for x := range out.W {
				c := m.CMYKAt(b.Min.X+x, b.Min.Y+y)
				nk := 255 - int(c.K)
				p[0], p[1], p[2] = uint8(nk-mulDiv255(int(c.C), nk)), uint8(nk-mulDiv255(int(c.M), nk)), uint8(nk-mulDiv255(int(c.Y), nk))
				p = p[3:]
			}
		}
	default:
		for y := range out.H {
			for x := range out.W {
				c := color.RGBAModel.Convert(img.At(b.Min.X+x, b.Min.Y+y)).(color.RGBA)
				p[0], p[1], p[2] = c.R, c.G, c.B
				p = p[3:]
			}
		}
	}
	return out
}

// mulDiv255 is round(a·b/255) computed as PIL's MULDIV255 macro does.
func mulDiv255(a, b int) int {
	t := a*b + 128
	return ((t >> 8) + t) >> 8
}

// ResizedSize returns the size torchvision's resize to a shorter side of size gives a w×h image.
func ResizedSize(w, h, size int) (nw, nh int) {
	if w <= h {
		return size, int(float64(size*h) / float64(w))
	}
	return int(float64(size*w) / float64(h)), size
}

// CropOffset returns torchvision's centre-crop offset along a side: round((size−crop)/2) with
// ties to even.
func CropOffset(size, crop int) int {
	return int(math.RoundToEven(float64(size-crop) / 2))
}

// Apply transforms img and writes the result to dst in channel-major (C×H×W) order; dst must
// have 3·CropSize² elements.
func (s Spec) Apply(img *RGB, dst []float32) error {
	if len(dst) != 3*s.CropSize*s.CropSize {
		return fmt.Errorf("transform: destination has %d elements, want 3×%d×%d", len(dst), s.CropSize, s.CropSize)
	}
	if img.W < 1 || img.H < 1 {
		return fmt.Errorf("transform: empty %d×%d image", img.W, img.H)
	}
	w, h := ResizedSize(img.W, img.H, s.ResizeSize)
	if w < s.CropSize || h < s.CropSize {
		return fmt.Errorf("transform: resized image %d×%d is smaller than the %d crop", w, h, s.CropSize)
	}
	r := Resize(img, w, h)
	top, left := CropOffset(h, s.CropSize), CropOffset(w, s.CropSize)
	n := s.CropSize * s.CropSize
	for c := range 3 {
		mean, std := s.Mean[c], s.Std[c]
		out := dst[c*n : (c+1)*n]
		for y := range s.CropSize {
			row := r.Pix[3*((top+y)*r.W+left)+c:]
			for x := range s.CropSize {
				out[y*s.CropSize+x] = (float32(row[3*x])/255 - mean) / std
			}
		}
	}
	return nil
}

// precisionBits is PIL's fixed-point precision for 8-bit resampling coefficients.
const precisionBits = 32 - 8 - 2

// coeffs are the fixed-point filter weights of a one-dimensional resize: output i is
// Σ_k weights[i][k]·in[start[i]+k].
type coeffs struct {
	start   []int
	weights [][]int32
}

// bilinearCoeffs computes PIL's antialiased bilinear weights for resizing inSize samples to
// outSize: output i is centred at (i+½)·scale in input coordinates, scale = inSize/outSize,
// and input j gets weight tri(((j+½) − centre)/max(scale,1)), tri(t) = max(0, 1−|t|),
// normalised to sum 1 and rounded to precisionBits fractional bits.
func bilinearCoeffs(inSize, outSize int) coeffs {
	scale := float64(inSize) / float64(outSize)
	filterScale := max(scale, 1)
	support := filterScale // the bilinear filter's support is 1
	c := coeffs{start: make([]int, outSize), weights: make([][]int32, outSize)}
	for i := range outSize {
		center := (float64(i) + 0.5) * scale
		lo := max(int(center-support+0.5), 0)
		hi := min(int(center+support+0.5), inSize)
		w := make([]float64, hi-lo)
		var total float64
		for j := range w {
			t := math.Abs((float64(j+lo) - center + 0.5) / filterScale)
			if t < 1 {
				w[j] = 1 - t
			}
			total += w[j]
		}
		fixed := make([]int32, len(w))
		for j, v := range w {
			if total != 0 {
				v /= total
			}
			if v < 0 {
				fixed[j] = int32(-0.5 + v*(1<<precisionBits))
			} else {
				fixed[j] = int32(0.5 + v*(1<<precisionBits))
			}
		}
		c.start[i], c.weights[i] = lo, fixed
	}
	return c
}

// clip8 converts a fixed-point accumulator to 8 bits as PIL does (truncating; the accumulator
// starts at ½ so that this rounds).
func clip8(v int32) uint8 {
	switch {
	case v >= 1<<precisionBits<<8:
		return 255
	case v <= 0:
		return 0
	}
	return uint8(v >> precisionBits)
}

// Resize resizes img to w×h with PIL's antialiased bilinear filter (Image.resize with
// Image.BILINEAR on an RGB image): a horizontal pass into an 8-bit intermediate image, then a
// vertical pass; a pass whose size does not change is skipped.
func Resize(img *RGB, w, h int) *RGB {
	cur := img
	if w != img.W {
		c := bilinearCoeffs(img.W, w)
		out := &RGB{W: w, H: cur.H, Pix: make([]uint8, 3*w*cur.H)}
		for y := range cur.H {
			in := cur.Pix[3*y*cur.W : 3*(y+1)*cur.W]
			o := out.Pix[3*y*w : 3*(y+1)*w]
			for x := range w {
				for ch := range 3 {
					acc := int32(1 << (precisionBits - 1))
					for k, wt := range c.weights[x] {
						acc += int32(in[3*(c.start[x]+k)+ch]) * wt
					}
					o[3*x+ch] = clip8(acc)
				}
			}
		}
		cur = out
	}
	if h != img.H {
		c := bilinearCoeffs(img.H, h)
		out := &RGB{W: cur.W, H: h, Pix: make([]uint8, 3*cur.W*h)}
		rowLen := 3 * cur.W
		for y := range h {
			o := out.Pix[y*rowLen : (y+1)*rowLen]
			for i := range o {
				acc := int32(1 << (precisionBits - 1))
				for k, wt := range c.weights[y] {
					acc += int32(cur.Pix[(c.start[y]+k)*rowLen+i]) * wt
				}
				o[i] = clip8(acc)
			}
		}
		cur = out
	}
	if cur == img {
		cur = &RGB{W: img.W, H: img.H, Pix: append([]uint8(nil), img.Pix...)}
	}
	return cur
}
