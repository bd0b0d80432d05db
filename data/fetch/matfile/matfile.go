// Package matfile reads and writes MATLAB level-5 MAT-files (the format of `save -v7` and
// earlier, and of scipy.io.savemat), enough for dataset annotation files: numeric, logical,
// char, cell and struct arrays, compressed or not, little- or big-endian. HDF5-based v7.3 files,
// sparse arrays, objects and complex numbers are rejected with an error that names them.
//
// Layout of a level-5 file: a 128-byte header (116 bytes of text, an 8-byte subsystem offset,
// a 2-byte version 0x0100 and the endian indicator "IM" as written by the file's byte order),
// followed by data elements. Each element is an 8-byte tag (uint32 data type, uint32 byte count)
// and its data padded to 8 bytes; a "small" element packs the byte count into the tag's upper
// 16 bits and up to 4 data bytes into the tag's second word. A variable is a miMATRIX element
// (possibly inside a zlib-compressed miCOMPRESSED element) whose subelements are the array
// flags, the dimensions, the name and the class-specific data.
package matfile

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Class is a MATLAB array class (mxCLASS).
type Class uint8

// The array classes of level-5 MAT-files.
const (
	Cell   Class = 1
	Struct Class = 2
	Object Class = 3
	Char   Class = 4
	Sparse Class = 5
	Double Class = 6
	Single Class = 7
	Int8   Class = 8
	Uint8  Class = 9
	Int16  Class = 10
	Uint16 Class = 11
	Int32  Class = 12
	Uint32 Class = 13
	Int64  Class = 14
	Uint64 Class = 15
)

var classNames = map[Class]string{Cell: "cell", Struct: "struct", Object: "object", Char: "char",
	Sparse: "sparse", Double: "double", Single: "single", Int8: "int8", Uint8: "uint8", Int16: "int16",
	Uint16: "uint16", Int32: "int32", Uint32: "uint32", Int64: "int64", Uint64: "uint64"}

func (c Class) String() string {
	if s, ok := classNames[c]; ok {
		return s
	}
	return fmt.Sprintf("class(%d)", uint8(c))
}

// IsNumeric reports whether c is one of the numeric classes (double, single, integers).
func (c Class) IsNumeric() bool { return c >= Double && c <= Uint64 }

// Data element types (miTYPE).
const (
	miINT8       = 1
	miUINT8      = 2
	miINT16      = 3
	miUINT16     = 4
	miINT32      = 5
	miUINT32     = 6
	miSINGLE     = 7
	miDOUBLE     = 9
	miINT64      = 12
	miUINT64     = 13
	miMATRIX     = 14
	miCOMPRESSED = 15
	miUTF8       = 16
	miUTF16      = 17
	miUTF32      = 18
)

// Array is a MATLAB array. Element order is MATLAB's column-major order throughout.
type Array struct {
	Name    string
	Class   Class
	Logical bool  // a numeric array saved with the logical flag
	Dims    []int // at least two dimensions

	Numbers []float64  // numeric and logical arrays (integers up to 2^53 are exact)
	Chars   []rune     // char arrays
	Cells   []*Array   // cell arrays
	Fields  []string   // struct arrays: the field names
	Values  [][]*Array // struct arrays: Values[i][f] is field Fields[f] of element i
}

// Len returns the number of elements, the product of the dimensions.
func (a *Array) Len() int {
	n := 1
	for _, d := range a.Dims {
		n *= d
	}
	return n
}

// String returns a char array's text: the characters in column-major order for a row vector,
// the rows joined by newlines (trailing blanks trimmed, as MATLAB's cellstr does) otherwise.
func (a *Array) String() (string, error) {
	if a.Class != Char {
		return "", fmt.Errorf("%s is a %s array, not char", a.label(), a.Class)
	}
	if len(a.Dims) != 2 {
		return "", fmt.Errorf("char array %s has %d dimensions", a.label(), len(a.Dims))
	}
	rows, cols := a.Dims[0], a.Dims[1]
	if rows <= 1 {
		return string(a.Chars), nil
	}
	lines := make([]string, rows)
	for r := range rows {
		line := make([]rune, cols)
		for c := range cols {
			line[c] = a.Chars[c*rows+r]
		}
		lines[r] = strings.TrimRight(string(line), " ")
	}
	return strings.Join(lines, "\n"), nil
}

