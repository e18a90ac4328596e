// Package ckptformat tells, from the few bytes that say so, whether a
// checkpoint file in one of the formats checkpoints are mostly saved in is
// whole or was cut short by a crash.
package ckptformat

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
)

// A file written in place, closed by a crash and then quiet, looks whole
// by every outside sign. The formats checkpoints are mostly saved in tell
// on themselves, though: torch.save's (a zip archive since PyTorch 1.6,
// also Lightning's .ckpt and NumPy's .npz) ends with the zip's end of
// central directory record, written last; a safetensors file states in its
// header how long its data is; torch.save's legacy format promises its
// storages' sizes in its pickles (legacy.go). CutShort reads those few
// bytes and says why the file at path is cut short, or "" when it is whole
// or of another format (taken as whole).
func CutShort(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", err
	}
	size := st.Size()
	head := make([]byte, 16)
	n, _ := io.ReadFull(f, head)
	if n < 8 {
		return "", nil // too short to be any of them
	}
	head = head[:n]
	switch {
	case bytes.HasPrefix(head, []byte("PK\x03\x04")):
		return zipCutShort(f, size)
	case head[0] == 0x80 && head[1] >= 2 && head[1] <= 5 && bytes.HasPrefix(head[2:], legacyMagic):
		return legacyCutShort(f, size)
	case strings.HasSuffix(strings.ToLower(path), ".safetensors"):
		return safetensorsCutShort(f, size, binary.LittleEndian.Uint64(head))
	}
	return "", nil
}

// zipCutShort looks for the end of central directory record (22 bytes and
// a comment of up to 65535) at the end of the file.
func zipCutShort(f *os.File, size int64) (string, error) {
	const eocd, maxTail = 22, 22 + 65535
	// Without a comment (torch.save writes none) the record is the last
	// 22 bytes: one small read decides.
	last := make([]byte, eocd)
	if size >= eocd {
		if _, err := f.ReadAt(last, size-eocd); err != nil {
			return "", err
		}
		if bytes.HasPrefix(last, []byte("PK\x05\x06")) && last[20] == 0 && last[21] == 0 {
			return "", nil
		}
	}
	n := min(size, maxTail)
	tail := make([]byte, n)
	if _, err := f.ReadAt(tail, size-n); err != nil {
		return "", err
	}
	for i := len(tail) - eocd; i >= 0; i-- {
		if bytes.Equal(tail[i:i+4], []byte("PK\x05\x06")) && i+eocd+int(binary.LittleEndian.Uint16(tail[i+20:])) == len(tail) {
			return "", nil
		}
	}
	return "a zip archive (torch.save's format) without the record it ends with: cut short", nil
}

// safetensorsCutShort: 8 bytes of header length, the JSON header, then the
// data, whose extent is the largest end of the tensors' data_offsets.
func safetensorsCutShort(f *os.File, size int64, n uint64) (string, error) {
	if n > 100<<20 {
		return "", nil // not a header safetensors would write: another format
	}
	if 8+int64(n) > size {
		return fmt.Sprintf("a safetensors file shorter than its %d-byte header: cut short", n), nil
	}
	hdr := make([]byte, n)
	if _, err := f.ReadAt(hdr, 8); err != nil {
		return "", err
	}
	var tensors map[string]json.RawMessage
	if json.Unmarshal(hdr, &tensors) != nil {
		return "", nil
	}
	var end uint64
	for name, raw := range tensors {
		if name == "__metadata__" {
			continue
		}
		var t struct {
			DataOffsets []uint64 `json:"data_offsets"`
		}
		if json.Unmarshal(raw, &t) == nil && len(t.DataOffsets) == 2 {
			end = max(end, t.DataOffsets[1])
		}
	}
	if want := 8 + n + end; uint64(size) < want {
		return fmt.Sprintf("a safetensors file of %d bytes whose header says %d: cut short", size, want), nil
	}
	return "", nil
}
