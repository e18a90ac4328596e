package fsspace

import "testing"

// The temporary directory's file system has room, and no more than its size.
func TestOf(t *testing.T) {
	free, size, err := Of(t.TempDir())
	if err != nil || size == 0 || free > size {
		t.Fatalf("free %d, size %d, %v", free, size, err)
	}
	if _, _, err := Of("/no/such/dir"); err == nil {
		t.Error("a missing directory has space")
	}
}
