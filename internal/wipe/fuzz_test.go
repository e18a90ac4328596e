//go:build unix

package wipe

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sandbox is a small tree of directories and links of every kind, which
// the resolvers are fuzzed in.
func sandbox(f *testing.F) string {
	dir := f.TempDir()
	for _, d := range []string{"a/b/c", "home/me/.cache", "data"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			f.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(dir, "a/b/file"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(dir, "home/me/.netrc"), []byte("x"), 0o600)
	for link, target := range map[string]string{
		"dirlink":           "a/b",
		"filelink":          "a/b/file",
		"up":                "..",
		"a/b/c/back":        "../../..",
		"abs":               dir + "/home/me",
		"loop":              "loop",
		"dangling":          "nowhere",
		"home/me/.cache/hf": "../..",
		"data/etc":          "/etc",
	} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			f.Fatal(err)
		}
	}
	for _, s := range []string{"a", "dirlink/..", "dirlink/../b", "dirlink/file", "filelink", "up/x", "a/b/c/back/a",
		"abs", "abs/", "abs/.", "abs/..", "loop", "loop/x", "dangling", "home/me/.cache/hf", "home/me/.cache/hf/.netrc",
		"data/etc/passwd", "data/etc/..", "x//y", "./a/./b/", "..", "/", "a/b/c/back/dirlink/../file"} {
		f.Add(s)
	}
	return dir
}

// resolveItem names the entry the kernel reaches without following the
// last component, and resolveFull the one it reaches following it: the
// same inode as lstat and stat of the path, or both fail.
func FuzzResolvers(f *testing.F) {
	dir := sandbox(f)
	home := filepath.Join(dir, "home/me")
	f.Fuzz(func(t *testing.T, p string) {
		if len(p) > 200 || strings.ContainsRune(p, 0) {
			return
		}
		r, err := resolveItem(p, dir)
		if err == nil {
			if !filepath.IsAbs(r) || filepath.Clean(r) != r {
				t.Fatalf("resolveItem(%q) = %q: not absolute and clean", p, r)
			}
			kernel := p
			if !filepath.IsAbs(p) {
				kernel = dir + "/" + p
			}
			want, kerr := os.Lstat(kernel)
			got, gerr := os.Lstat(r)
			if (kerr == nil) != (gerr == nil) || kerr == nil && !os.SameFile(want, got) {
				t.Fatalf("resolveItem(%q) = %q, which is not what the kernel reaches (%v, %v)", p, r, kerr, gerr)
			}
			// The refusal judges the resolved path: it never lets the home or
			// what holds it through.
			if (r == home || strings.HasPrefix(home+"/", r+"/")) && refusal(r, home, dir).IsZero() {
				t.Fatalf("refusal(%q) let the home through", r)
			}
		}
		full, err := resolveFull(p, dir)
		if err == nil {
			kernel := p
			if !filepath.IsAbs(p) {
				kernel = dir + "/" + p
			}
			want, kerr := os.Stat(kernel)
			got, gerr := os.Stat(full)
			if kerr != nil || gerr != nil || !os.SameFile(want, got) {
				t.Fatalf("resolveFull(%q) = %q, which is not what the kernel reaches (%v, %v)", p, full, kerr, gerr)
			}
		}
	})
}
