package resnet

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"sort"
)

// Tensor is a host tensor of float32 values in row-major order.
type Tensor struct {
	Shape []int
	Data  []float32
}

// Weights is a state dict: parameter and buffer names (as in PyTorch, e.g.
// "layer1.0.conv1.weight") to tensors. Integer buffers (num_batches_tracked) are converted to
// float32 like the rest; the model ignores them.
type Weights map[string]*Tensor

// Names returns the sorted tensor names.
func (w Weights) Names() []string {
	names := make([]string, 0, len(w))
	for n := range w {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// LoadFile reads a weight file: a PyTorch checkpoint in the zip format of torch.save (as the
// torchvision .pth files are) or a safetensors file, told apart by their first bytes.
func LoadFile(path string) (Weights, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var w Weights
	switch {
	case bytes.HasPrefix(data, []byte("PK\x03\x04")):
		w, err = ReadPyTorch(data)
	case len(data) > 9 && data[8] == '{':
		w, err = ReadSafetensors(data)
	case (len(data) > 2 && data[0] == 0x80) || bytes.HasPrefix(data, []byte{0x8a, 0x0a}): // a bare pickle
		err = fmt.Errorf("legacy (pre-1.6, non-zip) PyTorch serialization is not supported: re-save it with " +
			"torch.save(torch.load(path), path) from PyTorch ≥ 1.6, or export it to safetensors")
	default:
		err = fmt.Errorf("neither a PyTorch zip checkpoint nor a safetensors file (first bytes %q)", data[:min(len(data), 8)])
	}
	if err != nil {
		return nil, fmt.Errorf("weight file %s: %w", path, err)
	}
	return w, nil
}

// ReadSafetensors parses a safetensors file: an 8-byte little-endian header length, a JSON
// header mapping names to {"dtype", "shape", "data_offsets": [begin, end]} (offsets relative to
// the end of the header), then the raw little-endian data. F32, F64, F16 and BF16 tensors are
// read (converted to float32); I64 and I32 too.
func ReadSafetensors(data []byte) (Weights, error) {
	if len(data) < 8 {
		return nil, fmt.Errorf("safetensors: file too short")
	}
	n := binary.LittleEndian.Uint64(data)
	if n > uint64(len(data)-8) {
		return nil, fmt.Errorf("safetensors: header length %d exceeds the file (%d bytes): truncated?", n, len(data))
	}
	var header map[string]json.RawMessage
	if err := json.Unmarshal(data[8:8+n], &header); err != nil {
		return nil, fmt.Errorf("safetensors: bad header: %w", err)
	}
	body := data[8+n:]
	w := Weights{}
	for name, raw := range header {
		if name == "__metadata__" {
			continue
		}
		var info struct {
			DType   string `json:"dtype"`
			Shape   []int  `json:"shape"`
			Offsets [2]int `json:"data_offsets"`
		}
		if err := json.Unmarshal(raw, &info); err != nil {
			return nil, fmt.Errorf("safetensors: tensor %q: %w", name, err)
		}
		count := 1
		for _, d := range info.Shape {
			if d < 0 {
				return nil, fmt.Errorf("safetensors: tensor %q has negative dimension in %v", name, info.Shape)
			}
			count *= d
		}
		size := dtypeSize(info.DType)
		if size == 0 {
			return nil, fmt.Errorf("safetensors: tensor %q has unsupported dtype %s", name, info.DType)
		}
		b, e := info.Offsets[0], info.Offsets[1]
		if b < 0 || e < b || e > len(body) {
			return nil, fmt.Errorf("safetensors: tensor %q data [%d, %d) outside the %d data bytes: truncated?", name, b, e, len(body))
		}
		if e-b != count*size {
			return nil, fmt.Errorf("safetensors: tensor %q has %d data bytes for shape %v of %s", name, e-b, info.Shape, info.DType)
		}
		vals, err := decode(info.DType, body[b:e])
		if err != nil {
			return nil, fmt.Errorf("safetensors: tensor %q: %w", name, err)
		}
		w[name] = &Tensor{Shape: slices.Clone(info.Shape), Data: vals}
	}
	return w, nil
}

// dtypeSize returns the element size of a safetensors dtype name, 0 if unsupported.
func dtypeSize(dtype string) int {
	switch dtype {
	case "F64", "I64":
		return 8
	case "F32", "I32":
		return 4
	case "F16", "BF16":
		return 2
	}
	return 0
}

// decode converts little-endian values of a safetensors dtype to float32.
func decode(dtype string, b []byte) ([]float32, error) {
	size := dtypeSize(dtype)
	out := make([]float32, len(b)/size)
	for i := range out {
		e := b[i*size:]
		switch dtype {
		case "F32":
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(e))
		case "F64":
			out[i] = float32(math.Float64frombits(binary.LittleEndian.Uint64(e)))
		case "BF16":
			out[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(e)) << 16)
		case "F16":
			out[i] = halfToFloat32(binary.LittleEndian.Uint16(e))
		case "I64":
			out[i] = float32(int64(binary.LittleEndian.Uint64(e)))
		case "I32":
			out[i] = float32(int32(binary.LittleEndian.Uint32(e)))
		default:
			return nil, fmt.Errorf("unsupported dtype %s", dtype)
		}
	}
	return out, nil
}

// halfToFloat32 converts an IEEE 754 binary16 value.
func halfToFloat32(h uint16) float32 {
	sign := float32(1)
	if h&0x8000 != 0 {
		sign = -1
	}
	exp, frac := int(h>>10&0x1f), float64(h&0x3ff)
	switch exp {
	case 0:
		return sign * float32(math.Ldexp(frac, -24))
	case 31:
		if frac == 0 {
			return sign * float32(math.Inf(1))
		}
		return float32(math.NaN())
	}
	return sign * float32(math.Ldexp(1+frac/1024, exp-15))
}

// WriteSafetensors encodes w as a safetensors file with F32 tensors (names sorted), e.g. to
// convert a PyTorch checkpoint once or to write test weights.
func WriteSafetensors(w Weights) []byte {
	header := map[string]any{}
	offset := 0
	names := w.Names()
	for _, name := range names {
		t := w[name]
		header[name] = map[string]any{"dtype": "F32", "shape": t.Shape, "data_offsets": []int{offset, offset + 4*len(t.Data)}}
		offset += 4 * len(t.Data)
	}
	h, _ := json.Marshal(header) // maps of strings, ints and slices always marshal
	for len(h)%8 != 0 {
		h = append(h, ' ')
	}
	out := make([]byte, 8, 8+len(h)+offset)
	binary.LittleEndian.PutUint64(out, uint64(len(h)))
	out = append(out, h...)
	for _, name := range names {
		for _, v := range w[name].Data {
			out = binary.LittleEndian.AppendUint32(out, math.Float32bits(v))
		}
	}
	return out
}
