package kernlog

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The lines are as the driver prints them: the three forms of
// krcReportXid in NVIDIA's open kernel modules (kernel_rc.c), a channel
// whose process the driver did not know, Xid 79 as nvErrorLog_va prints
// it, a row remapping event as it appears in logs, an old driver's form
// without "PCI:", and dmesg's timestamp in front.
func TestParse(t *testing.T) {
	for _, c := range []struct {
		line string
		want Xid
	}{
		{"NVRM: Xid (PCI:0000:3b:00): 13, pid=2371, name=python3, Graphics Exception: ESR 0x514648=0x1000f 0x514650=0x0",
			Xid{Code: 13, Bus: "0000:3b:00", PID: 2371, Process: "python3", Message: "Graphics Exception: ESR 0x514648=0x1000f 0x514650=0x0"}},
		{"NVRM: Xid (PCI:0000:B8:00 GPU-I:01): 31, pid=88, name=train.py, Ch 00000008, intr 00000000. MMU Fault",
			Xid{Code: 31, Bus: "0000:b8:00", MIG: "GPU-I:01", PID: 88, Process: "train.py", Message: "Ch 00000008, intr 00000000. MMU Fault"}},
		{"NVRM: Xid (PCI:0000:18:00 GPU-I:02 GPU-CI:00): 43, pid=9, name=torchrun, Ch 00000010",
			Xid{Code: 43, Bus: "0000:18:00", MIG: "GPU-I:02 GPU-CI:00", PID: 9, Process: "torchrun", Message: "Ch 00000010"}},
		{"NVRM: Xid (PCI:0000:18:00): 119, pid='<unknown>', name=<unknown>, Timeout after 6s of waiting for RPC response from GPU0 GSP!",
			Xid{Code: 119, Bus: "0000:18:00", Message: "Timeout after 6s of waiting for RPC response from GPU0 GSP!"}},
		{"NVRM: Xid (PCI:0000:2b:00): 79, GPU has fallen off the bus.",
			Xid{Code: 79, Bus: "0000:2b:00", Message: "GPU has fallen off the bus."}},
		{"NVRM: Xid (PCI:0000:10:1c): 63, pid=1896, Row Remapper: New row marked for remapping, reset gpu to activate.",
			Xid{Code: 63, Bus: "0000:10:1c", PID: 1896, Message: "Row Remapper: New row marked for remapping, reset gpu to activate."}},
		{"NVRM: Xid (0000:01:00): 3, C 00000005 SC 00000007 M 00001ffc Data ffffffff",
			Xid{Code: 3, Bus: "0000:01:00", Message: "C 00000005 SC 00000007 M 00001ffc Data ffffffff"}},
		{"[ 1936.510087] NVRM: Xid (PCI:0000:01:00): 48, pid=7, name=python, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 2, subpartition 0.\n",
			Xid{Code: 48, Bus: "0000:01:00", PID: 7, Process: "python", Message: "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 2, subpartition 0."}},
	} {
		got, ok := ParseXid(c.line)
		if !ok || got != c.want {
			t.Errorf("ParseXid(%q)\n = %+v, %v\nwant %+v", c.line, got, ok, c.want)
		}
	}
	for _, line := range []string{
		"NVRM: GPU at PCI:0000:2b:00: GPU-0b11d014-1685-04bd-26ed-5fc0bc1c44ae",
		"NVRM: GPU 0000:2b:00.0: GPU has fallen off the bus.",
		"NVRM: Xid (PCI:0000:2b:00): 0, nothing",
		"NVRM: Xid (PCI:zz:2b:00): 79, GPU has fallen off the bus.",
		"python[123]: NVRM Xid 79 in a program's own message",
		"",
	} {
		if e, ok := ParseXid(line); ok {
			t.Errorf("ParseXid(%q) = %+v, want no Xid", line, e)
		}
	}
}

func TestSameGPU(t *testing.T) {
	for _, c := range []struct {
		nvml, xid string
		want      bool
	}{
		{"00000000:3B:00.0", "0000:3b:00", true},
		{"00000001:3B:00.0", "0000:3b:00", false},
		{"00000000:3B:00.0", "0000:3c:00", false},
		{"00000000:3B:01.0", "0000:3b:00", false},
		{"", "0000:3b:00", false},
		{"00000000:3B:00.0", "garbage", false},
	} {
		if got := SameGPU(c.nvml, c.xid); got != c.want {
			t.Errorf("SameGPU(%q, %q) = %v", c.nvml, c.xid, got)
		}
	}
}

