package supervise

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// A run's lock is free once it is given back, even while a process forked
// in the meantime still shares its open file (a child not yet exec'd): the
// kill trials, side by side, met their own released lock held that way
// ("is in use by another gpurent run").
func TestLockFreedWhileShared(t *testing.T) {
	dir := t.TempDir()
	unlock, err := LockDir(dir, "r")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := LockDir(dir, "r"); err == nil {
		t.Fatal("a second run took a held lock")
	}
	// What a fork leaves a child until its exec: the same open file.
	lock, held := filepath.Join(dir, LockFile), -1
	fds, _ := os.ReadDir("/proc/self/fd")
	for _, e := range fds {
		if p, _ := os.Readlink("/proc/self/fd/" + e.Name()); p == lock {
			held, _ = strconv.Atoi(e.Name())
		}
	}
	if held < 0 {
		t.Fatal("the lock's file is not open in this process")
	}
	shared, err := syscall.Dup(held)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(shared)
	unlock()
	again, err := LockDir(dir, "r")
	if err != nil {
		t.Fatalf("the lock given back is still held: %v", err)
	}
	again()
}
