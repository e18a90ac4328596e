package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpurent/gpurent/internal/render"
)

// ckpt speed times a round trip through the store, scales it to the
// checkpoint size given, and leaves nothing in the store or in --dir.
func TestCkptSpeed(t *testing.T) {
	dir := t.TempDir()
	st, work := filepath.Join(dir, "store"), filepath.Join(dir, "work")
	os.Mkdir(work, 0o700)
	code, out, stderr := gpurent(t, "ckpt", "speed", "--store", st, "--size", "8MiB", "--files", "3", "--ckpt-size", "20", "--dir", work, "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	var r render.SpeedReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if r.Bytes != 8<<20 || r.Files != 3 || !r.Encrypted || r.UploadS <= 0 || r.DownloadS <= 0 || r.CkptBytes != 20e9 ||
		math.Abs(r.UploadMBs-8.388608/r.UploadS) > 1e-9 || math.Abs(r.CkptUploadS-20e3/r.UploadMBs) > 1e-6 || math.Abs(r.CkptDownloadS-20e3/r.DownloadMBs) > 1e-6 {
		t.Errorf("%+v", r)
	}
	if es, _ := os.ReadDir(work); len(es) != 0 {
		t.Errorf("--dir keeps %d entries", len(es))
	}
	if code, out, _ := gpurent(t, "ckpt", "runs", "--store", st); code != 0 || !strings.Contains(out, "0 runs in") {
		t.Errorf("the store keeps a run: exit %d\n%s", code, out)
	}
	code, out, _ = gpurent(t, "ckpt", "speed", "--store", st, "--size", "2MiB", "--no-encrypt", "--dir", work)
	if code != 0 || !strings.Contains(out, "test      2.0 MiB in 4 files, plaintext\n") || strings.Contains(out, "checkpoint at these rates") {
		t.Errorf("plaintext: exit %d\n%s", code, out)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--size", "10k"}, `--size: want a size from 1 MiB to 1 TB such as 256MiB or 1GB, got "10k"`},
		{[]string{"--size", "1e30"}, `--size: want a size from 1 MiB to 1 TB`},
		{[]string{"--files", "0"}, "--files: want 1 to 1000, got 0"},
		{[]string{"--ckpt-size", "big"}, `--ckpt-size: want a size such as 20GB (a bare number is GB), got "big"`},
		{[]string{"--dir", filepath.Join(dir, "none")}, "none: not a directory"},
	} {
		code, _, stderr := gpurent(t, append([]string{"ckpt", "speed", "--store", st}, c.args...)...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, want 2 and %q\n%s", c.args, code, c.want, stderr)
		}
	}
}