// Scalar returns the value of a numeric array with exactly one element.
func (a *Array) Scalar() (float64, error) {
	if !a.Class.IsNumeric() {
		return 0, fmt.Errorf("%s is a %s array, not numeric", a.label(), a.Class)
	}
	if len(a.Numbers) != 1 {
		return 0, fmt.Errorf("%s has %d elements (dimensions %v), want a scalar", a.label(), len(a.Numbers), a.Dims)
	}
	return a.Numbers[0], nil
}

// Field returns field name of element i of a struct array.
func (a *Array) Field(i int, name string) (*Array, error) {
	if a.Class != Struct {
		return nil, fmt.Errorf("%s is a %s array, not struct", a.label(), a.Class)
	}
	if i < 0 || i >= len(a.Values) {
		return nil, fmt.Errorf("struct array %s has %d elements, no element %d", a.label(), len(a.Values), i)
	}
	for f, n := range a.Fields {
		if n == name {
			return a.Values[i][f], nil
		}
	}
	return nil, fmt.Errorf("struct array %s has no field %q (fields: %s)", a.label(), name, strings.Join(a.Fields, ", "))
}

func (a *Array) label() string {
	if a.Name == "" {
		return "array"
	}
	return fmt.Sprintf("%q", a.Name)
}

// Read reads all variables of a level-5 MAT-file, keyed by name.
func Read(r io.Reader) (map[string]*Array, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	return Parse(data)
}

// Parse parses the bytes of a level-5 MAT-file; see [Read].
func Parse(data []byte) (map[string]*Array, error) {
	if len(data) < 128 {
		if bytes.HasPrefix(data, []byte("\x89HDF")) {
			return nil, fmt.Errorf("this is an HDF5 (MATLAB v7.3) file; only level-5 MAT-files are supported")
		}
		return nil, fmt.Errorf("not a MAT-file: %d bytes, shorter than the 128-byte header", len(data))
	}
	if (len(data) > 520 && bytes.HasPrefix(data[512:], []byte("\x89HDF"))) || bytes.Contains(data[:116], []byte("MATLAB 7.3")) {
		return nil, fmt.Errorf("this is a MATLAB v7.3 (HDF5) file; only level-5 MAT-files (save -v7) are supported")
	}
	var p parser
	switch string(data[126:128]) {
	case "IM":
		p.order = binary.LittleEndian
	case "MI":
		p.order = binary.BigEndian
	default:
		return nil, fmt.Errorf("not a level-5 MAT-file (header text %q, endian indicator %q)", clip(data[:40]), data[126:128])
	}
	if v := p.order.Uint16(data[124:126]); v != 0x0100 {
		return nil, fmt.Errorf("unsupported MAT-file version 0x%04x", v)
	}
	vars := map[string]*Array{}
	rest := data[128:]
	for len(rest) > 0 {
		typ, body, next, err := p.element(rest)
		if err != nil {
			return nil, fmt.Errorf("MAT-file offset %d: %w", len(data)-len(rest), err)
		}
		if typ == miCOMPRESSED {
			zr, err := zlib.NewReader(bytes.NewReader(body))
			if err != nil {
				return nil, fmt.Errorf("MAT-file offset %d: compressed element: %w", len(data)-len(rest), err)
			}
			inner, err := io.ReadAll(zr)
			if err != nil {
				return nil, fmt.Errorf("MAT-file offset %d: compressed element is corrupt: %w", len(data)-len(rest), err)
			}
			typ, body, _, err = p.element(inner)
			if err != nil {
				return nil, fmt.Errorf("MAT-file offset %d (inside compressed element): %w", len(data)-len(rest), err)
			}
		}
		if typ != miMATRIX {
			return nil, fmt.Errorf("MAT-file offset %d: top-level element of type %d, want a matrix", len(data)-len(rest), typ)
		}
		a, err := p.matrix(body)
		if err != nil {
			return nil, err
		}
		vars[a.Name] = a
		rest = next
	}
	return vars, nil
}

func clip(b []byte) []byte {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return bytes.TrimRight(b, " ")
}

type parser struct {
	order binary.ByteOrder
}

