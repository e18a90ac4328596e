package supervise

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
)

// PyTorch before 1.6 (and torch.save(..., _use_new_zipfile_serialization=
// False) since) writes the legacy format: five pickles (a magic number,
// the protocol version, system information, the object with each tensor's
// storage as a persistent id ("storage", torch.FloatStorage, key,
// location, numel), and the list of storage keys), then each storage in the
// list's order as an 8-byte little-endian element count and its bytes
// (torch/serialization.py, _legacy_save). Nothing marks the end; the file
// is whole when the storages the pickles promise fill it exactly.

// legacyMagic starts a legacy torch.save file: a pickle's PROTO opcode and
// version, then LONG1 holding 0x1950a86a20f9469cfc6c, torch's MAGIC_NUMBER.
var legacyMagic = []byte{0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19}

// storageBytes is each legacy storage class's element size.
var storageBytes = map[string]int64{
	"DoubleStorage": 8, "FloatStorage": 4, "HalfStorage": 2, "BFloat16Storage": 2,
	"LongStorage": 8, "IntStorage": 4, "ShortStorage": 2, "CharStorage": 1, "ByteStorage": 1, "BoolStorage": 1,
	"ComplexDoubleStorage": 16, "ComplexFloatStorage": 8,
	"QUInt8Storage": 1, "QInt8Storage": 1, "QInt32Storage": 4, "QUInt4x2Storage": 1, "QUInt2x4Storage": 1,
}

// legacyCutShort says why a legacy torch.save file at f (size bytes) is
// cut short, or "" when it is whole or cannot be told: what this reader
// does not follow is taken as whole, as any other format.
func legacyCutShort(f io.ReaderAt, size int64) (string, error) {
	r := &countingReader{r: bufio.NewReader(io.NewSectionReader(f, 0, size))}
	var storages map[string]legacyStorage
	var keys []string
	for i := range 5 {
		p, err := walkPickle(r, size, i == 4)
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return "a legacy torch.save file (before PyTorch 1.6's zip format) that ends inside its pickles: cut short", nil
		}
		if err != nil {
			return "", nil // not a pickle this reader follows
		}
		switch i {
		case 3:
			storages = p.storages
		case 4:
			keys = p.strings
		}
	}
	pos := r.n
	for _, k := range keys {
		s, ok := storages[k]
		if !ok {
			return "", nil
		}
		var hdr [8]byte
		if pos+8 > size {
			return fmt.Sprintf("a legacy torch.save file of %d bytes that ends before storage %s: cut short", size, k), nil
		}
		if _, err := f.ReadAt(hdr[:], pos); err != nil {
			return "", err
		}
		n := int64(binary.LittleEndian.Uint64(hdr[:]))
		if n != s.numel || n < 0 || n > (1<<62)/s.elem {
			return "", nil // not the layout this reader knows
		}
		pos += 8 + n*s.elem
		if pos > size {
			return fmt.Sprintf("a legacy torch.save file of %d bytes whose storages need %d or more: cut short", size, pos), nil
		}
	}
	return "", nil
}

type legacyStorage struct {
	elem, numel int64
}

// pickled is what walkPickle keeps of one pickle: the storages its
// persistent ids name, and the strings it pushes, in order.
type pickled struct {
	storages map[string]legacyStorage
	strings  []string
}

// item is a value on the pickle machine's stack, as far as it matters here.
type item struct {
	kind  byte // 's' string, 'i' int, 'g' global, 't' tuple, 'm' mark, 'o' anything else
	s     string
	i     int64
	items []item
}

type countingReader struct {
	r *bufio.Reader
	n int64
}

