//go:build unix

package homefiles

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

func write(t *testing.T, path, body string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), mode); err != nil {
		t.Fatal(err)
	}
}

func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
}

// Present reads through a symlink to a regular file (wipe plans such a
// credential), never blocking on a FIFO or reading a device; Link says
// where the link points, for wipe to remove the link and not the target.
func TestKnownSecretLink(t *testing.T) {
	dir := t.TempDir()
	write(t, dir+"/real/config.json", `{"auths":{"x":{"auth":"dXNlcjpwYXNz"}}}`, 0o600)
	write(t, dir+"/real/empty.json", `{"credsStore":"desktop"}`, 0o600)
	mkfifo(t, dir+"/real/fifo")
	links := map[string]string{"abs": dir + "/real/config.json", "rel": "real/config.json", "nomarker": dir + "/real/empty.json",
		"fifo": dir + "/real/fifo", "zero": "/dev/zero", "dangling": dir + "/real/none"}
	for name, to := range links {
		if err := os.Symlink(to, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name    string
		present bool
		link    string
	}{
		{"real/config.json", true, ""},
		{"abs", true, dir + "/real/config.json"},
		{"rel", true, dir + "/real/config.json"},
		{"nomarker", false, dir + "/real/empty.json"},
		{"fifo", false, dir + "/real/fifo"},
		{"zero", false, "/dev/zero"},
		{"dangling", false, dir + "/real/none"},
		{"real/fifo", false, ""},
	} {
		k := KnownSecret{Path: filepath.Join(dir, tc.name), Kind: "docker registry login", Marker: `"auth"`}
		done := make(chan bool, 1)
		go func() { done <- k.Present() }()
		select {
		case got := <-done:
			if got != tc.present {
				t.Errorf("%s: Present %v, want %v", tc.name, got, tc.present)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: Present still blocked after 5 s", tc.name)
		}
		target, ok := k.Link()
		if ok != (tc.link != "") || target != tc.link {
			t.Errorf("%s: Link %q, %v; want %q", tc.name, target, ok, tc.link)
		}
	}
}
