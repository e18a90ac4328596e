package userfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A regular file is read whole up to its cap, and refused one byte past it,
// with its name, its size and the cap in the message.
func TestReadCap(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "catalog.yaml")
	if err := os.WriteFile(p, []byte("0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := Read(p, 10); err != nil || string(b) != "0123456789" {
		t.Fatalf("10 bytes under a cap of 10: %q, %v", b, err)
	}
	_, err := Read(p, 9)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), p+" holds 10 bytes, over the 9 bytes") {
		t.Errorf("10 bytes under a cap of 9: %v", err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, make([]byte, 3<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(big, 1<<20); err == nil || !strings.Contains(err.Error(), "holds 3 MiB, over the 1 MiB") {
		t.Errorf("3 MiB under a cap of 1 MiB: %v", err)
	}
}

// /dev/zero never ends: it is refused as a device before a byte is read.
func TestReadDevZero(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero on this system")
	}
	_, err := Read("/dev/zero", 1<<20)
	if !errors.Is(err, ErrNotRegular) || err.Error() != "/dev/zero is a character device, not a regular file" {
		t.Errorf("/dev/zero: %v", err)
	}
}

// A directory is no file to read.
func TestReadDirectory(t *testing.T) {
	dir := t.TempDir()
	if _, err := Read(dir, 1<<20); !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("directory: %v", err)
	}
}

// Open follows a symlink to a regular file; OpenNoFollow refuses the link.
func TestSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Skipf("this file system makes no symlinks: %v", err)
	}
	if b, err := Read(link, 10); err != nil || string(b) != "x" {
		t.Errorf("Read through a link: %q, %v", b, err)
	}
	f, _, err := OpenNoFollow(link)
	if err == nil {
		f.Close()
	}
	if !errors.Is(err, ErrNotRegular) || err.Error() != link+" is a symlink, not a regular file" {
		t.Errorf("OpenNoFollow of a link: %v", err)
	}
	if f, _, err := OpenNoFollow(target); err != nil {
		t.Errorf("OpenNoFollow of a regular file: %v", err)
	} else {
		f.Close()
	}
}

func TestSize(t *testing.T) {
	for n, want := range map[int64]string{300: "300 bytes", 64 << 20: "64 MiB", 3 << 29: "1.5 GiB", 1536: "1.5 KiB"} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}
