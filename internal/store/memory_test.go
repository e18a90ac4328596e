package store

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
)

// childMain runs inside a child process of TestLargeFileMemory: it pushes
// and pulls one file and prints the process's peak resident memory, which
// the parent judges. A child, so the figure is this work's alone.
func childMain() {
	debug.SetMemoryLimit(MemoryLimit) // as the ckpt commands do
	ctx := context.Background()
	src, storeURL, dest := os.Getenv("GPURENT_CHILD_SRC"), os.Getenv("GPURENT_CHILD_STORE"), os.Getenv("GPURENT_CHILD_DEST")
	fail := func(err error) {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	idPath := filepath.Join(filepath.Dir(dest), "id.txt")
	rcpt, err := Keygen(idPath)
	if err != nil {
		fail(err)
	}
	ids, _ := LoadIdentities(idPath)
	rs, _ := ParseRecipients([]string{rcpt})
	b, _, err := Open(ctx, storeURL, OpenOptions{PartSize: 8 << 20, Concurrency: 4})
	if err != nil {
		fail(err)
	}
	s := New(&Retrying{Backend: b}, Options{Crypto: &Crypto{Recipients: rs, Keys: []string{rcpt}, Identities: ids}})
	if _, err := s.Push(ctx, src, "big"); err != nil {
		fail(err)
	}
	if _, err := s.Pull(ctx, "big", "latest", dest); err != nil {
		fail(err)
	}
	fmt.Println("vmhwm_kb:", vmHWM())
	os.Exit(0)
}

func vmHWM() int {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			return n
		}
	}
	return -1
}

func sum(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	io.Copy(h, f)
	return fmt.Sprintf("%x", h.Sum(nil))
}

// TestLargeFileMemory pushes and pulls a 3 GiB file, encrypted, and checks
// that the process never held more than 256 MiB: streaming, whatever the
// file size. The file is sparse with random 1 MiB islands every 256 MiB,
// so it costs little disk while every byte still flows through the store.
func TestLargeFileMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the 3 GiB round trip takes a while")
	}
	if raceEnabled {
		t.Skip("the race detector inflates memory; scripts/test.sh runs this test without -race")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "model.bin")
	f, err := os.Create(src)
	if err != nil {
		t.Fatal(err)
	}
	const size = 3 << 30
	island := make([]byte, 1<<20)
	for off := int64(0); off < size; off += 256 << 20 {
		rand.Read(island)
		if _, err := f.WriteAt(island, off); err != nil {
			t.Fatal(err)
		}
	}
	f.Truncate(size)
	f.Close()
	want := sum(t, src)
	targets := map[string]string{"file": filepath.Join(dir, "store")}
	if q := weedURL(t); q != "" {
		targets["s3"] = "s3://" + newBucket(t) + "/big?" + q
	}
	for name, url := range targets {
		t.Run(name, func(t *testing.T) {
			dest := filepath.Join(t.TempDir(), "restored.bin")
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), "GPURENT_STORE_CHILD=1", "GPURENT_CHILD_SRC="+src, "GPURENT_CHILD_STORE="+url, "GPURENT_CHILD_DEST="+dest)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("child: %v\n%s", err, out)
			}
			var kb int
			for _, line := range strings.Split(string(out), "\n") {
				if v, ok := strings.CutPrefix(line, "vmhwm_kb: "); ok {
					kb, _ = strconv.Atoi(v)
				}
			}
			t.Logf("%s: peak RSS %.1f MiB for a 3 GiB push and pull", name, float64(kb)/1024)
			if kb <= 0 || kb > 256*1024 {
				t.Errorf("peak RSS %d kB, want at most 256 MiB", kb)
			}
			if got := sum(t, dest); got != want {
				t.Errorf("restored file differs")
			}
		})
	}
}
