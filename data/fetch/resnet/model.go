// Package resnet is a frozen torchvision ResNet (bottleneck blocks: ResNet-50/101/152) as a
// GoMLX graph in inference mode, from the input image to the global average pool — the
// pre-classifier features (2048 per image for ResNet-50). Weights are read from a torchvision
// state dict (a .pth checkpoint or a safetensors export; see [LoadFile]); the block counts and
// widths are taken from the tensor shapes, so any torchvision-style bottleneck ResNet loads.
//
// The network is torchvision's (ResNet v1.5, stride on the 3×3 convolution):
//
//	stem:   conv 7×7/2 (pad 3) → BN → ReLU → max-pool 3×3/2 (pad 1)
//	block:  y = ReLU(BN₃(conv₁ₓ₁(ReLU(BN₂(conv₃ₓ₃/s(ReLU(BN₁(conv₁ₓ₁(x))))))) + shortcut(x)),
//	        shortcut = BN(conv₁ₓ₁/s(x)) in the first block of a stage, x otherwise
//	stages: 4, strides 1, 2, 2, 2
//	head:   mean over the spatial positions (the fc layer is not used)
//
// Batch normalisation uses its running statistics, BN(v) = γ(v−μ)/√(σ²+ε) + β with ε = 1e-5,
// and is folded into the preceding convolution on the host (in float64):
// conv(x, W)·s + (β − μs) = conv(x, W·s) + (β − μs), s = γ/√(σ²+ε).
package resnet

import (
	"fmt"
	"math"
	"slices"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/gobackend"
	. "github.com/gomlx/gomlx/core/graph" //nolint:staticcheck // GoMLX's graph-building style
	"github.com/gomlx/gomlx/core/tensors"
	timage "github.com/gomlx/gomlx/core/tensors/images"
	"github.com/gomlx/gomlx/support/exceptions"
)

// bnEpsilon is torch.nn.BatchNorm2d's default ε, which torchvision's ResNets use.
const bnEpsilon = 1e-5

// Arch is the structure of a bottleneck ResNet as read from its weights.
type Arch struct {
	Blocks     [4]int // blocks per stage: [3 4 6 3] for ResNet-50
	StemWidth  int    // output channels of the stem convolution: 64 for ResNet-50
	FeatureDim int    // output channels of the last stage: 2048 for ResNet-50
}

func (a Arch) String() string {
	return fmt.Sprintf("bottleneck ResNet, blocks %v, stem width %d, %d-d features", a.Blocks, a.StemWidth, a.FeatureDim)
}

// IsResNet50 reports whether a is torchvision's ResNet-50.
func (a Arch) IsResNet50() bool {
	return a.Blocks == [4]int{3, 4, 6, 3} && a.StemWidth == 64 && a.FeatureDim == 2048
}

// conv is a convolution with batch normalisation folded in: kernel in [kh, kw, in, out] order.
type conv struct {
	kernel        *tensors.Tensor
	bias          *tensors.Tensor
	stride, pad   int
	in, out, size int
}

type block struct {
	c1, c2, c3 conv
	down       *conv
}

// ConvMethod selects how convolutions are computed.
type ConvMethod int

const (
	// ConvAuto uses ConvIm2Col on the pure-Go backend and ConvDirect elsewhere.
	ConvAuto ConvMethod = iota
	// ConvDirect uses the backend's convolution (graph.Convolve).
	ConvDirect
	// ConvIm2Col gathers each output position's k×k input patch (strided slices of the
	// zero-padded input, concatenated along the channels) and multiplies by the kernel as a
	// matrix, [N·H'·W', k²·C_in] × [k²·C_in, C_out]; 1×1 convolutions are plain matrix
	// products. On the pure-Go backend this runs on its SIMD matrix product and is about two
	// orders of magnitude faster than its direct convolution.
	ConvIm2Col
)

// Model is a compiled feature extractor.
type Model struct {
	Arch   Arch
	stem   conv
	blocks []block
	params []any // the convolutions' tensors, in graph-input order
	im2col bool
	exec   *Exec
}

