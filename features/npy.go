package features

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/fgn-paper/fgn/internal/atomicfile"
)

// The .npy format (NumPy's NEP 1): the magic string "\x93NUMPY", a major and minor version byte,
// a little-endian header length (2 bytes in version 1, 4 bytes in versions 2 and 3), and an ASCII
// Python dict literal {'descr': ..., 'fortran_order': ..., 'shape': (...), } padded with spaces and
// a newline so that the data starts at a multiple of 64 bytes. The data follows in C or Fortran
// order.

const npyMagic = "\x93NUMPY"

// npyHeader is the parsed header of a .npy file.
type npyHeader struct {
	descr   string // e.g. "<f4"
	fortran bool
	shape   []int
}

// count is the number of elements.
func (h npyHeader) count() int {
	n := 1
	for _, s := range h.shape {
		n *= s
	}
	return n
}

// dtype returns the element kind ('f', 'i' or 'u') and size in bytes of a little-endian or
// byte-sized descr, or an error naming the unsupported descr.
func (h npyHeader) dtype() (kind byte, size int, err error) {
	d := h.descr
	if len(d) < 3 {
		return 0, 0, fmt.Errorf("unsupported dtype %q", d)
	}
	order, kind := d[0], d[1]
	size, err = strconv.Atoi(d[2:])
	if err != nil {
		return 0, 0, fmt.Errorf("unsupported dtype %q", d)
	}
	if order == '>' && size > 1 {
		return 0, 0, fmt.Errorf("big-endian dtype %q is not supported (save with a little-endian dtype)", d)
	}
	if order != '<' && order != '|' && order != '=' && !(order == '>' && size == 1) {
		return 0, 0, fmt.Errorf("unsupported dtype %q", d)
	}
	switch {
	case kind == 'f' && (size == 4 || size == 8):
	case (kind == 'i' || kind == 'u') && (size == 1 || size == 2 || size == 4 || size == 8):
	default:
		return 0, 0, fmt.Errorf("unsupported dtype %q", d)
	}
	return kind, size, nil
}

func readNPYHeader(r io.Reader) (npyHeader, error) {
	var pre [8]byte
	if _, err := io.ReadFull(r, pre[:]); err != nil {
		return npyHeader{}, fmt.Errorf("not a .npy file (too short): %w", err)
	}
	if string(pre[:6]) != npyMagic {
		return npyHeader{}, fmt.Errorf("not a .npy file (bad magic %q)", pre[:6])
	}
	var headerLen int
	switch pre[6] {
	case 1:
		var n [2]byte
		if _, err := io.ReadFull(r, n[:]); err != nil {
			return npyHeader{}, fmt.Errorf("truncated .npy header: %w", err)
		}
		headerLen = int(binary.LittleEndian.Uint16(n[:]))
	case 2, 3:
		var n [4]byte
		if _, err := io.ReadFull(r, n[:]); err != nil {
			return npyHeader{}, fmt.Errorf("truncated .npy header: %w", err)
		}
		headerLen = int(binary.LittleEndian.Uint32(n[:]))
		if headerLen > 1<<20 {
			return npyHeader{}, fmt.Errorf("implausible .npy header length %d", headerLen)
		}
	default:
		return npyHeader{}, fmt.Errorf("unsupported .npy version %d.%d", pre[6], pre[7])
	}
	buf := make([]byte, headerLen)
	if _, err := io.ReadFull(r, buf); err != nil {
		return npyHeader{}, fmt.Errorf("truncated .npy header: %w", err)
	}
	return parseNPYDict(string(buf))
}

// parseNPYDict parses the header dict literal that numpy.lib.format writes.
func parseNPYDict(s string) (npyHeader, error) {
	var h npyHeader
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "{") || !strings.HasSuffix(s, "}") {
		return h, fmt.Errorf("malformed .npy header %q", s)
	}
	body := s[1 : len(s)-1]
	seen := map[string]bool{}
	for body = strings.TrimSpace(body); body != ""; body = strings.TrimSpace(body) {
		if body[0] != '\'' && body[0] != '"' {
			return h, fmt.Errorf("malformed .npy header %q", s)
		}
		end := strings.IndexByte(body[1:], body[0])
		if end < 0 {
			return h, fmt.Errorf("malformed .npy header %q", s)
		}
		key := body[1 : end+1]
		body = strings.TrimSpace(body[end+2:])
		if !strings.HasPrefix(body, ":") {
			return h, fmt.Errorf("malformed .npy header %q", s)
		}
		body = strings.TrimSpace(body[1:])
		var value string
		switch {
		case strings.HasPrefix(body, "("):
			end := strings.IndexByte(body, ')')
			if end < 0 {
				return h, fmt.Errorf("malformed .npy header %q", s)
			}
			value, body = body[:end+1], body[end+1:]
		default:
			end := strings.IndexByte(body, ',')
			if end < 0 {
				end = len(body)
			}
			value, body = strings.TrimSpace(body[:end]), body[end:]
		}
		body = strings.TrimPrefix(strings.TrimSpace(body), ",")
		seen[key] = true
		switch key {
		case "descr":
			h.descr = strings.Trim(value, `'"`)
		case "fortran_order":
			switch value {
			case "True":
				h.fortran = true
			case "False":
			default:
				return h, fmt.Errorf("malformed fortran_order %q in .npy header", value)
			}
		case "shape":
			inner := strings.TrimSpace(strings.Trim(value, "()"))
			for _, f := range strings.Split(inner, ",") {
				if f = strings.TrimSpace(f); f == "" {
					continue
				}
				n, err := strconv.Atoi(strings.TrimSuffix(f, "L"))
				if err != nil || n < 0 {
					return h, fmt.Errorf("malformed shape %q in .npy header", value)
				}
				h.shape = append(h.shape, n)
			}
		}
	}
	for _, k := range []string{"descr", "fortran_order", "shape"} {
		if !seen[k] {
			return h, fmt.Errorf(".npy header lacks %q", k)
		}
	}
	return h, nil
}

