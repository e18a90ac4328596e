// Package testfs gives tests a small file system of their own to fill:
// a full disk is a failure gpurent must handle, and filling the real one
// would take the machine's other work down with it.
package testfs

import "testing"

// Tmpfs mounts a tmpfs of size ("3m") on dir, which must exist, and
// unmounts it when the test ends. Where it cannot (not root, not Linux)
// the test is skipped, saying why.
func Tmpfs(t testing.TB, dir, size string) {
	t.Helper()
	if err := mount(dir, size); err != nil {
		t.Skipf("cannot mount a tmpfs of %s (needs root, on Linux): %v", size, err)
	}
	t.Cleanup(func() { unmount(dir) })
}