// Every Xid of NVIDIA's catalog up to Known has exactly one action, and
// the judgement follows it.
func TestLookup(t *testing.T) {
	seen := map[int]Action{}
	for a, codes := range actions {
		for _, c := range codes {
			if prev, dup := seen[c]; dup {
				t.Errorf("Xid %d is under %s and %s", c, prev, a)
			}
			seen[c] = a
		}
	}
	for c := 1; c <= Known; c++ {
		if _, ok := seen[c]; !ok {
			t.Errorf("Xid %d has no action", c)
		}
	}
	for code, want := range map[int]Severity{79: Hardware, 48: Hardware, 95: Hardware, 119: Hardware, 74: Hardware, 64: Hardware,
		13: Benign, 31: Benign, 43: Benign, 45: Benign, 63: Benign, 94: Notable, 154: Notable, Known + 1: Notable} {
		in := LookupXid(code)
		if in.Severity != want || in.Words.IsZero() {
			t.Errorf("LookupXid(%d) = %+v, want severity %d", code, in, want)
		}
	}
	if in := LookupXid(Known + 1); in.Action != "" || !strings.Contains(in.Words.String(), "not in gpurent's table") {
		t.Errorf("unknown Xid: %+v", in)
	}
}

// records is a kernel log as /dev/kmsg gives it: each record a header and
// message, then the device's continuation lines.
const records = `6,0,0,-;Linux version 6.8.0
4,1201,5000000,-;NVRM: GPU at PCI:0000:18:00: GPU-00000000-0000-0000-0000-000000000001
4,1202,6500000,-;NVRM: Xid (PCI:0000:18:00): 79, pid=1234, name=python, GPU has fallen off the bus.
 SUBSYSTEM=pci
 DEVICE=+pci:0000:18:00.0
12,1203,7000000,-;NVRM: Xid (PCI:0000:18:00): 48, written into the log by a program, not the driver
4,1204,8000000,-;NVRM: Xid (PCI:0000:19:00): 13, pid=7, name=train, Graphics Exception
`

func writeLog(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kmsg")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestReadAll(t *testing.T) {
	path := writeLog(t, records)
	l, err := ReadAll(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Xids) != 2 || l.Xids[0].Code != 79 || l.Xids[1].Code != 13 || l.Xids[0].PID != 1234 {
		t.Fatalf("events %+v", l.Xids)
	}
	if d := l.Xids[0].At.Sub(l.Boot); d != 6500*time.Millisecond {
		t.Errorf("the Xid 79 came %v after boot, want 6.5s", d)
	}
	if l.Lost || !l.Since.Equal(l.Boot) {
		t.Errorf("since %v, boot %v, lost %v: the log reaches back to the boot", l.Since, l.Boot, l.Lost)
	}
	if up := time.Since(l.Boot); up <= 0 {
		t.Errorf("booted %v from now", up)
	}

	// A log whose oldest record is not the first has lost its start.
	l, err = ReadAll(writeLog(t, records[strings.Index(records, "4,1201"):]))
	if err != nil || !l.Lost || l.Since.Sub(l.Boot) != 5*time.Second {
		t.Errorf("wrapped log: %v, lost %v, since %v after boot", err, l.Lost, l.Since.Sub(l.Boot))
	}
}

// Read gives what was logged since the last Read, and nothing of what the
// log held before SeekEnd.
func TestReaderFollows(t *testing.T) {
	path := writeLog(t, records)
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.SeekEnd(); err != nil {
		t.Fatal(err)
	}
	if got, err := r.Read(); err != nil || len(got.Xids) != 0 {
		t.Fatalf("after SeekEnd: %v %+v", err, got)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// A record may arrive in two reads of a file: the part waits.
	f.WriteString("3,1205,9000000,-;NVRM: Xid (PCI:0000:18:00): 9")
	if got, err := r.Read(); err != nil || len(got.Xids) != 0 {
		t.Fatalf("half a record: %v %+v", err, got)
	}
	f.WriteString("5, pid=1, name=x, Uncontained\n")
	got, err := r.Read()
	if err != nil || len(got.Xids) != 1 || got.Xids[0].Code != 95 || got.Xids[0].Message != "Uncontained" {
		t.Fatalf("appended: %v %+v", err, got)
	}
	if got, _ := r.Read(); len(got.Xids) != 0 {
		t.Errorf("read twice: %+v", got)
	}
}

func TestOpenMissing(t *testing.T) {
	_, err := Open(filepath.Join(t.TempDir(), "kmsg"))
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "kmsg (a container without it)") {
		t.Errorf("got %v", err)
	}
	// An empty log is no log: "no Xid since boot" would be a false pass.
	_, err = ReadAll(os.DevNull)
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "/dev/null holds no record") {
		t.Errorf("/dev/null: got %v", err)
	}
}
