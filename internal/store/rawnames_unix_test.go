//go:build unix

package store

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestNamesAreBytes: Linux names are bytes. On the commit before, a file
// named "bad\xff\xfe" came back as "bad" and two U+FFFD (JSON strings
// are UTF-8), while pull said every file was checked. Names that are not
// UTF-8, of files, directories and links' targets, now come back byte for
// byte; and the pulled tree is the pushed one.
func TestNamesAreBytes(t *testing.T) {
	ctx := context.Background()
	src := filepath.Join(t.TempDir(), "ck")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(src, "dir\xe9"), 0o755))
	must(os.WriteFile(filepath.Join(src, "bad\xff\xfe"), []byte("weights"), 0o644))
	must(os.WriteFile(filepath.Join(src, "dir\xe9", "inner"), []byte("inner"), 0o644))
	must(os.WriteFile(filepath.Join(src, "good"), []byte("good"), 0o644))
	must(os.Symlink("bad\xff\xfe", filepath.Join(src, "link")))
	c, _ := newCrypto(t)
	for name, open := range fileAndS3(t) {
		t.Run(name, func(t *testing.T) {
			s := New(open(t), Options{Crypto: c, Grace: -1})
			m, err := s.Push(ctx, src, "r")
			if err != nil {
				t.Fatal(err)
			}
			if m.Version != versionRawNames {
				t.Errorf("version %d, want %d: a gpurent that reads 3 would rename the files", m.Version, versionRawNames)
			}
			dest := filepath.Join(t.TempDir(), "out")
			if _, err := s.Pull(ctx, "r", m.ID, dest); err != nil {
				t.Fatal(err)
			}
			same(t, src, dest)
			same(t, dest, src)
			if _, err := os.Stat(filepath.Join(dest, "bad\xff\xfe")); err != nil {
				t.Errorf("the file is not back under its name: %v", err)
			}
			if _, probs, err := s.Verify(ctx, "r", m.ID, true); err != nil || len(probs) > 0 {
				t.Errorf("verify: %v %v", probs, err)
			}
			// A second push reuses by name.
			if _, err := s.Push(ctx, src, "r"); err != nil {
				t.Errorf("second push: %v", err)
			}
		})
	}
}
