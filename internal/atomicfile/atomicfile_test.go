package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

func TestWriteReplaces(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	if err := Write(path, []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, []byte("two"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || string(b) != "two" {
		t.Fatalf("read %q, %v; want two", b, err)
	}
	if runtime.GOOS != "windows" {
		if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
			t.Errorf("mode %v, want 0600", st.Mode().Perm())
		}
	}
	onlyFiles(t, dir, "state.json")
}

// A name near the file system's limit still gets a temporary file.
func TestWriteLongName(t *testing.T) {
	dir := t.TempDir()
	name := strings.Repeat("n", 250)
	if err := Write(filepath.Join(dir, name), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	onlyFiles(t, dir, name)
}

// Writers racing on one path leave one whole version and no temporary
// file: each has its own.
func TestWriteConcurrent(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "latest")
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := Write(path, []byte(strings.Repeat(fmt.Sprint(i%10), 4096)), 0o644); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	b, err := os.ReadFile(path)
	if err != nil || len(b) != 4096 || strings.Count(string(b), string(b[:1])) != 4096 {
		t.Fatalf("torn or missing file: %d bytes, %v", len(b), err)
	}
	onlyFiles(t, dir, "latest")
}

// A write that cannot happen says so and leaves the old file as it was.
func TestWriteFailsCleanly(t *testing.T) {
	dir := t.TempDir()
	if err := Write(filepath.Join(dir, "missing", "f"), []byte("x"), 0o600); err == nil {
		t.Fatal("no error writing into a directory that does not exist")
	}
	path := filepath.Join(dir, "kept")
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A directory where the file is: the rename fails after the write.
	if err := Write(dir, []byte("new"), 0o600); err == nil {
		t.Fatal("no error replacing a directory")
	}
	if b, _ := os.ReadFile(path); string(b) != "old" {
		t.Errorf("old file now %q", b)
	}
	onlyFiles(t, dir, "kept")
}

func onlyFiles(t *testing.T, dir string, want ...string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("directory holds %v, want %v", got, want)
	}
}