// readNPY reads a whole .npy file, returning its header and its elements converted to float64
// in C (row-major) order. Every supported dtype (float32/64, int and uint of 1-8 bytes)
// converts exactly except int64/uint64 values beyond 2^53, which the label reader rejects.
func readNPY(path string) (npyHeader, []float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return npyHeader{}, nil, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	h, err := readNPYHeader(r)
	if err != nil {
		return h, nil, fmt.Errorf("%s: %w", path, err)
	}
	kind, size, err := h.dtype()
	if err != nil {
		return h, nil, fmt.Errorf("%s: %w", path, err)
	}
	n := h.count()
	if st, err := f.Stat(); err == nil && int64(n)*int64(size) > st.Size() {
		return h, nil, fmt.Errorf("%s: truncated: shape %v of %s needs %d bytes, the file has %d",
			path, h.shape, h.descr, int64(n)*int64(size), st.Size())
	}
	out := make([]float64, n)
	buf := make([]byte, 1<<16*size)
	for i := 0; i < n; {
		m := min(n-i, 1<<16)
		if _, err := io.ReadFull(r, buf[:m*size]); err != nil {
			return h, nil, fmt.Errorf("%s: truncated data after element %d of %d: %w", path, i, n, err)
		}
		for k := range m {
			out[i+k] = decode(kind, size, buf[k*size:(k+1)*size])
		}
		i += m
	}
	if h.fortran && len(h.shape) > 1 {
		out = fortranToC(out, h.shape)
	}
	return h, out, nil
}

func decode(kind byte, size int, b []byte) float64 {
	switch kind {
	case 'f':
		if size == 4 {
			return float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))
		}
		return math.Float64frombits(binary.LittleEndian.Uint64(b))
	case 'i':
		switch size {
		case 1:
			return float64(int8(b[0]))
		case 2:
			return float64(int16(binary.LittleEndian.Uint16(b)))
		case 4:
			return float64(int32(binary.LittleEndian.Uint32(b)))
		default:
			return float64(int64(binary.LittleEndian.Uint64(b)))
		}
	default:
		switch size {
		case 1:
			return float64(b[0])
		case 2:
			return float64(binary.LittleEndian.Uint16(b))
		case 4:
			return float64(binary.LittleEndian.Uint32(b))
		default:
			return float64(binary.LittleEndian.Uint64(b))
		}
	}
}

// fortranToC reorders column-major data of the given shape to row-major.
func fortranToC(in []float64, shape []int) []float64 {
	out := make([]float64, len(in))
	idx := make([]int, len(shape))
	for f := range in {
		// f is the Fortran offset of idx; compute the C offset.
		c := 0
		for k := range shape {
			c = c*shape[k] + idx[k]
		}
		out[c] = in[f]
		for k := range idx { // advance idx in Fortran order (first index fastest)
			idx[k]++
			if idx[k] < shape[k] {
				break
			}
			idx[k] = 0
		}
	}
	return out
}

// writeNPY atomically writes a C-order .npy (version 1.0) file with the given descr ("<f4" or
// "<i8") and shape; put writes the little-endian elements.
func writeNPY(path, descr string, shape []int, put func(w io.Writer) error) error {
	dims := make([]string, len(shape))
	for i, s := range shape {
		dims[i] = strconv.Itoa(s)
	}
	tuple := strings.Join(dims, ", ")
	if len(shape) == 1 {
		tuple += ","
	}
	dict := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", descr, tuple)
	// Pad so that magic(6)+version(2)+length(2)+dict+'\n' is a multiple of 64.
	total := 10 + len(dict) + 1
	dict += strings.Repeat(" ", (64-total%64)%64) + "\n"
	return atomicfile.Write(path, func(w io.Writer) error {
		var pre [10]byte
		copy(pre[:], npyMagic)
		pre[6], pre[7] = 1, 0
		binary.LittleEndian.PutUint16(pre[8:], uint16(len(dict)))
		if _, err := w.Write(pre[:]); err != nil {
			return err
		}
		if _, err := io.WriteString(w, dict); err != nil {
			return err
		}
		return put(w)
	})
}

// putFloat32s returns a writeNPY element writer for x as "<f4".
func putFloat32s(x []float32) func(io.Writer) error {
	return func(w io.Writer) error { return binary.Write(w, binary.LittleEndian, x) }
}

// putInt64s returns a writeNPY element writer for y as "<i8".
func putInt64s(y []int32) func(io.Writer) error {
	return func(w io.Writer) error {
		wide := make([]int64, len(y))
		for i, v := range y {
			wide[i] = int64(v)
		}
		return binary.Write(w, binary.LittleEndian, wide)
	}
}
