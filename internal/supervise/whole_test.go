//go:build unix

package supervise

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A torch.save file that a crash cut short, closed and quiet, is not a
// checkpoint: the one before it is the newest, and the restart resumes from
// it instead of looping on a file that cannot load.
func TestDetectorCutShortFile(t *testing.T) {
	dir := t.TempDir()
	z := zipOfSize(t, 4096)
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

// A command that crashed while writing step-2.pt in place is restarted from
// step-1.pt, not from the file it cannot load (which would loop until the
// crash-loop limit ended the run).
func TestRestartSkipsACutShortCheckpoint(t *testing.T) {
	h := newHarness(t)
	dir, src := t.TempDir(), t.TempDir()
	z := zipOfSize(t, 4096)
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
