package matfile

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
)

// Write writes vars as an uncompressed little-endian level-5 MAT-file, in order. Numeric arrays
// are stored with their class's element type (double as miDOUBLE, uint8 as miUINT8, …), char
// arrays as 16-bit code units (characters outside the Basic Multilingual Plane are an error).
// Struct field names are at most 31 bytes, as in MATLAB.
func Write(w io.Writer, vars ...*Array) error {
	var buf bytes.Buffer
	header := make([]byte, 128)
	copy(header, "MATLAB 5.0 MAT-file, written by github.com/fgn-paper/fgn/data/fetch/matfile")
	for i := 75; i < 116; i++ {
		header[i] = ' '
	}
	binary.LittleEndian.PutUint16(header[124:], 0x0100)
	copy(header[126:], "IM")
	buf.Write(header)
	for _, v := range vars {
		if v.Name == "" {
			return fmt.Errorf("matfile: top-level variables need a name")
		}
		body, err := encodeMatrix(v)
		if err != nil {
			return fmt.Errorf("matfile: variable %q: %w", v.Name, err)
		}
		putElement(&buf, miMATRIX, body)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// putElement appends a tagged data element padded to 8 bytes.
func putElement(buf *bytes.Buffer, typ uint32, data []byte) {
	var tag [8]byte
	binary.LittleEndian.PutUint32(tag[:], typ)
	binary.LittleEndian.PutUint32(tag[4:], uint32(len(data)))
	buf.Write(tag[:])
	buf.Write(data)
	buf.Write(make([]byte, (8-len(data)%8)%8))
}

var classElement = map[Class]struct {
	typ  uint32
	size int
}{Double: {miDOUBLE, 8}, Single: {miSINGLE, 4}, Int8: {miINT8, 1}, Uint8: {miUINT8, 1}, Int16: {miINT16, 2},
	Uint16: {miUINT16, 2}, Int32: {miINT32, 4}, Uint32: {miUINT32, 4}, Int64: {miINT64, 8}, Uint64: {miUINT64, 8}}

func encodeMatrix(a *Array) ([]byte, error) {
	if len(a.Dims) < 2 {
		return nil, fmt.Errorf("needs at least two dimensions, has %v", a.Dims)
	}
	n := a.Len()
	var buf bytes.Buffer
	flags := make([]byte, 8)
	flags[0] = byte(a.Class)
	if a.Logical {
		flags[1] = 0x02
	}
	putElement(&buf, miUINT32, flags)
	dims := make([]byte, 4*len(a.Dims))
	for i, d := range a.Dims {
		binary.LittleEndian.PutUint32(dims[4*i:], uint32(d))
	}
	putElement(&buf, miINT32, dims)
	putElement(&buf, miINT8, []byte(a.Name))
	switch {
	case a.Class.IsNumeric():
		if len(a.Numbers) != n {
			return nil, fmt.Errorf("%d numbers for dimensions %v", len(a.Numbers), a.Dims)
		}
		e := classElement[a.Class]
		data := make([]byte, n*e.size)
		for i, v := range a.Numbers {
			d := data[i*e.size:]
			switch e.typ {
			case miDOUBLE:
				binary.LittleEndian.PutUint64(d, math.Float64bits(v))
			case miSINGLE:
				binary.LittleEndian.PutUint32(d, math.Float32bits(float32(v)))
			case miINT8, miUINT8:
				d[0] = byte(int64(v))
			case miINT16, miUINT16:
				binary.LittleEndian.PutUint16(d, uint16(int64(v)))
			case miINT32, miUINT32:
				binary.LittleEndian.PutUint32(d, uint32(int64(v)))
			case miINT64:
				binary.LittleEndian.PutUint64(d, uint64(int64(v)))
			case miUINT64:
				binary.LittleEndian.PutUint64(d, uint64(v))
			}
		}
		putElement(&buf, e.typ, data)
	case a.Class == Char:
		if len(a.Chars) != n {
			return nil, fmt.Errorf("%d characters for dimensions %v", len(a.Chars), a.Dims)
		}
		data := make([]byte, 2*n)
		for i, r := range a.Chars {
			if r < 0 || r > 0xffff {
				return nil, fmt.Errorf("character %U is outside the Basic Multilingual Plane", r)
			}
			binary.LittleEndian.PutUint16(data[2*i:], uint16(r))
		}
		putElement(&buf, miUINT16, data)
	case a.Class == Cell:
		if len(a.Cells) != n {
			return nil, fmt.Errorf("%d cells for dimensions %v", len(a.Cells), a.Dims)
		}
		for i, c := range a.Cells {
			body, err := encodeMatrix(c)
			if err != nil {
				return nil, fmt.Errorf("cell %d: %w", i, err)
			}
			putElement(&buf, miMATRIX, body)
		}
	case a.Class == Struct:
		if len(a.Values) != n {
			return nil, fmt.Errorf("%d struct elements for dimensions %v", len(a.Values), a.Dims)
		}
		const fieldLen = 32
		var lenData [4]byte
		binary.LittleEndian.PutUint32(lenData[:], fieldLen)
		// The field-name length is written as a small element, as MATLAB does.
		var tag [8]byte
		binary.LittleEndian.PutUint32(tag[:], 4<<16|miINT32)
		copy(tag[4:], lenData[:])
		buf.Write(tag[:])
		names := make([]byte, fieldLen*len(a.Fields))
		for f, name := range a.Fields {
			if len(name) == 0 || len(name) >= fieldLen {
				return nil, fmt.Errorf("field name %q must have 1 to %d bytes", name, fieldLen-1)
			}
			copy(names[f*fieldLen:], name)
		}
		putElement(&buf, miINT8, names)
		for i, elem := range a.Values {
			if len(elem) != len(a.Fields) {
				return nil, fmt.Errorf("struct element %d has %d values for %d fields", i, len(elem), len(a.Fields))
			}
			for f, v := range elem {
				body, err := encodeMatrix(v)
				if err != nil {
					return nil, fmt.Errorf("struct element %d field %q: %w", i, a.Fields[f], err)
				}
				putElement(&buf, miMATRIX, body)
			}
		}
	default:
		return nil, fmt.Errorf("%s arrays cannot be written", a.Class)
	}
	return buf.Bytes(), nil
}
