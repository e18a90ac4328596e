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
