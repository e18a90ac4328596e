package ctime

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// The change time is when the file was written, whatever modification
// time it was given after (as tar and cp -p give one).
func TestOfIgnoresASetBackModTime(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	before := time.Now().Add(-time.Second)
	if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	past := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := os.Chtimes(p, past, past); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	c, ok := Of(info)
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		if ok {
			t.Errorf("a change time where none is known: %v", c)
		}
		return
	}
	if !ok || c.Before(before) || !info.ModTime().Equal(past) {
		t.Errorf("ctime %v (known %v), mtime %v: want ctime after %v", c, ok, info.ModTime(), before)
	}
}
