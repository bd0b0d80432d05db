package resnet

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"path"
	"strings"
)

// ReadPyTorch reads a state dict saved by torch.save in the zip format (PyTorch ≥ 1.6; the
// format of torchvision's .pth files): <prefix>/data.pkl is a pickle of an OrderedDict whose
// values are tensors rebuilt by torch._utils._rebuild_tensor_v2 from storages that are
// persistent references to the files <prefix>/data/<key> (raw little-endian values). Only the
// pickle opcodes and globals that state dicts use are supported; anything else (arbitrary
// Python objects) is an error, so loading never executes code.
func ReadPyTorch(data []byte) (Weights, error) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, fmt.Errorf("reading PyTorch zip archive: %w", err)
	}
	files := map[string]*zip.File{}
	var pkl *zip.File
	for _, f := range zr.File {
		files[f.Name] = f
		if path.Base(f.Name) == "data.pkl" && strings.Count(f.Name, "/") == 1 {
			pkl = f
		}
	}
	if pkl == nil {
		return nil, fmt.Errorf("PyTorch archive has no <name>/data.pkl")
	}
	prefix := path.Dir(pkl.Name)
	if bo, ok := files[prefix+"/byteorder"]; ok {
		b, err := readZip(bo)
		if err != nil {
			return nil, err
		}
		if s := strings.TrimSpace(string(b)); s != "little" {
			return nil, fmt.Errorf("PyTorch archive has byte order %q; only little-endian is supported", s)
		}
	}
	code, err := readZip(pkl)
	if err != nil {
		return nil, err
	}
	u := &unpickler{code: code, memo: map[int]any{}, storage: func(key string) ([]byte, error) {
		f, ok := files[prefix+"/data/"+key]
		if !ok {
			return nil, fmt.Errorf("storage %q is missing from the archive", key)
		}
		return readZip(f)
	}}
	v, err := u.run()
	if err != nil {
		return nil, fmt.Errorf("PyTorch pickle: %w", err)
	}
	d, ok := v.(*pyDict)
	if !ok {
		return nil, fmt.Errorf("PyTorch pickle holds a %T, want a state dict", v)
	}
	w := Weights{}
	for i, k := range d.keys {
		name, ok := k.(string)
		if !ok {
			return nil, fmt.Errorf("state dict key %v is not a string", k)
		}
		t, ok := d.values[i].(*Tensor)
		if !ok {
			return nil, fmt.Errorf("state dict entry %q is a %T, not a tensor", name, d.values[i])
		}
		w[name] = t
	}
	return w, nil
}