// New checks the weights' structure, folds the batch normalisations and prepares the graph
// for backend (compiled on the first call of Features for each batch shape).
func New(backend compute.Backend, w Weights, method ConvMethod) (*Model, error) {
	m := &Model{im2col: method == ConvIm2Col || (method == ConvAuto && backend.String() == gobackend.BackendName)}
	var err error
	if m.stem, err = foldConv(w, "conv1", "bn1", 2, -1); err != nil {
		return nil, err
	}
	if m.stem.size != 7 || m.stem.in != 3 {
		return nil, fmt.Errorf("conv1.weight has shape [%d %d %d %d], want [width 3 7 7]", m.stem.out, m.stem.in, m.stem.size, m.stem.size)
	}
	m.Arch.StemWidth = m.stem.out
	in := m.stem.out
	for s := range 4 {
		for b := 0; ; b++ {
			p := fmt.Sprintf("layer%d.%d.", s+1, b)
			if _, ok := w[p+"conv1.weight"]; !ok {
				if b == 0 {
					return nil, fmt.Errorf("weights have no %sconv1.weight: not a torchvision bottleneck ResNet", p)
				}
				break
			}
			stride := 1
			if s > 0 && b == 0 {
				stride = 2
			}
			var blk block
			if blk.c1, err = foldConv(w, p+"conv1", p+"bn1", 1, in); err != nil {
				return nil, err
			}
			if blk.c2, err = foldConv(w, p+"conv2", p+"bn2", stride, blk.c1.out); err != nil {
				return nil, err
			}
			if blk.c3, err = foldConv(w, p+"conv3", p+"bn3", 1, blk.c2.out); err != nil {
				return nil, err
			}
			if blk.c1.size != 1 || blk.c2.size != 3 || blk.c3.size != 1 {
				return nil, fmt.Errorf("%s: kernel sizes %d, %d, %d, want 1, 3, 1 (bottleneck)", p, blk.c1.size, blk.c2.size, blk.c3.size)
			}
			if _, ok := w[p+"downsample.0.weight"]; ok {
				d, err := foldConv(w, p+"downsample.0", p+"downsample.1", stride, in)
				if err != nil {
					return nil, err
				}
				if d.size != 1 || d.out != blk.c3.out {
					return nil, fmt.Errorf("%sdownsample.0.weight: %d×%d kernel to %d channels, want 1×1 to %d", p, d.size, d.size, d.out, blk.c3.out)
				}
				blk.down = &d
			} else if stride != 1 || in != blk.c3.out {
				return nil, fmt.Errorf("%s changes the shape (stride %d, %d → %d channels) but has no downsample weights", p, stride, in, blk.c3.out)
			}
			m.blocks = append(m.blocks, blk)
			m.Arch.Blocks[s]++
			in = blk.c3.out
		}
	}
	m.Arch.FeatureDim = in
	for _, c := range m.convs() {
		m.params = append(m.params, c.kernel, c.bias)
	}
	m.exec, err = NewExec(backend, m.graph)
	if err != nil {
		return nil, err
	}
	m.exec.SetMaxCache(4)
	return m, nil
}

// convs lists the convolutions in graph-input order.
func (m *Model) convs() []*conv {
	out := []*conv{&m.stem}
	for i := range m.blocks {
		b := &m.blocks[i]
		out = append(out, &b.c1, &b.c2, &b.c3)
		if b.down != nil {
			out = append(out, b.down)
		}
	}
	return out
}

