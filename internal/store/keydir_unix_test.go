//go:build unix

package store

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKeyInWritableDirRefused: a 0600 identity inside a 0777 directory
// was accepted on the commit before; anyone could put their own key in
// its place. A sticky directory (/tmp's 1777) is fine: there no one
// replaces another's file.
func TestKeyInWritableDirRefused(t *testing.T) {
	for _, c := range []struct {
		mode os.FileMode
		ok   bool
	}{{0o700, true}, {0o755, true}, {0o777, false}, {0o770, false}, {0o777 | os.ModeSticky, true}} {
		dir := filepath.Join(t.TempDir(), "keys")
		path := filepath.Join(dir, "identity.txt")
		if _, err := Keygen(path); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, c.mode); err != nil {
			t.Fatal(err)
		}
		_, err := LoadIdentities(path)
		if c.ok != (err == nil) || !c.ok && !strings.Contains(err.Error(), "other users may write") {
			t.Errorf("identity in a directory of mode %v: %v", c.mode, err)
		}
		os.Chmod(dir, 0o700)
	}
}

// TestJournalLinkNotFollowed: a symlink in place of the pushes directory
// was followed on the commit before: its target was made 0700 and got
// the push's lock and journal. Now pushes there are not resumable, and
// the target is left as it was.
func TestJournalLinkNotFollowed(t *testing.T) {
	base := t.TempDir()
	target := filepath.Join(base, "elsewhere")
	if err := os.Mkdir(target, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(target, 0o755)
	journal := filepath.Join(base, "state", "pushes")
	os.MkdirAll(filepath.Dir(journal), 0o700)
	if err := os.Symlink(target, journal); err != nil {
		t.Fatal(err)
	}
	b, err := newLocal(filepath.Join(base, "store"))
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(base, "ck")
	os.MkdirAll(src, 0o755)
	os.WriteFile(filepath.Join(src, "big"), []byte(strings.Repeat("x", 4096)), 0o644)
	s := New(b, Options{Grace: -1, Segment: 1024, Journal: journal, Where: "test"})
	if _, err := s.Push(t.Context(), src, "r"); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(target)
	if st.Mode().Perm() != 0o755 {
		t.Errorf("the link's target was made %v", st.Mode().Perm())
	}
	if ents, _ := os.ReadDir(target); len(ents) != 0 {
		t.Errorf("the push wrote through the link: %v", ents)
	}
}