func readZip(f *zip.File) ([]byte, error) {
	r, err := f.Open()
	if err != nil {
		return nil, fmt.Errorf("archive member %s: %w", f.Name, err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("archive member %s: %w", f.Name, err)
	}
	return b, nil
}

type pyGlobal struct{ module, name string }

type pyDict struct {
	keys, values []any
}

type pyMark struct{}

// storageRef is a persistent reference to a typed storage file.
type storageRef struct {
	dtype string // safetensors-style dtype name
	key   string
}

type unpickler struct {
	code    []byte
	pos     int
	stack   []any
	memo    map[int]any
	storage func(key string) ([]byte, error)
	loaded  map[string][]float32
}

var storageDTypes = map[string]string{"FloatStorage": "F32", "DoubleStorage": "F64", "HalfStorage": "F16",
	"BFloat16Storage": "BF16", "LongStorage": "I64", "IntStorage": "I32"}

func (u *unpickler) read(n int) ([]byte, error) {
	if u.pos+n > len(u.code) {
		return nil, fmt.Errorf("truncated pickle")
	}
	b := u.code[u.pos : u.pos+n]
	u.pos += n
	return b, nil
}

func (u *unpickler) pop() (any, error) {
	if len(u.stack) == 0 {
		return nil, fmt.Errorf("stack underflow at byte %d", u.pos)
	}
	v := u.stack[len(u.stack)-1]
	u.stack = u.stack[:len(u.stack)-1]
	return v, nil
}

// popMark pops everything down to the topmost mark.
func (u *unpickler) popMark() ([]any, error) {
	for i := len(u.stack) - 1; i >= 0; i-- {
		if _, ok := u.stack[i].(pyMark); ok {
			items := append([]any(nil), u.stack[i+1:]...)
			u.stack = u.stack[:i]
			return items, nil
		}
	}
	return nil, fmt.Errorf("no mark on the stack at byte %d", u.pos)
}

func (u *unpickler) run() (any, error) {
	for {
		b, err := u.read(1)
		if err != nil {
			return nil, err
		}
		op := b[0]
		switch op {
		case 0x80: // PROTO
			_, err = u.read(1)
		case 0x95: // FRAME
			_, err = u.read(8)
		case '.': // STOP
			return u.pop()
		case '(': // MARK
			u.stack = append(u.stack, pyMark{})
		case ')': // EMPTY_TUPLE
			u.stack = append(u.stack, []any{})
		case '}': // EMPTY_DICT
			u.stack = append(u.stack, &pyDict{})
		case ']': // EMPTY_LIST
			u.stack = append(u.stack, &[]any{})
		case 'N':
			u.stack = append(u.stack, nil)
		case 0x88, 0x89: // NEWTRUE, NEWFALSE
			u.stack = append(u.stack, op == 0x88)
		case 'K', 'M', 'J': // BININT1, BININT2, BININT
			n := map[byte]int{'K': 1, 'M': 2, 'J': 4}[op]
			var v []byte
			if v, err = u.read(n); err == nil {
				var x int64
				switch n {
				case 1:
					x = int64(v[0])
				case 2:
					x = int64(binary.LittleEndian.Uint16(v))
				case 4:
					x = int64(int32(binary.LittleEndian.Uint32(v)))
				}
				u.stack = append(u.stack, x)
			}
		case 0x8a: // LONG1
			var n, v []byte
			if n, err = u.read(1); err == nil {
				if v, err = u.read(int(n[0])); err == nil {
					if len(v) > 8 {
						return nil, fmt.Errorf("integer of %d bytes is too large", len(v))
					}
					var x int64
					for i := len(v) - 1; i >= 0; i-- {
						x = x<<8 | int64(v[i])
					}
					if len(v) > 0 && len(v) < 8 && v[len(v)-1]&0x80 != 0 {
						x -= 1 << (8 * len(v))
					}
					u.stack = append(u.stack, x)
				}
			}
		case 'G': // BINFLOAT (big-endian)
			var v []byte
			if v, err = u.read(8); err == nil {
				u.stack = append(u.stack, math.Float64frombits(binary.BigEndian.Uint64(v)))
			}
		case 'X', 0x8c, 'T', 'U', 'B', 'C': // BINUNICODE, SHORT_BINUNICODE, BINSTRING, SHORT_BINSTRING, BINBYTES, SHORT_BINBYTES
			short := op == 0x8c || op == 'U' || op == 'C'
			var n int
			if short {
				var l []byte
				if l, err = u.read(1); err == nil {
					n = int(l[0])
				}
			} else {
				var l []byte
				if l, err = u.read(4); err == nil {
					n = int(binary.LittleEndian.Uint32(l))
				}
			}
			var v []byte
			if err == nil {
				if v, err = u.read(n); err == nil {
					u.stack = append(u.stack, string(v))
				}
			}
		case 'c': // GLOBAL: module\nname\n
			var mod, name string
			if mod, err = u.line(); err == nil {
				if name, err = u.line(); err == nil {
					u.stack = append(u.stack, pyGlobal{mod, name})
				}
			}
		case 0x93: // STACK_GLOBAL
			var name, mod any
			if name, err = u.pop(); err == nil {
				if mod, err = u.pop(); err == nil {
					m, ok1 := mod.(string)
					n, ok2 := name.(string)
					if !ok1 || !ok2 {
						return nil, fmt.Errorf("STACK_GLOBAL of non-strings")
					}
					u.stack = append(u.stack, pyGlobal{m, n})
				}
			}
		case 't': // TUPLE
			var items []any
			if items, err = u.popMark(); err == nil {
				u.stack = append(u.stack, items)
			}
		case 0x85, 0x86, 0x87: // TUPLE1..3
			n := int(op - 0x84)
			if len(u.stack) < n {
				return nil, fmt.Errorf("stack underflow at byte %d", u.pos)
			}
			items := append([]any(nil), u.stack[len(u.stack)-n:]...)
			u.stack = append(u.stack[:len(u.stack)-n], items)
		case 'a': // APPEND
			var v any
			if v, err = u.pop(); err == nil {
				l, ok := u.stack[len(u.stack)-1].(*[]any)
				if !ok {
					return nil, fmt.Errorf("APPEND to a non-list")
				}
				*l = append(*l, v)
			}
		case 'e': // APPENDS
			var items []any
			if items, err = u.popMark(); err == nil {
				l, ok := u.top().(*[]any)
				if !ok {
					return nil, fmt.Errorf("APPENDS to a non-list")
				}
				*l = append(*l, items...)
			}
		case 's', 'u': // SETITEM, SETITEMS
			var items []any
			if op == 's' {
				if len(u.stack) < 2 {
					return nil, fmt.Errorf("stack underflow at byte %d", u.pos)
				}
				items = append([]any(nil), u.stack[len(u.stack)-2:]...)
				u.stack = u.stack[:len(u.stack)-2]
			} else if items, err = u.popMark(); err != nil {
				return nil, err
			}
			d, ok := u.top().(*pyDict)
			if !ok || len(items)%2 != 0 {
				return nil, fmt.Errorf("SETITEM(S) on a %T", u.top())
			}
			for i := 0; i < len(items); i += 2 {
				d.keys, d.values = append(d.keys, items[i]), append(d.values, items[i+1])
			}
		case 'b': // BUILD: set an object's state; OrderedDict's state (the _metadata attribute) is dropped
			_, err = u.pop()
		case 'q', 'r', 0x94: // BINPUT, LONG_BINPUT, MEMOIZE
			var idx int
			switch op {
			case 'q':
				var v []byte
				v, err = u.read(1)
				if err == nil {
					idx = int(v[0])
				}
			case 'r':
				var v []byte
				v, err = u.read(4)
				if err == nil {
					idx = int(binary.LittleEndian.Uint32(v))
				}
			default:
				idx = len(u.memo)
			}
			if err == nil {
				u.memo[idx] = u.top()
			}
		case 'h', 'j': // BINGET, LONG_BINGET
			var idx int
			if op == 'h' {
				var v []byte
				if v, err = u.read(1); err == nil {
					idx = int(v[0])
				}
			} else {
				var v []byte
				if v, err = u.read(4); err == nil {
					idx = int(binary.LittleEndian.Uint32(v))
				}
			}
			if err == nil {
				v, ok := u.memo[idx]
				if !ok {
					return nil, fmt.Errorf("memo %d is unset", idx)
				}
				u.stack = append(u.stack, v)
			}
		case '0': // POP
			_, err = u.pop()
		case 'Q': // BINPERSID
			var pid any
			if pid, err = u.pop(); err == nil {
				var ref *storageRef
				if ref, err = persistentStorage(pid); err == nil {
					u.stack = append(u.stack, ref)
				}
			}
		case 'R': // REDUCE
			var args, fn any
			if args, err = u.pop(); err == nil {
				if fn, err = u.pop(); err == nil {
					var v any
					if v, err = u.reduce(fn, args); err == nil {
						u.stack = append(u.stack, v)
					}
				}
			}
		default:
			return nil, fmt.Errorf("unsupported pickle opcode 0x%02x at byte %d", op, u.pos-1)
		}
		if err != nil {
			return nil, err
		}
	}
}

func (u *unpickler) top() any {
	if len(u.stack) == 0 {
		return nil
	}
	return u.stack[len(u.stack)-1]
}

func (u *unpickler) line() (string, error) {
	i := bytes.IndexByte(u.code[u.pos:], '\n')
	if i < 0 {
		return "", fmt.Errorf("truncated pickle")
	}
	s := string(u.code[u.pos : u.pos+i])
	u.pos += i + 1
	return s, nil
}

// persistentStorage interprets a persistent id ('storage', <StorageType>, key, location, numel).
func persistentStorage(pid any) (*storageRef, error) {
	t, ok := pid.([]any)
	if !ok || len(t) < 3 || t[0] != "storage" {
		return nil, fmt.Errorf("unsupported persistent id %v", pid)
	}
	g, ok := t[1].(pyGlobal)
	key, ok2 := t[2].(string)
	if !ok || !ok2 || g.module != "torch" {
		return nil, fmt.Errorf("unsupported storage reference %v", pid)
	}
	dtype, ok := storageDTypes[g.name]
	if !ok {
		return nil, fmt.Errorf("unsupported storage type torch.%s", g.name)
	}
	return &storageRef{dtype: dtype, key: key}, nil
}

func (u *unpickler) reduce(fn, args any) (any, error) {
	g, ok := fn.(pyGlobal)
	a, ok2 := args.([]any)
	if !ok || !ok2 {
		return nil, fmt.Errorf("REDUCE of %v with %v", fn, args)
	}
	switch g.module + "." + g.name {
	case "collections.OrderedDict":
		return &pyDict{}, nil
	case "torch._utils._rebuild_parameter": // (data, requires_grad, backward_hooks)
		if len(a) < 1 {
			return nil, fmt.Errorf("_rebuild_parameter without data")
		}
		return a[0], nil
	case "torch._utils._rebuild_tensor_v2": // (storage, offset, size, stride, requires_grad, hooks[, metadata])
		if len(a) < 4 {
			return nil, fmt.Errorf("_rebuild_tensor_v2 with %d arguments", len(a))
		}
		ref, ok := a[0].(*storageRef)
		offset, ok2 := a[1].(int64)
		size, ok3 := ints(a[2])
		stride, ok4 := ints(a[3])
		if !ok || !ok2 || !ok3 || !ok4 || len(size) != len(stride) {
			return nil, fmt.Errorf("_rebuild_tensor_v2 with arguments %v", a[:4])
		}
		return u.tensor(ref, int(offset), size, stride)
	}
	return nil, fmt.Errorf("unsupported Python callable %s.%s in the pickle (only state dicts of tensors are read)", g.module, g.name)
}

func ints(v any) ([]int, bool) {
	t, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]int, len(t))
	for i, x := range t {
		n, ok := x.(int64)
		if !ok || n < 0 {
			return nil, false
		}
		out[i] = int(n)
	}
	return out, true
}