// foldConv reads convName.weight ([out, in, k, k]) and the batch norm bnName.* and returns the
// folded convolution with padding (k−1)/2. wantIn < 0 skips the input-channel check.
func foldConv(w Weights, convName, bnName string, stride, wantIn int) (conv, error) {
	kt, ok := w[convName+".weight"]
	if !ok {
		return conv{}, fmt.Errorf("weights have no %s.weight", convName)
	}
	if len(kt.Shape) != 4 || kt.Shape[2] != kt.Shape[3] || kt.Shape[2]%2 != 1 {
		return conv{}, fmt.Errorf("%s.weight has shape %v, want [out in k k] with odd k", convName, kt.Shape)
	}
	out, in, k := kt.Shape[0], kt.Shape[1], kt.Shape[2]
	if len(kt.Data) != out*in*k*k {
		return conv{}, fmt.Errorf("%s.weight has %d values for shape %v", convName, len(kt.Data), kt.Shape)
	}
	if wantIn >= 0 && in != wantIn {
		return conv{}, fmt.Errorf("%s.weight has %d input channels, want %d", convName, in, wantIn)
	}
	bn := map[string][]float32{}
	for _, p := range []string{"weight", "bias", "running_mean", "running_var"} {
		t, ok := w[bnName+"."+p]
		if !ok {
			return conv{}, fmt.Errorf("weights have no %s.%s", bnName, p)
		}
		if len(t.Shape) != 1 || t.Shape[0] != out || len(t.Data) != out {
			return conv{}, fmt.Errorf("%s.%s has shape %v, want [%d]", bnName, p, t.Shape, out)
		}
		bn[p] = t.Data
	}
	kernel := make([]float32, len(kt.Data))
	bias := make([]float32, out)
	for o := range out {
		v := float64(bn["running_var"][o])
		if !(v >= 0) || math.IsInf(v, 0) {
			return conv{}, fmt.Errorf("%s.running_var[%d] = %v, want a finite non-negative variance", bnName, o, v)
		}
		s := float64(bn["weight"][o]) / math.Sqrt(v+bnEpsilon)
		bias[o] = float32(float64(bn["bias"][o]) - float64(bn["running_mean"][o])*s)
		for i := range in {
			for y := range k {
				for x := range k {
					// [out, in, y, x] → [y, x, in, out]
					kernel[((y*k+x)*in+i)*out+o] = float32(float64(kt.Data[((o*in+i)*k+y)*k+x]) * s)
				}
			}
		}
	}
	return conv{kernel: tensors.FromFlatDataAndDimensions(kernel, k, k, in, out),
		bias: tensors.FromFlatDataAndDimensions(bias, out), stride: stride, pad: (k - 1) / 2,
		in: in, out: out, size: k}, nil
}

// graph builds the network on inputs[0], a batch of images [N, 3, H, W] (torchvision's layout),
// with the convolutions' kernels and biases as the other inputs; it returns the [N, FeatureDim]
// features.
func (m *Model) graph(inputs []*Node) *Node {
	x := TransposeAllDims(inputs[0], 0, 2, 3, 1) // NCHW → NHWC
	params := inputs[1:]
	apply := func(c *conv, x *Node, relu bool) *Node {
		k, b := params[0], params[1]
		params = params[2:]
		var y *Node
		if m.im2col {
			y = convIm2Col(x, k, c)
		} else {
			y = Convolve(x, k).ChannelsAxis(timage.ChannelsLast).Strides(c.stride).
				PaddingPerDim([][2]int{{c.pad, c.pad}, {c.pad, c.pad}}).Done()
		}
		y = Add(y, Reshape(b, 1, 1, 1, c.out))
		if relu {
			y = Max(y, ScalarZero(y.Graph(), y.DType()))
		}
		return y
	}
	x = apply(&m.stem, x, true)
	if m.im2col {
		x = maxPoolSlices(x)
	} else {
		x = MaxPool(x).ChannelsAxis(timage.ChannelsLast).Window(3).Strides(2).PaddingPerDim([][2]int{{1, 1}, {1, 1}}).Done()
	}
	for i := range m.blocks {
		b := &m.blocks[i]
		y := apply(&b.c1, x, true)
		y = apply(&b.c2, y, true)
		y = apply(&b.c3, y, false)
		shortcut := x
		if b.down != nil {
			shortcut = apply(b.down, x, false)
		}
		x = Max(Add(y, shortcut), ScalarZero(y.Graph(), y.DType()))
	}
	return ReduceMean(x, 1, 2)
}

