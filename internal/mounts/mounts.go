// Package mounts reads the mount table and tells, for a path, which file
// system holds it and whether that file system sits on dm-crypt. gpurent
// audit reports it (is the data disk encrypted?) and gpurent wipe uses it
// to decide whether overwriting a file before unlinking means anything.
package mounts

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Mount is one line of /proc/self/mounts.
type Mount struct {
	Source  string `json:"source"`
	Point   string `json:"point"`
	FSType  string `json:"fstype"`
	Options string `json:"options"`
}

// Table is a mount table read under a root ("/" on the real machine; tests
// give a fake root with its own proc/self/mounts and sys/block).
type Table struct {
	Root   string
	Mounts []Mount
}

// Read parses root/proc/self/mounts. A missing table is an empty one: the
// callers then say "unknown" rather than fail.
func Read(root string) Table {
	t := Table{Root: root}
	b, err := os.ReadFile(filepath.Join(root, "proc/self/mounts"))
	if err != nil {
		return t
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 4 {
			continue
		}
		t.Mounts = append(t.Mounts, Mount{Source: Unescape(f[0]), Point: Unescape(f[1]), FSType: f[2], Options: f[3]})
	}
	return t
}

// Unescape undoes the kernel's octal escapes in mount tables (\040 for a
// space), in /proc/self/mounts and mountinfo alike.
func Unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// Find returns the mount holding path: the last-mounted entry whose mount
// point is the longest prefix of path. path is a real path; the table's
// root is stripped from it first, so fake roots work the same.
func (t Table) Find(path string) (Mount, bool) {
	p := filepath.Clean(path)
	if t.Root != "" && t.Root != "/" {
		if rel, err := filepath.Rel(t.Root, p); err == nil && !strings.HasPrefix(rel, "..") {
			p = "/" + rel
		}
	}
	best, found := Mount{}, false
	for _, m := range t.Mounts {
		if under(p, m.Point) && (!found || len(m.Point) >= len(best.Point)) {
			best, found = m, true
		}
	}
	return best, found
}

// IsMountPoint reports whether path is itself where a file system is
// mounted: its contents can be removed, the directory cannot.
func (t Table) IsMountPoint(path string) bool {
	m, ok := t.Find(path)
	if !ok {
		return false
	}
	p := filepath.Clean(path)
	if t.Root != "" && t.Root != "/" {
		if rel, err := filepath.Rel(t.Root, p); err == nil && !strings.HasPrefix(rel, "..") {
			p = filepath.Clean("/" + rel)
		}
	}
	return p == m.Point
}

func under(p, point string) bool {
	if point == "/" {
		return strings.HasPrefix(p, "/")
	}
	return p == point || strings.HasPrefix(p, point+"/")
}

// Network file systems keep the data on someone else's servers; the
// tenant cannot erase it from here.
func (m Mount) Network() bool { return NetworkFS(m.FSType) }

// NetworkFS reports file system types whose data lives on another machine:
// NFS, SMB, cluster file systems, virtio-fs, and FUSE mounts of object
// stores and remote disks (s3fs, gcsfuse, juicefs, sshfs, rclone).
func NetworkFS(fstype string) bool {
	switch fstype {
	case "nfs", "nfs4", "cifs", "smb3", "smbfs", "ceph", "glusterfs", "9p", "lustre", "gpfs", "beegfs", "afs", "virtiofs":
		return true
	}
	return strings.HasPrefix(fstype, "fuse.")
}

// Overlay: a container's layered root; deleting a lower-layer file only
// writes a whiteout (Linux Documentation/filesystems/overlayfs.rst).
func (m Mount) Overlay() bool { return m.FSType == "overlay" || m.FSType == "aufs" }

// CopyOnWrite file systems write new blocks instead of overwriting.
func (m Mount) CopyOnWrite() bool {
	switch m.FSType {
	case "btrfs", "zfs", "bcachefs", "f2fs", "nilfs2":
		return true
	}
	return false
}

// Memory file systems vanish at reboot; the kernel clears pages before
// reuse.
func (m Mount) Memory() bool {
	return m.FSType == "tmpfs" || m.FSType == "ramfs" || m.FSType == "devtmpfs"
}

// OverwriteMeaningful: file systems that write file data in place, so an
// overwrite replaces the old blocks on the device (GNU coreutils' shred
// manual; ext3/ext4 only without data=journal). On SSDs the device may
// still keep the old blocks (wear levelling); that caveat is the caller's
// to print.
func (m Mount) OverwriteMeaningful() bool {
	switch m.FSType {
	case "ext2", "ext3", "ext4":
		return !strings.Contains(","+m.Options+",", ",data=journal,")
	case "vfat", "exfat", "msdos":
		return true
	}
	return false
}

// Encryption says whether the mount's source is a dm-crypt device, or a
// device-mapper stack with one beneath it (LVM on LUKS), and how it knows.
// ok is false when the source is not a block device gpurent can follow.
func (t Table) Encryption(m Mount) (encrypted bool, via string, ok bool) {
	switch {
	case m.FSType == "ecryptfs":
		return true, "eCryptfs", true
	case m.FSType == "zram" || strings.HasPrefix(m.Source, "/dev/zram"):
		return false, "zram (memory)", true
	}
	dev := t.dmName(m.Source)
	if dev == "" {
		if strings.HasPrefix(m.Source, "/dev/") {
			return false, filepath.Base(m.Source) + " is a plain block device", true
		}
		return false, "", false
	}
	return t.cryptBelow(dev, 0)
}

// dmName maps /dev/mapper/NAME or /dev/dm-N to the kernel name dm-N.
func (t Table) dmName(source string) string {
	if strings.HasPrefix(source, "/dev/dm-") {
		return filepath.Base(source)
	}
	if !strings.HasPrefix(source, "/dev/mapper/") {
		return ""
	}
	name := filepath.Base(source)
	ents, _ := filepath.Glob(filepath.Join(t.Root, "sys/block/dm-*/dm/name"))
	for _, e := range ents {
		if b, err := os.ReadFile(e); err == nil && strings.TrimSpace(string(b)) == name {
			return filepath.Base(filepath.Dir(filepath.Dir(e)))
		}
	}
	return ""
}

func (t Table) cryptBelow(dm string, depth int) (bool, string, bool) {
	if depth > 8 {
		return false, "", false
	}
	b, err := os.ReadFile(filepath.Join(t.Root, "sys/block", dm, "dm/uuid"))
	if err != nil {
		return false, "", false
	}
	uuid := strings.TrimSpace(string(b))
	if strings.HasPrefix(uuid, "CRYPT-") {
		kind := strings.SplitN(strings.TrimPrefix(uuid, "CRYPT-"), "-", 2)[0]
		return true, "dm-crypt (" + strings.ToLower(kind) + ") on " + dm, true
	}
	slaves, _ := os.ReadDir(filepath.Join(t.Root, "sys/block", dm, "slaves"))
	for _, s := range slaves {
		if strings.HasPrefix(s.Name(), "dm-") {
			if enc, via, ok := t.cryptBelow(s.Name(), depth+1); ok && enc {
				return true, via + " under " + dm, true
			}
		}
	}
	return false, dm + " is device-mapper without dm-crypt (" + strings.SplitN(uuid, "-", 2)[0] + ")", true
}