func (c *countingReader) ReadByte() (byte, error) {
	b, err := c.r.ReadByte()
	if err == nil {
		c.n++
	}
	return b, err
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

var errPickle = errors.New("not a pickle this reader follows")

// walkPickle runs one pickle up to its STOP on a stack of items, without
// building anything: enough to find where it ends, the storages of
// legacy torch.save's persistent ids, and (with strs) the strings it
// pushes. A file (of size bytes) that ends before the STOP is
// io.ErrUnexpectedEOF.
func walkPickle(r *countingReader, size int64, strs bool) (pickled, error) {
	p := pickled{storages: map[string]legacyStorage{}}
	var stack []item
	var memo []item
	eof := func(err error) error {
		if errors.Is(err, io.EOF) {
			return io.ErrUnexpectedEOF
		}
		return err
	}
	read := func(n int64) ([]byte, error) {
		if n < 0 {
			return nil, errPickle
		}
		if n > size-r.n { // a length past the end: not allocated
			return nil, io.ErrUnexpectedEOF
		}
		b := make([]byte, n)
		_, err := io.ReadFull(r, b)
		return b, eof(err)
	}
	skip := func(n int64) error {
		if n < 0 {
			return errPickle
		}
		if n > size-r.n {
			return io.ErrUnexpectedEOF
		}
		for n > 0 {
			k, err := r.r.Discard(int(min(n, 1<<20)))
			r.n += int64(k)
			n -= int64(k)
			if err != nil {
				return eof(err)
			}
		}
		return nil
	}
	le := func(n int64) (int64, error) { // n <= 8
		var v uint64
		for i := range n {
			c, err := r.ReadByte()
			if err != nil {
				return 0, eof(err)
			}
			v |= uint64(c) << (8 * i)
		}
		return int64(v), nil
	}
	line := func() (string, error) {
		var b bytes.Buffer
		for {
			c, err := r.ReadByte()
			if err != nil {
				return "", eof(err)
			}
			if c == '\n' {
				return b.String(), nil
			}
			if b.Len() > 1<<16 {
				return "", errPickle
			}
			b.WriteByte(c)
		}
	}
	push := func(it item) {
		if strs && it.kind == 's' {
			p.strings = append(p.strings, it.s)
		}
		stack = append(stack, it)
	}
	pop := func(n int) ([]item, error) {
		if len(stack) < n {
			return nil, errPickle
		}
		out := stack[len(stack)-n:]
		stack = stack[:len(stack)-n]
		return out, nil
	}
	// toMark pops to the last MARK; what it returns is valid until the
	// next push.
	toMark := func() ([]item, error) {
		for i := len(stack) - 1; i >= 0; i-- {
			if stack[i].kind == 'm' {
				out := stack[i+1:]
				stack = stack[:i]
				return out, nil
			}
		}
		return nil, errPickle
	}
	other := item{kind: 'o'}
	for {
		op, err := r.ReadByte()
		if err != nil {
			return p, eof(err)
		}
		var n int64
		switch op {
		case '.': // STOP
			if len(stack) != 1 {
				return p, errPickle
			}
			return p, nil
		case 0x80: // PROTO
			err = skip(1)
		case 0x95: // FRAME
			err = skip(8)
		case 'N', 0x88, 0x89, ']', ')', '}', 0x8f, 0x97: // NONE, NEWTRUE, NEWFALSE, EMPTY_LIST/TUPLE/DICT/SET, NEXT_BUFFER
			push(other)
		case 0x98: // READONLY_BUFFER
		case 'K', 'M', 'J': // BININT1, BININT2, BININT
			size := int64(4)
			switch op {
			case 'K':
				size = 1
			case 'M':
				size = 2
			}
			if n, err = le(size); err == nil {
				if op == 'J' {
					n = int64(int32(n))
				}
				push(item{kind: 'i', i: n})
			}
		case 0x8a, 0x8b: // LONG1, LONG4: little-endian two's complement
			size := int64(1)
			if op == 0x8b {
				size = 4
			}
			if n, err = le(size); err == nil {
				var b []byte
				if b, err = read(n); err == nil {
					if len(b) <= 8 {
						var v int64
						for i := len(b) - 1; i >= 0; i-- {
							v = v<<8 | int64(b[i])
						}
						if len(b) > 0 && len(b) < 8 && b[len(b)-1]&0x80 != 0 {
							v -= 1 << (8 * len(b))
						}
						push(item{kind: 'i', i: v})
					} else {
						push(other)
					}
				}
			}
		case 'X', 0x8c, 0x8d, 'T', 'U', 'B', 'C', 0x8e, 0x96: // strings and bytes with a length
			size := int64(4)
			switch op {
			case 0x8c, 'U', 'C':
				size = 1
			case 0x8d, 0x8e, 0x96:
				size = 8
			}
			if n, err = le(size); err == nil {
				if op == 'X' || op == 0x8c || op == 0x8d {
					var b []byte
					if b, err = read(n); err == nil {
						push(item{kind: 's', s: string(b)})
					}
				} else if err = skip(n); err == nil {
					push(other)
				}
			}
		case 'G': // BINFLOAT
			if err = skip(8); err == nil {
				push(other)
			}
		case 'I', 'L', 'S', 'V', 'F', 'P': // INT, LONG, STRING, UNICODE, FLOAT, PERSID: a line
			if _, err = line(); err == nil {
				push(other)
			}
		case 'c', 'i': // GLOBAL, INST: module and name lines
			var mod, name string
			if mod, err = line(); err == nil {
				if name, err = line(); err == nil {
					if op == 'c' {
						push(item{kind: 'g', s: mod + " " + name})
					} else if _, err = toMark(); err == nil {
						push(other)
					}
				}
			}
		case 0x93: // STACK_GLOBAL
			var it []item
			if it, err = pop(2); err == nil {
				push(item{kind: 'g', s: it[0].s + " " + it[1].s})
			}
		case 'a', '0', 'b': // APPEND, POP, BUILD
			_, err = pop(1)
		case 's': // SETITEM
			_, err = pop(2)
		case 'e', 'u', 0x90, '1': // APPENDS, SETITEMS, ADDITEMS, POP_MARK
			_, err = toMark()
		case 'l', 'd', 0x91, 'o': // LIST, DICT, FROZENSET, OBJ
			if _, err = toMark(); err == nil {
				push(other)
			}
		case 't': // TUPLE
			var it []item
			if it, err = toMark(); err == nil {
				push(item{kind: 't', items: append([]item(nil), it...)})
			}
		case 0x85, 0x86, 0x87: // TUPLE1-3
			var it []item
			if it, err = pop(int(op - 0x84)); err == nil {
				push(item{kind: 't', items: append([]item(nil), it...)})
			}
		case '(': // MARK
			stack = append(stack, item{kind: 'm'})
		case '2': // DUP
			if len(stack) == 0 {
				return p, errPickle
			}
			stack = append(stack, stack[len(stack)-1])
		case 'R', 0x81: // REDUCE, NEWOBJ
			if _, err = pop(2); err == nil {
				push(other)
			}
		case 0x92: // NEWOBJ_EX
			if _, err = pop(3); err == nil {
				push(other)
			}
		case 0x82, 0x83, 0x84: // EXT1, EXT2, EXT4
			if err = skip(int64(1) << (op - 0x82)); err == nil {
				push(other)
			}
		case 'h', 'j', 'g': // BINGET, LONG_BINGET, GET
			if n, err = memoIndex(op, le, line); err == nil {
				if n < 0 || n >= int64(len(memo)) || memo[n].kind == 0 {
					return p, errPickle
				}
				stack = append(stack, memo[n]) // a string again is not a new one
			}
		case 'q', 'r', 'p', 0x94: // BINPUT, LONG_BINPUT, PUT, MEMOIZE
			if op == 0x94 {
				n = int64(len(memo))
			} else {
				n, err = memoIndex(op, le, line)
			}
			if err == nil {
				// Python's pickler numbers its memo 0, 1, 2, ...
				if len(stack) == 0 || n < 0 || n > int64(len(memo)) {
					return p, errPickle
				}
				if n == int64(len(memo)) {
					memo = append(memo, item{})
				}
				memo[n] = stack[len(stack)-1]
			}
		case 'Q': // BINPERSID: legacy torch.save's storages
			var it []item
			if it, err = pop(1); err == nil {
				if t := it[0]; t.kind == 't' && len(t.items) >= 5 && t.items[0].kind == 's' && t.items[0].s == "storage" &&
					t.items[1].kind == 'g' && t.items[2].kind == 's' && t.items[4].kind == 'i' {
					class, _ := strings.CutPrefix(t.items[1].s, "torch ")
					if elem, ok := storageBytes[class]; ok {
						p.storages[t.items[2].s] = legacyStorage{elem: elem, numel: t.items[4].i}
					}
				}
				push(other)
			}
		default:
			return p, errPickle
		}
		if err != nil {
			return p, err
		}
	}
}

// memoIndex reads the memo index of a GET or PUT opcode.
func memoIndex(op byte, le func(int64) (int64, error), line func() (string, error)) (int64, error) {
	switch op {
	case 'h', 'q':
		return le(1)
	case 'j', 'r':
		return le(4)
	}
	s, err := line()
	if err != nil {
		return 0, err
	}
	var n int64
	if _, err := fmt.Sscan(s, &n); err != nil {
		return 0, errPickle
	}
	return n, nil
}