// convIm2Col is the convolution of x [N, H, W, C_in] with kernel k [k, k, C_in, C_out] as a
// matrix product (see ConvIm2Col).
func convIm2Col(x, k *Node, c *conv) *Node {
	dims := x.Shape().Dimensions
	n, h, w := dims[0], dims[1], dims[2]
	ho, wo := (h+2*c.pad-c.size)/c.stride+1, (w+2*c.pad-c.size)/c.stride+1
	if c.pad > 0 {
		zero := ScalarZero(x.Graph(), x.DType())
		x = Pad(x, zero, compute.PadAxis{}, compute.PadAxis{Start: c.pad, End: c.pad},
			compute.PadAxis{Start: c.pad, End: c.pad}, compute.PadAxis{})
	}
	var cols *Node
	if c.size == 1 && c.stride == 1 {
		cols = x
	} else {
		patches := make([]*Node, 0, c.size*c.size)
		for dy := range c.size {
			for dx := range c.size {
				patches = append(patches, Slice(x, AxisRange(),
					AxisRange(dy, dy+c.stride*(ho-1)+1).Stride(c.stride),
					AxisRange(dx, dx+c.stride*(wo-1)+1).Stride(c.stride), AxisRange()))
			}
		}
		cols = patches[0]
		if len(patches) > 1 {
			cols = Concatenate(patches, 3) // [N, H', W', k²·C_in], (dy, dx, channel) order as the kernel
		}
	}
	y := MatMul(Reshape(cols, n*ho*wo, c.size*c.size*c.in), Reshape(k, c.size*c.size*c.in, c.out))
	return Reshape(y, n, ho, wo, c.out)
}

// maxPoolSlices is the stem's 3×3 max-pool with stride 2 and padding 1 of x [N, H, W, C] as
// the elementwise maximum of nine strided slices of the −∞-padded input (the pure-Go backend's
// windowed reduction is several times slower).
func maxPoolSlices(x *Node) *Node {
	dims := x.Shape().Dimensions
	ho, wo := (dims[1]-1)/2+1, (dims[2]-1)/2+1
	inf := Infinity(x.Graph(), x.DType(), -1)
	x = Pad(x, inf, compute.PadAxis{}, compute.PadAxis{Start: 1, End: 1}, compute.PadAxis{Start: 1, End: 1}, compute.PadAxis{})
	var out *Node
	for dy := range 3 {
		for dx := range 3 {
			s := Slice(x, AxisRange(), AxisRange(dy, dy+2*(ho-1)+1).Stride(2), AxisRange(dx, dx+2*(wo-1)+1).Stride(2), AxisRange())
			if out == nil {
				out = s
			} else {
				out = Max(out, s)
			}
		}
	}
	return out
}

// Features returns the pooled features ([n, FeatureDim], row-major) of a batch of n images given
// as [n, 3, h, w] float32 values (already transformed).
func (m *Model) Features(images []float32, n, h, w int) ([]float32, error) {
	if n < 1 || h < 1 || w < 1 || len(images) != n*3*h*w {
		return nil, fmt.Errorf("resnet: %d values for a batch of %d images 3×%d×%d", len(images), n, h, w)
	}
	var out []float32
	err := exceptions.TryCatch[error](func() {
		args := append([]any{tensors.FromFlatDataAndDimensions(images, n, 3, h, w)}, m.params...)
		res, err := m.exec.Call(args...)
		if err != nil {
			panic(err)
		}
		if res[0].DType() != dtypes.Float32 || !slices.Equal(res[0].Shape().Dimensions, []int{n, m.Arch.FeatureDim}) {
			panic(fmt.Errorf("unexpected output %s", res[0].Shape()))
		}
		out = tensors.MustCopyFlatData[float32](res[0])
		res[0].FinalizeAll()
	})
	if err != nil {
		return nil, fmt.Errorf("resnet: running the graph: %w", err)
	}
	return out, nil
}
