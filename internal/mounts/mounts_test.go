package mounts

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFindAndJudge(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "proc/self"), 0o755)
	table := "/dev/vda1 / ext4 rw 0 0\n" +
		"/dev/vdb /data ext4 rw,data=journal 0 0\n" +
		"overlay /data/layer overlay rw,lowerdir=/a 0 0\n" +
		"/dev/vdc /mnt/my\\040disk xfs rw 0 0\n" +
		"server:/x /datasets nfs4 rw 0 0\n" +
		"/dev/vdd /databig btrfs rw 0 0\n"
	if err := os.WriteFile(filepath.Join(root, "proc/self/mounts"), []byte(table), 0o644); err != nil {
		t.Fatal(err)
	}
	tab := Read(root)
	for _, tc := range []struct {
		path, point, fstype string
		overwrite           bool
	}{
		{"/home/me/x", "/", "ext4", true},
		{"/data/a", "/data", "ext4", false}, // data=journal keeps old copies in the journal
		{"/data/layer/f", "/data/layer", "overlay", false},
		{"/databig/f", "/databig", "btrfs", false}, // /data is no prefix of /databig
		{"/mnt/my disk/f", "/mnt/my disk", "xfs", false},
		{"/datasets/f", "/datasets", "nfs4", false},
	} {
		m, ok := tab.Find(filepath.Join(root, tc.path))
		if !ok || m.Point != tc.point || m.FSType != tc.fstype || m.OverwriteMeaningful() != tc.overwrite {
			t.Errorf("%s: %+v overwrite %v", tc.path, m, m.OverwriteMeaningful())
		}
	}
	if m, _ := tab.Find(root + "/datasets/f"); !m.Network() {
		t.Error("nfs4 is a network file system")
	}
	if m, _ := tab.Find(root + "/databig/f"); !m.CopyOnWrite() {
		t.Error("btrfs is copy-on-write")
	}
	if enc, _, ok := tab.Encryption(Mount{Source: "/dev/vda1"}); enc || !ok {
		t.Error("a plain disk is known unencrypted")
	}
	if _, _, ok := tab.Encryption(Mount{Source: "overlay"}); ok {
		t.Error("an overlay's disk cannot be known")
	}
}

// Any mount-table field unescapes without a panic, never grows, and is
// left as it is when it holds no backslash.
func FuzzUnescape(f *testing.F) {
	for _, s := range []string{`/mnt/my\040disk`, `\134`, `\0`, `\777`, `a\`, `/plain/path`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u := Unescape(s)
		if len(u) > len(s) || (!strings.Contains(s, `\`) && u != s) {
			t.Fatalf("%q unescaped to %q", s, u)
		}
	})
}
