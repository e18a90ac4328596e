package ckptformat

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// zipBytes is an archive as torch.save writes one (a zip of the pickle and
// the tensors' storages), with an optional archive comment.
func zipBytes(t testing.TB, comment string) []byte {
	var b bytes.Buffer
	w := zip.NewWriter(&b)
	for _, name := range []string{"archive/data.pkl", "archive/data/0"} {
		f, _ := w.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Store})
		f.Write(bytes.Repeat([]byte(name), 500))
	}
	w.SetComment(comment)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// safetensorsBytes lays out two tensors of 16 and 8 bytes: 8 bytes of
// header length, the JSON header, then 24 bytes of data.
func safetensorsBytes() []byte {
	hdr := []byte(`{"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},"b":{"dtype":"F32","shape":[2],"data_offsets":[16,24]}}`)
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(hdr)))
	out = append(out, hdr...)
	return append(out, make([]byte, 24)...)
}

func TestCutShort(t *testing.T) {
	dir := t.TempDir()
	z, st := zipBytes(t, ""), safetensorsBytes()
	// Written by torch.save of PyTorch 1.13.1 (Debian bookworm's
	// python3-torch) on 2026-12-01: {"model": {"w": a 2x3 tensor},
	// "step": 7}, in the zip format and the legacy pickle one.
	real, err := os.ReadFile("testdata/torch-1.13.1.pt")
	if err != nil {
		t.Fatal(err)
	}
	legacy, err := os.ReadFile("testdata/torch-1.13.1-legacy.pt")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		data []byte
		want string // "" whole, else a part of the reason
	}{
		{"whole.pt", z, ""},
		{"torch-1.13.1.pt", real, ""},
		{"torch-one-byte-short.pt", real[:len(real)-1], "without the record it ends with"},
		{"torch-half.pt", real[:len(real)/2], "without the record it ends with"},
		{"torch-legacy.pt", legacy, ""},
		{"torch-legacy-half.pt", legacy[:len(legacy)/2], "ends inside its pickles"},
		{"torch-legacy-one-byte-short.pt", legacy[:len(legacy)-1], "whose storages need 397 or more"},
		{"torch-legacy-trailing.pt", append(append([]byte{}, legacy...), 0), ""},
		{"commented.ckpt", zipBytes(t, "a comment"), ""},
		{"one-byte-short.pt", z[:len(z)-1], "without the record it ends with"},
		{"half.pt", z[:len(z)/2], "without the record it ends with"},
		{"no-central-directory.pt", z[:len(z)-22], "without the record it ends with"},
		{"model.safetensors", st, ""},
		{"model-trailing.safetensors", append(append([]byte{}, st...), 0), ""},
		{"short-data.safetensors", st[:len(st)-1], "whose header says"},
		{"short-header.safetensors", st[:20], "shorter than its"},
		{"pickle.pt", append([]byte{0x80, 0x02}, bytes.Repeat([]byte("x"), 100)...), ""}, // legacy torch.save: cannot tell
		{"tiny.bin", []byte("abc"), ""},
		{"weights.safetensors.bin", []byte("\xff\xff\xff\xff\xff\xff\xff\xffrest"), ""}, // not safetensors by name
	} {
		p := filepath.Join(dir, tc.name)
		os.WriteFile(p, tc.data, 0o644)
		got, err := CutShort(p)
		if err != nil || (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: CutShort = %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}

// Legacy torch.save files written by PyTorch 1.13.1 (Debian bookworm's
// python3-torch, 2026-12-01): a model's state dict of 300 tensors (memo
// indices past 255), float16, bfloat16, int64, bool and complex64 tensors,
// and two tensors on one storage. Whole, it is whole; cut anywhere past
// its first 16 bytes (the magic number), it is cut short; bytes flipped at
// random, the reader neither panics nor reads past the file.
func TestLegacyTorchCutShort(t *testing.T) {
	whole, err := os.ReadFile("testdata/torch-1.13.1-legacy-mixed.pt")
	if err != nil {
		t.Fatal(err)
	}
	check := func(data []byte) string {
		t.Helper()
		why, err := legacyCutShort(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		return why
	}
	if why := check(whole); why != "" {
		t.Fatalf("whole file: %q", why)
	}
	// Every cut in the first pickles and the last bytes, and every 31st
	// byte between (a whole walk takes milliseconds).
	for n := 16; n < len(whole); n++ {
		if n > 600 && n < len(whole)-100 && n%31 != 0 {
			continue
		}
		if why := check(whole[:n]); why == "" {
			t.Fatalf("cut to %d of %d bytes: taken as whole", n, len(whole))
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		b := append([]byte{}, whole...)
		for range 1 + rng.IntN(4) {
			b[14+rng.IntN(len(b)-14)] = byte(rng.IntN(256))
		}
		check(b) // must return, whatever it says
	}
	// Through CutShort, from a file.
	p := filepath.Join(t.TempDir(), "ckpt.pt")
	os.WriteFile(p, whole[:len(whole)-3], 0o644)
	if why, err := CutShort(p); err != nil || !strings.Contains(why, "legacy torch.save") {
		t.Errorf("CutShort = %q, %v", why, err)
	}
}

func FuzzCutShort(f *testing.F) {
	f.Add(zipBytes(f, ""), false)
	f.Add(safetensorsBytes(), true)
	f.Add([]byte("PK\x03\x04PK\x05\x06"), false)
	if legacy, err := os.ReadFile("testdata/torch-1.13.1-legacy.pt"); err == nil {
		f.Add(legacy, false)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte, st bool) {
		name := "x.pt"
		if st {
			name = "x.safetensors"
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		CutShort(p) // must not panic, whatever the bytes
	})
}