// tensor gathers a strided view of a storage into a row-major tensor.
func (u *unpickler) tensor(ref *storageRef, offset int, size, stride []int) (*Tensor, error) {
	if u.loaded == nil {
		u.loaded = map[string][]float32{}
	}
	vals, ok := u.loaded[ref.key]
	if !ok {
		raw, err := u.storage(ref.key)
		if err != nil {
			return nil, err
		}
		if len(raw)%dtypeSize(ref.dtype) != 0 {
			return nil, fmt.Errorf("storage %q has %d bytes, not a whole number of %s values", ref.key, len(raw), ref.dtype)
		}
		if vals, err = decode(ref.dtype, raw); err != nil {
			return nil, err
		}
		u.loaded[ref.key] = vals
	}
	count := 1
	last := offset // the largest storage index the view touches
	for i, s := range size {
		count *= s
		if s > 0 {
			last += (s - 1) * stride[i]
		}
	}
	if count > 0 && (offset < 0 || last >= len(vals)) {
		return nil, fmt.Errorf("tensor view (offset %d, size %v, stride %v) exceeds storage %q of %d values", offset, size, stride, ref.key, len(vals))
	}
	t := &Tensor{Shape: size, Data: make([]float32, count)}
	idx := make([]int, len(size))
	for i := range count {
		pos := offset
		for d, k := range idx {
			pos += k * stride[d]
		}
		t.Data[i] = vals[pos]
		for d := len(idx) - 1; d >= 0; d-- {
			idx[d]++
			if idx[d] < size[d] {
				break
			}
			idx[d] = 0
		}
	}
	return t, nil
}
