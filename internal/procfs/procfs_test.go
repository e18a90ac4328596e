package procfs

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestProcesses(t *testing.T) {
	proc := t.TempDir()
	mk := func(name, content string) {
		t.Helper()
		p := filepath.Join(proc, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, name string) {
		t.Helper()
		p := filepath.Join(proc, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	mk("42/comm", "python3\n")
	link("/work", "42/cwd")
	link("/usr/bin/python3.11", "42/exe")
	link("/data/x.bin", "42/fd/3")
	link("socket:[9001]", "42/fd/4")
	mk("7/comm", "sshd\n") // another user's: nothing else readable
	mk("self/comm", "not a pid\n")
	mk("uptime", "1 2\n")
	got := Processes(proc)
	want := []Process{
		{PID: 42, Comm: "python3", Cwd: "/work", Exe: "/usr/bin/python3.11", FDs: []string{"/data/x.bin", "socket:[9001]"}},
		{PID: 7, Comm: "sshd"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	if Processes(filepath.Join(proc, "none")) != nil {
		t.Error("a missing /proc gave processes")
	}
}

func TestSocketInode(t *testing.T) {
	for link, want := range map[string]uint64{"socket:[9001]": 9001, "socket:[0]": 0} {
		if n, ok := SocketInode(link); !ok || n != want {
			t.Errorf("%s: %d %v", link, n, ok)
		}
	}
	for _, link := range []string{"pipe:[9001]", "/tmp/socket:[1]", "socket:[x]", "socket:[]", "anon_inode:[eventfd]"} {
		if _, ok := SocketInode(link); ok {
			t.Errorf("%s read as a socket", link)
		}
	}
}

func TestParseUnixSockets(t *testing.T) {
	table := "Num       RefCount Protocol Flags    Type St Inode Path\n" +
		"ffff0000: 00000002 00000000 00010000 0001 01 555 /tmp/vscode-ipc-1.sock\n" +
		"ffff0001: 00000002 00000000 00010000 0001 01 556\n" +
		"ffff0002: 00000002 00000000 00010000 0001 01 557 @/tmp/.X11-unix/X0\n" +
		"ffff0003: 00000003 00000000 00000000 0001 03 558 /run/systemd/journal/stdout\n"
	got := ParseUnixSockets(strings.NewReader(table))
	want := map[uint64]string{555: "/tmp/vscode-ipc-1.sock", 558: "/run/systemd/journal/stdout"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// Any table parses without a panic, and every path it gives is absolute.
func FuzzParseUnixSockets(f *testing.F) {
	f.Add("Num RefCount Protocol Flags Type St Inode Path\nffff: 2 0 10000 1 1 555 /tmp/a.sock\n")
	f.Add("x: 1 2 3 4 5 18446744073709551616 /p\n")
	f.Add("\n\n   \n")
	f.Fuzz(func(t *testing.T, table string) {
		for _, p := range ParseUnixSockets(strings.NewReader(table)) {
			if !strings.HasPrefix(p, "/") {
				t.Fatalf("path %q", p)
			}
		}
	})
}

// A socket path may hold spaces: all of the line after the seventh field
// is the path (a socket at /tmp/my dir/sock was read as "/tmp/my").
func TestUnixSocketPathWithSpaces(t *testing.T) {
	got := ParseUnixSockets(strings.NewReader("Num       RefCount Protocol Flags    Type St Inode Path\n" +
		"0000000000000000: 00000002 00000000 00010000 0001 01 777 /tmp/my dir/sock\n"))
	if got[777] != "/tmp/my dir/sock" {
		t.Errorf("path %q", got[777])
	}
}
