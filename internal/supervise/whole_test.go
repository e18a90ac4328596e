//go:build unix

package supervise

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
		got, err := cutShort(p)
		if err != nil || (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: cutShort = %q, %v; want %q", tc.name, got, err, tc.want)
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
	// Through cutShort, from a file.
	p := filepath.Join(t.TempDir(), "ckpt.pt")
	os.WriteFile(p, whole[:len(whole)-3], 0o644)
	if why, err := cutShort(p); err != nil || !strings.Contains(why, "legacy torch.save") {
		t.Errorf("cutShort = %q, %v", why, err)
	}
}

// A torch.save file that a crash cut short, closed and quiet, is not a
// checkpoint: the one before it is the newest, and the restart resumes from
// it instead of looping on a file that cannot load.
func TestDetectorCutShortFile(t *testing.T) {
	dir := t.TempDir()
	z := zipBytes(t, "")
	old := time.Now().Add(-time.Minute)
	for _, f := range []struct {
		name string
		data []byte
	}{{"step-1.pt", z}, {"step-2.pt", z[:len(z)-100]}} {
		p := filepath.Join(dir, f.name)
		os.WriteFile(p, f.data, 0o644)
		os.Chtimes(p, old, old)
		old = old.Add(time.Second) // step-2 is the newer
	}
	d := &Detector{Dir: dir, Quiet: 5 * time.Second, OpenForWrite: func(string) bool { return false }}
	cs, err := d.Scan()
	if err != nil || len(cs) != 2 {
		t.Fatalf("%+v %v", cs, err)
	}
	if cs[0].Name != "step-2.pt" || cs[0].Complete || !strings.Contains(cs[0].Why, "step-2.pt is a zip archive (torch.save's format) without the record it ends with: cut short") {
		t.Errorf("step-2.pt: %+v", cs[0])
	}
	if c, ok, _ := d.Newest(); !ok || c.Name != "step-1.pt" {
		t.Errorf("newest %+v %v, want step-1.pt", c, ok)
	}
	// Written again whole (a new version): it counts.
	p := filepath.Join(dir, "step-2.pt")
	os.WriteFile(p, z, 0o644)
	os.Chtimes(p, old, old)
	if c, ok, _ := d.Newest(); !ok || c.Name != "step-2.pt" {
		t.Errorf("newest %+v %v, want step-2.pt once whole", c, ok)
	}
	// The same inside a plain checkpoint directory, quiet as well.
	os.MkdirAll(filepath.Join(dir, "step-3"), 0o755)
	p = filepath.Join(dir, "step-3", "model.pt")
	os.WriteFile(p, z[:len(z)/3], 0o644)
	later := old.Add(10 * time.Second)
	os.Chtimes(p, later, later)
	os.Chtimes(filepath.Dir(p), later, later)
	cs, _ = d.Scan()
	if cs[0].Name != "step-3" || cs[0].Complete || !strings.Contains(cs[0].Why, "model.pt is a zip archive") {
		t.Errorf("step-3: %+v", cs[0])
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
		cutShort(p) // must not panic, whatever the bytes
	})
}

// A command that crashed while writing step-2.pt in place is restarted from
// step-1.pt, not from the file it cannot load (which would loop until the
// crash-loop limit ended the run).
func TestRestartSkipsACutShortCheckpoint(t *testing.T) {
	h := newHarness(t)
	dir, src := t.TempDir(), t.TempDir()
	z := zipBytes(t, "")
	os.WriteFile(filepath.Join(src, "whole.pt"), z, 0o644)
	os.WriteFile(filepath.Join(src, "cut.pt"), z[:len(z)/2], 0o644)
	seen := filepath.Join(src, "seen")
	cfg := h.config(dir, h.b)
	cfg.Glob = "step-*.pt"
	cfg.Cmd = []string{"sh", "-c", `if [ "$GPURENT_RESTART_COUNT" = 0 ]; then
cp "$0/whole.pt" "$GPURENT_CKPT_DIR/step-1.pt"; sleep 0.3; cp "$0/cut.pt" "$GPURENT_CKPT_DIR/step-2.pt"; exit 1
fi
echo "$GPURENT_RESUME_FROM" > "$0/seen"`, src}
	logged := captureLog(&cfg)
	sup, _ := New(cfg)
	if ex, err := sup.Run(context.Background(), nil); err != nil || ex.Code != 0 {
		t.Fatalf("%+v %v\n%s", ex, err, logged())
	}
	if b, _ := os.ReadFile(seen); strings.TrimSpace(string(b)) != filepath.Join(dir, "step-1.pt") {
		t.Errorf("resumed from %q, want step-1.pt\n%s", b, logged())
	}
}

// BenchmarkScan: a scan of 200 quiet checkpoint files of 64 KiB, each
// checked once for being cut short (cold: a new detector each time, as the
// first scan after a save) and then from the cache (warm: every --poll
// after); legacy pickles, whose format cannot tell, are the baseline of
// the same scan with only the 8-byte look at the head.
func BenchmarkScan(b *testing.B) {
	for _, kind := range []string{"zip", "pickle"} {
		dir := b.TempDir()
		old := time.Now().Add(-time.Hour)
		data := zipOfSize(b, 64<<10)
		if kind == "pickle" {
			data = append([]byte{0x80, 0x02}, make([]byte, 64<<10-2)...)
		}
		for i := range 200 {
			p := filepath.Join(dir, fmt.Sprintf("step-%03d.pt", i))
			os.WriteFile(p, data, 0o644)
			os.Chtimes(p, old, old)
		}
		never := func(string) bool { return false }
		b.Run(kind+"/cold", func(b *testing.B) {
			for b.Loop() {
				d := &Detector{Dir: dir, Quiet: time.Second, OpenForWrite: never}
				if cs, _ := d.Scan(); len(cs) != 200 || !cs[0].Complete {
					b.Fatal(cs[:1])
				}
			}
		})
		b.Run(kind+"/warm", func(b *testing.B) {
			d := &Detector{Dir: dir, Quiet: time.Second, OpenForWrite: never}
			d.Scan()
			for b.Loop() {
				if cs, _ := d.Scan(); len(cs) != 200 || !cs[0].Complete {
					b.Fatal(cs[:1])
				}
			}
		})
	}
}

// zipOfSize is a whole zip archive of about n bytes.
func zipOfSize(t testing.TB, n int) []byte {
	var b bytes.Buffer
	w := zip.NewWriter(&b)
	f, _ := w.CreateHeader(&zip.FileHeader{Name: "archive/data/0", Method: zip.Store})
	f.Write(make([]byte, n-200))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
