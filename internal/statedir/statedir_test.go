package statedir

import "testing"

func TestDir(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", "/var/state")
	if d, err := Dir(); err != nil || d != "/var/state/gpurent" {
		t.Errorf("XDG_STATE_HOME set: %q %v", d, err)
	}
	t.Setenv("XDG_STATE_HOME", "relative/ignored")
	t.Setenv("HOME", "/home/u")
	if d, err := Dir(); err != nil || d != "/home/u/.local/state/gpurent" {
		t.Errorf("relative XDG_STATE_HOME: %q %v", d, err)
	}
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("HOME", "")
	if _, err := Dir(); err == nil {
		t.Error("no home and no XDG_STATE_HOME gave a directory")
	}
}