// element splits the first data element off b: its type, its data and what follows it.
func (p *parser) element(b []byte) (typ uint32, body, rest []byte, err error) {
	if len(b) < 8 {
		return 0, nil, nil, fmt.Errorf("truncated element tag (%d bytes left)", len(b))
	}
	first := p.order.Uint32(b)
	if small := first >> 16; small != 0 {
		if small > 4 {
			return 0, nil, nil, fmt.Errorf("small element claims %d bytes", small)
		}
		return first & 0xffff, b[4 : 4+small], b[8:], nil
	}
	n := int(p.order.Uint32(b[4:]))
	if n > len(b)-8 {
		return 0, nil, nil, fmt.Errorf("truncated element: type %d claims %d bytes, %d left", first, n, len(b)-8)
	}
	end := 8 + n
	if first != miCOMPRESSED {
		end = min(len(b), 8+(n+7)/8*8)
	}
	return first, b[8 : 8+n], b[end:], nil
}

func (p *parser) matrix(b []byte) (*Array, error) {
	a := &Array{}
	if len(b) == 0 { // an empty matrix, e.g. an unset cell element
		a.Class, a.Dims = Double, []int{0, 0}
		return a, nil
	}
	typ, flags, b, err := p.element(b)
	if err != nil || typ != miUINT32 || len(flags) != 8 {
		return nil, fmt.Errorf("matrix: bad array-flags subelement (%v)", err)
	}
	a.Class = Class(flags[p.flagByte(0)])
	flagBits := flags[p.flagByte(1)]
	a.Logical = flagBits&0x02 != 0
	if flagBits&0x08 != 0 {
		return nil, fmt.Errorf("matrix: complex arrays are not supported")
	}
	typ, dims, b, err := p.element(b)
	if err != nil || typ != miINT32 || len(dims)%4 != 0 || len(dims) < 8 {
		return nil, fmt.Errorf("matrix: bad dimensions subelement (%v)", err)
	}
	for i := 0; i < len(dims); i += 4 {
		d := int(int32(p.order.Uint32(dims[i:])))
		if d < 0 {
			return nil, fmt.Errorf("matrix: negative dimension %d", d)
		}
		a.Dims = append(a.Dims, d)
	}
	typ, name, b, err := p.element(b)
	if err != nil || (typ != miINT8 && typ != miUINT8) {
		return nil, fmt.Errorf("matrix: bad name subelement (%v)", err)
	}
	a.Name = string(name)
	n := a.Len()
	if n > len(b)*8+64 { // every element needs at least a bit of data; guards allocations
		return nil, fmt.Errorf("matrix %s: %d elements (dimensions %v) cannot fit in %d bytes", a.label(), n, a.Dims, len(b))
	}
	switch {
	case a.Class.IsNumeric():
		typ, data, _, err := p.element(b)
		if err != nil {
			return nil, fmt.Errorf("matrix %s: %w", a.label(), err)
		}
		if a.Numbers, err = p.numbers(typ, data); err != nil {
			return nil, fmt.Errorf("matrix %s: %w", a.label(), err)
		}
		if len(a.Numbers) != n {
			return nil, fmt.Errorf("matrix %s: %d values for dimensions %v", a.label(), len(a.Numbers), a.Dims)
		}
	case a.Class == Char:
		typ, data, _, err := p.element(b)
		if err != nil {
			return nil, fmt.Errorf("char array %s: %w", a.label(), err)
		}
		if a.Chars, err = p.chars(typ, data); err != nil {
			return nil, fmt.Errorf("char array %s: %w", a.label(), err)
		}
		if len(a.Chars) != n {
			return nil, fmt.Errorf("char array %s: %d characters for dimensions %v", a.label(), len(a.Chars), a.Dims)
		}
	case a.Class == Cell:
		a.Cells = make([]*Array, n)
		for i := range n {
			if a.Cells[i], b, err = p.child(b); err != nil {
				return nil, fmt.Errorf("cell array %s element %d: %w", a.label(), i, err)
			}
		}
	case a.Class == Struct:
		typ, lenData, rest, err := p.element(b)
		if err != nil || typ != miINT32 || len(lenData) != 4 {
			return nil, fmt.Errorf("struct %s: bad field-name-length subelement (%v)", a.label(), err)
		}
		fieldLen := int(p.order.Uint32(lenData))
		typ, names, rest, err := p.element(rest)
		if err != nil || typ != miINT8 || fieldLen <= 0 || len(names)%fieldLen != 0 {
			return nil, fmt.Errorf("struct %s: bad field-names subelement (%v)", a.label(), err)
		}
		for i := 0; i < len(names); i += fieldLen {
			a.Fields = append(a.Fields, string(clip(names[i:i+fieldLen])))
		}
		b = rest
		a.Values = make([][]*Array, n)
		for i := range n {
			a.Values[i] = make([]*Array, len(a.Fields))
			for f, field := range a.Fields {
				if a.Values[i][f], b, err = p.child(b); err != nil {
					return nil, fmt.Errorf("struct %s element %d field %q: %w", a.label(), i, field, err)
				}
			}
		}
	default:
		return nil, fmt.Errorf("matrix %s: %s arrays are not supported", a.label(), a.Class)
	}
	return a, nil
}

