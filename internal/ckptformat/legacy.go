package ckptformat

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/gpurent/gpurent/internal/i18n"
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

var errPickle = i18n.Errorf("not a pickle this reader follows")

// walkPickle runs one pickle up to its STOP on a stack of items, without
// building anything: enough to find where it ends, the storages of
// legacy torch.save's persistent ids, and (with strs) the strings it
// pushes. A file (of size bytes) that ends before the STOP is
// io.ErrUnexpectedEOF.
func walkPickle(r *countingReader, size int64, strs bool) (pickled, error) {
	m := &machine{r: r, size: size, strs: strs, p: pickled{storages: map[string]legacyStorage{}}}
	for {
		op, err := r.ReadByte()
		if err != nil {
			return m.p, eof(err)
		}
		stop, err := m.step(op)
		if err != nil || stop {
			return m.p, err
		}
	}
}

// machine is the pickle machine walkPickle runs: its input, its stack and
// memo, and what it keeps of the pickle.
type machine struct {
	r     *countingReader
	size  int64
	strs  bool
	p     pickled
	stack []item
	memo  []item
}

// eof turns the end of the file inside a pickle into ErrUnexpectedEOF.
func eof(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// read reads n bytes; a length past the end of the file is not allocated.
func (m *machine) read(n int64) ([]byte, error) {
	if n < 0 {
		return nil, errPickle
	}
	if n > m.size-m.r.n {
		return nil, io.ErrUnexpectedEOF
	}
	b := make([]byte, n)
	_, err := io.ReadFull(m.r, b)
	return b, eof(err)
}

func (m *machine) skip(n int64) error {
	if n < 0 {
		return errPickle
	}
	if n > m.size-m.r.n {
		return io.ErrUnexpectedEOF
	}
	for n > 0 {
		k, err := m.r.r.Discard(int(min(n, 1<<20)))
		m.r.n += int64(k)
		n -= int64(k)
		if err != nil {
			return eof(err)
		}
	}
	return nil
}

// le reads an n-byte (n <= 8) little-endian number.
func (m *machine) le(n int64) (int64, error) {
	var v uint64
	for i := range n {
		c, err := m.r.ReadByte()
		if err != nil {
			return 0, eof(err)
		}
		v |= uint64(c) << (8 * i)
	}
	return int64(v), nil
}

func (m *machine) line() (string, error) {
	var b bytes.Buffer
	for {
		c, err := m.r.ReadByte()
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

func (m *machine) push(it item) {
	if m.strs && it.kind == 's' {
		m.p.strings = append(m.p.strings, it.s)
	}
	m.stack = append(m.stack, it)
}

func (m *machine) pop(n int) ([]item, error) {
	if len(m.stack) < n {
		return nil, errPickle
	}
	out := m.stack[len(m.stack)-n:]
	m.stack = m.stack[:len(m.stack)-n]
	return out, nil
}

// toMark pops to the last MARK; what it returns is valid until the next
// push.
func (m *machine) toMark() ([]item, error) {
	for i := len(m.stack) - 1; i >= 0; i-- {
		if m.stack[i].kind == 'm' {
			out := m.stack[i+1:]
			m.stack = m.stack[:i]
			return out, nil
		}
	}
	return nil, errPickle
}

// step runs one opcode; stop is its STOP.
func (m *machine) step(op byte) (stop bool, err error) {
	other := item{kind: 'o'}
	var n int64
	switch op {
	case '.': // STOP
		if len(m.stack) != 1 {
			return false, errPickle
		}
		return true, nil
	case 0x80: // PROTO
		err = m.skip(1)
	case 0x95: // FRAME
		err = m.skip(8)
	case 'N', 0x88, 0x89, ']', ')', '}', 0x8f, 0x97: // NONE, NEWTRUE, NEWFALSE, EMPTY_LIST/TUPLE/DICT/SET, NEXT_BUFFER
		m.push(other)
	case 0x98: // READONLY_BUFFER
	case 'K', 'M', 'J': // BININT1, BININT2, BININT
		size := int64(4)
		switch op {
		case 'K':
			size = 1
		case 'M':
			size = 2
		}
		if n, err = m.le(size); err == nil {
			if op == 'J' {
				n = int64(int32(n))
			}
			m.push(item{kind: 'i', i: n})
		}
	case 0x8a, 0x8b: // LONG1, LONG4: little-endian two's complement
		size := int64(1)
		if op == 0x8b {
			size = 4
		}
		if n, err = m.le(size); err == nil {
			var b []byte
			if b, err = m.read(n); err == nil {
				if len(b) <= 8 {
					var v int64
					for i := len(b) - 1; i >= 0; i-- {
						v = v<<8 | int64(b[i])
					}
					if len(b) > 0 && len(b) < 8 && b[len(b)-1]&0x80 != 0 {
						v -= 1 << (8 * len(b))
					}
					m.push(item{kind: 'i', i: v})
				} else {
					m.push(other)
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
		if n, err = m.le(size); err == nil {
			if op == 'X' || op == 0x8c || op == 0x8d {
				var b []byte
				if b, err = m.read(n); err == nil {
					m.push(item{kind: 's', s: string(b)})
				}
			} else if err = m.skip(n); err == nil {
				m.push(other)
			}
		}
	case 'G': // BINFLOAT
		if err = m.skip(8); err == nil {
			m.push(other)
		}
	case 'I', 'L', 'S', 'V', 'F', 'P': // INT, LONG, STRING, UNICODE, FLOAT, PERSID: a line
		if _, err = m.line(); err == nil {
			m.push(other)
		}
	case 'c', 'i': // GLOBAL, INST: module and name lines
		var mod, name string
		if mod, err = m.line(); err == nil {
			if name, err = m.line(); err == nil {
				if op == 'c' {
					m.push(item{kind: 'g', s: mod + " " + name})
				} else if _, err = m.toMark(); err == nil {
					m.push(other)
				}
			}
		}
	case 0x93: // STACK_GLOBAL
		var it []item
		if it, err = m.pop(2); err == nil {
			m.push(item{kind: 'g', s: it[0].s + " " + it[1].s})
		}
	case 'a', '0', 'b': // APPEND, POP, BUILD
		_, err = m.pop(1)
	case 's': // SETITEM
		_, err = m.pop(2)
	case 'e', 'u', 0x90, '1': // APPENDS, SETITEMS, ADDITEMS, POP_MARK
		_, err = m.toMark()
	case 'l', 'd', 0x91, 'o': // LIST, DICT, FROZENSET, OBJ
		if _, err = m.toMark(); err == nil {
			m.push(other)
		}
	case 't': // TUPLE
		var it []item
		if it, err = m.toMark(); err == nil {
			m.push(item{kind: 't', items: append([]item(nil), it...)})
		}
	case 0x85, 0x86, 0x87: // TUPLE1-3
		var it []item
		if it, err = m.pop(int(op - 0x84)); err == nil {
			m.push(item{kind: 't', items: append([]item(nil), it...)})
		}
	case '(': // MARK
		m.stack = append(m.stack, item{kind: 'm'})
	case '2': // DUP
		if len(m.stack) == 0 {
			return false, errPickle
		}
		m.stack = append(m.stack, m.stack[len(m.stack)-1])
	case 'R', 0x81: // REDUCE, NEWOBJ
		if _, err = m.pop(2); err == nil {
			m.push(other)
		}
	case 0x92: // NEWOBJ_EX
		if _, err = m.pop(3); err == nil {
			m.push(other)
		}
	case 0x82, 0x83, 0x84: // EXT1, EXT2, EXT4
		if err = m.skip(int64(1) << (op - 0x82)); err == nil {
			m.push(other)
		}
	case 'h', 'j', 'g': // BINGET, LONG_BINGET, GET
		if n, err = m.memoIndex(op); err == nil {
			if n < 0 || n >= int64(len(m.memo)) || m.memo[n].kind == 0 {
				return false, errPickle
			}
			m.stack = append(m.stack, m.memo[n]) // a string again is not a new one
		}
	case 'q', 'r', 'p', 0x94: // BINPUT, LONG_BINPUT, PUT, MEMOIZE
		if op == 0x94 {
			n = int64(len(m.memo))
		} else {
			n, err = m.memoIndex(op)
		}
		if err == nil {
			// Python's pickler numbers its m.memo 0, 1, 2, ...
			if len(m.stack) == 0 || n < 0 || n > int64(len(m.memo)) {
				return false, errPickle
			}
			if n == int64(len(m.memo)) {
				m.memo = append(m.memo, item{})
			}
			m.memo[n] = m.stack[len(m.stack)-1]
		}
	case 'Q': // BINPERSID: legacy torch.save's storages
		var it []item
		if it, err = m.pop(1); err == nil {
			if t := it[0]; t.kind == 't' && len(t.items) >= 5 && t.items[0].kind == 's' && t.items[0].s == "storage" &&
				t.items[1].kind == 'g' && t.items[2].kind == 's' && t.items[4].kind == 'i' {
				class, _ := strings.CutPrefix(t.items[1].s, "torch ")
				if elem, ok := storageBytes[class]; ok {
					m.p.storages[t.items[2].s] = legacyStorage{elem: elem, numel: t.items[4].i}
				}
			}
			m.push(other)
		}
	default:
		return false, errPickle
	}
	return false, err
}

// memoIndex reads the memo index of a GET or PUT opcode.
func (m *machine) memoIndex(op byte) (int64, error) {
	switch op {
	case 'h', 'q':
		return m.le(1)
	case 'j', 'r':
		return m.le(4)
	}
	s, err := m.line()
	if err != nil {
		return 0, err
	}
	var n int64
	if _, err := fmt.Sscan(s, &n); err != nil {
		return 0, errPickle
	}
	return n, nil
}
