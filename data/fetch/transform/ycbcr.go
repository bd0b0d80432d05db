package transform

import "image"

// libjpeg's YCbCr → RGB conversion (jdcolor.c): 16-bit fixed-point products rounded with
// ONE_HALF, R = Y + 1.402(Cr−128), G = Y − 0.34414(Cb−128) − 0.71414(Cr−128),
// B = Y + 1.772(Cb−128), clamped to [0, 255].
var crR, cbB, crG, cbG [256]int32

func init() {
	const scale, half = 16, 1 << 15
	fix := func(x float64) int32 { return int32(x*(1<<scale) + 0.5) }
	for i := range 256 {
		x := int32(i - 128)
		crR[i] = (fix(1.40200)*x + half) >> scale
		cbB[i] = (fix(1.77200)*x + half) >> scale
		crG[i] = -fix(0.71414) * x
		cbG[i] = -fix(0.34414)*x + half
	}
}

func clamp8(v int32) uint8 {
	return uint8(min(max(v, 0), 255))
}

// fromYCbCr converts a decoded JPEG's YCbCr planes to RGB as libjpeg (and so PIL) does by
// default: chroma subsampled 2× horizontally (4:2:2) or 2× both ways (4:2:0) is upsampled with
// libjpeg's "fancy" triangle filter (jdsample.c: each output sample weighs the nearer input
// sample ¾ and the next one ¼ per subsampled direction, in integer arithmetic with its
// rounding), then converted with libjpeg's fixed-point tables. It reports false for other
// layouts, which the caller converts with Go's color model.
func fromYCbCr(m *image.YCbCr, out *RGB) bool {
	w, h := out.W, out.H
	cw, ch := (w+1)/2, (h+1)/2
	var vert bool
	switch m.SubsampleRatio {
	case image.YCbCrSubsampleRatio444:
		cw, ch = w, h
	case image.YCbCrSubsampleRatio422:
		ch = h
	case image.YCbCrSubsampleRatio420:
		vert = true
	default:
		return false
	}
	if m.Rect.Min != (image.Point{}) || cw < 2 || ch < 1 {
		return false
	}
	cb, cr := make([]uint8, w), make([]uint8, w)
	for y := range h {
		yrow := m.Y[y*m.YStride : y*m.YStride+w]
		switch {
		case cw == w:
			copy(cb, m.Cb[y*m.CStride:y*m.CStride+w])
			copy(cr, m.Cr[y*m.CStride:y*m.CStride+w])
		case !vert:
			upsampleH2V1(m.Cb[y*m.CStride:y*m.CStride+cw], cb)
			upsampleH2V1(m.Cr[y*m.CStride:y*m.CStride+cw], cr)
		default:
			near := y / 2
			far := near - 1 // the row above for even output rows, below for odd, replicated at the edges
			if y%2 == 1 {
				far = near + 1
			}
			far = min(max(far, 0), ch-1)
			upsampleH2V2(m.Cb[near*m.CStride:near*m.CStride+cw], m.Cb[far*m.CStride:far*m.CStride+cw], cb)
			upsampleH2V2(m.Cr[near*m.CStride:near*m.CStride+cw], m.Cr[far*m.CStride:far*m.CStride+cw], cr)
		}
		p := out.Pix[3*y*w : 3*(y+1)*w]
		for x, yv := range yrow {
			yy := int32(yv)
			p[3*x] = clamp8(yy + crR[cr[x]])
			p[3*x+1] = clamp8(yy + (cbG[cb[x]]+crG[cr[x]])>>16)
			p[3*x+2] = clamp8(yy + cbB[cb[x]])
		}
	}
	return true
}

// upsampleH2V1 doubles a row with libjpeg's h2v1_fancy_upsample, writing len(out) ≤ 2·len(in)
// samples.
func upsampleH2V1(in, out []uint8) {
	n := len(in)
	full := make([]uint8, 2*n)
	full[0] = in[0]
	full[2*n-1] = in[n-1]
	for i := range n {
		v := 3 * int(in[i])
		if i > 0 {
			full[2*i] = uint8((v + int(in[i-1]) + 1) >> 2)
		}
		if i < n-1 {
			full[2*i+1] = uint8((v + int(in[i+1]) + 2) >> 2)
		}
	}
	copy(out, full)
}

// upsampleH2V2 computes one output row of libjpeg's h2v2_fancy_upsample from the nearer and the
// farther chroma row, writing len(out) ≤ 2·len(near) samples.
func upsampleH2V2(near, far, out []uint8) {
	n := len(near)
	col := func(i int) int { return 3*int(near[i]) + int(far[i]) }
	full := make([]uint8, 2*n)
	for i := range n {
		c := col(i)
		if i == 0 {
			full[0] = uint8((4*c + 8) >> 4)
		} else {
			full[2*i] = uint8((3*c + col(i-1) + 8) >> 4)
		}
		if i == n-1 {
			full[2*i+1] = uint8((4*c + 7) >> 4)
		} else {
			full[2*i+1] = uint8((3*c + col(i+1) + 7) >> 4)
		}
	}
	copy(out, full)
}