// child parses the miMATRIX element at the start of b (a cell or struct member).
func (p *parser) child(b []byte) (*Array, []byte, error) {
	typ, body, rest, err := p.element(b)
	if err != nil {
		return nil, nil, err
	}
	if typ != miMATRIX {
		return nil, nil, fmt.Errorf("element of type %d, want a matrix", typ)
	}
	a, err := p.matrix(body)
	return a, rest, err
}

// flagByte returns the index in the array-flags bytes of the flags word's byte k (0 = least
// significant), which depends on the byte order.
func (p *parser) flagByte(k int) int {
	if p.order == binary.LittleEndian {
		return k
	}
	return 3 - k
}

func (p *parser) numbers(typ uint32, b []byte) ([]float64, error) {
	size := map[uint32]int{miINT8: 1, miUINT8: 1, miINT16: 2, miUINT16: 2, miINT32: 4, miUINT32: 4,
		miSINGLE: 4, miDOUBLE: 8, miINT64: 8, miUINT64: 8}[typ]
	if size == 0 {
		return nil, fmt.Errorf("numeric data of element type %d is not supported", typ)
	}
	if len(b)%size != 0 {
		return nil, fmt.Errorf("%d data bytes are not a multiple of the element size %d", len(b), size)
	}
	out := make([]float64, len(b)/size)
	for i := range out {
		e := b[i*size:]
		switch typ {
		case miINT8:
			out[i] = float64(int8(e[0]))
		case miUINT8:
			out[i] = float64(e[0])
		case miINT16:
			out[i] = float64(int16(p.order.Uint16(e)))
		case miUINT16:
			out[i] = float64(p.order.Uint16(e))
		case miINT32:
			out[i] = float64(int32(p.order.Uint32(e)))
		case miUINT32:
			out[i] = float64(p.order.Uint32(e))
		case miSINGLE:
			out[i] = float64(math.Float32frombits(p.order.Uint32(e)))
		case miDOUBLE:
			out[i] = math.Float64frombits(p.order.Uint64(e))
		case miINT64:
			out[i] = float64(int64(p.order.Uint64(e)))
		case miUINT64:
			out[i] = float64(p.order.Uint64(e))
		}
	}
	return out, nil
}

func (p *parser) chars(typ uint32, b []byte) ([]rune, error) {
	switch typ {
	case miUINT8, miINT8:
		r := make([]rune, len(b))
		for i, c := range b {
			r[i] = rune(c)
		}
		return r, nil
	case miUTF8:
		if !utf8.Valid(b) {
			return nil, fmt.Errorf("invalid UTF-8 text")
		}
		return []rune(string(b)), nil
	case miUINT16, miUTF16:
		if len(b)%2 != 0 {
			return nil, fmt.Errorf("odd byte count %d for 16-bit characters", len(b))
		}
		u := make([]uint16, len(b)/2)
		for i := range u {
			u[i] = p.order.Uint16(b[2*i:])
		}
		if typ == miUINT16 { // one code unit per character, as MATLAB stores char
			r := make([]rune, len(u))
			for i, c := range u {
				r[i] = rune(c)
			}
			return r, nil
		}
		return utf16.Decode(u), nil
	case miUTF32, miUINT32, miINT32:
		if len(b)%4 != 0 {
			return nil, fmt.Errorf("byte count %d is not a multiple of 4 for 32-bit characters", len(b))
		}
		r := make([]rune, len(b)/4)
		for i := range r {
			r[i] = rune(p.order.Uint32(b[4*i:]))
		}
		return r, nil
	}
	return nil, fmt.Errorf("character data of element type %d is not supported", typ)
}
