package kernlog

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// The lines are as the kernel prints them (fault.go names each source):
// machine checks and APEI under HW_ERR, EDAC's counts, the block layer's
// I/O errors in the forms of kernel 4.x (print_req_error), 5.x
// (blk_update_request) and 6.x (no caller), fs/buffer.c's, PCIe AER with
// the device's driver and address in front, ext4's and XFS's errors (and
// none of XFS's mount and recovery lines).
func TestParseFault(t *testing.T) {
	for _, c := range []struct {
		line                string
		kind, level, device string
		count               int
	}{
		{"mce: [Hardware Error]: Machine check events logged", "machine_check", "corrected", "", 1},
		{"mce: [Hardware Error]: CPU 3: Machine Check: 0 Bank 7: cc00008000010090", "machine_check", "error", "", 1},
		{"{1}[Hardware Error]: event severity: recoverable", "machine_check", "uncorrected", "", 1},
		{"{2}[Hardware Error]: event severity: corrected", "machine_check", "corrected", "", 1},
		{"{3}[Hardware Error]: event severity: fatal", "machine_check", "fatal", "", 1},
		{"EDAC MC0: 1 CE memory read error on CPU_SrcID#0_MC#0_Chan#1_DIMM#0 (channel:1 slot:0 page:0x1e5b8f offset:0xc40 grain:32 syndrome:0x0 - err_code:0x0000:0x009f)",
			"memory", "corrected", "MC0", 1},
		{"EDAC MC1: 3 UE memory read error on CPU_SrcID#1_MC#0_Chan#0_DIMM#1 (channel:0 slot:1 page:0x0 offset:0x0 grain:32)", "memory", "uncorrected", "MC1", 3},
		{"I/O error, dev nvme0n1, sector 123456 op 0x1:(WRITE) flags 0x8800 phys_seg 1 prio class 2", "disk", "error", "nvme0n1", 1},
		{"blk_update_request: I/O error, dev sda, sector 2048 op 0x0:(READ) flags 0x0 phys_seg 1 prio class 0", "disk", "error", "sda", 1},
		{"print_req_error: I/O error, dev sdb, sector 77", "disk", "error", "sdb", 1},
		{"critical medium error, dev sdad, sector 2615107192 op 0x0:(READ) flags 0x1000 phys_seg 1 prio class 2", "disk", "error", "sdad", 1},
		{"timeout error, dev nvme1n1, sector 0 op 0x1:(WRITE) flags 0x800 phys_seg 1 prio class 2", "disk", "error", "nvme1n1", 1},
		{"Buffer I/O error on dev sda1, logical block 0, async page read", "disk", "error", "sda1", 1},
		{"pcieport 0000:00:01.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID)", "pcie", "corrected", "0000:00:01.0", 1},
		{"nvidia 0000:3B:00.0: PCIe Bus Error: severity=Uncorrected (Non-Fatal), type=Transaction Layer, (Requester ID)", "pcie", "uncorrected", "0000:3b:00.0", 1},
		{"pcieport 0000:00:03.1: PCIe Bus Error: severity=Uncorrected (Fatal), type=Inaccessible, (Unregistered Agent ID)", "pcie", "fatal", "0000:00:03.1", 1},
		{"pcieport 0000:80:01.1: PCIe Bus Error: severity=Correctable, type=Data Link Layer, (Transmitter ID)", "pcie", "corrected", "0000:80:01.1", 1},
		{"nvme 0000:c1:00.0: PCIe Bus Error: severity=Uncorrectable (Non-Fatal), type=Transaction Layer, (Requester ID)", "pcie", "uncorrected", "0000:c1:00.0", 1},
		{"pcieport 0000:00:03.1: PCIe Bus Error: severity=Uncorrectable (Fatal), type=Transaction Layer, (Receiver ID)", "pcie", "fatal", "0000:00:03.1", 1},
		{"EXT4-fs error (device nvme0n1p1): ext4_find_entry:1455: inode #2: comm python: reading directory lblock 0", "filesystem", "error", "nvme0n1p1", 1},
		{"XFS (nvme1n1): Corruption detected. Unmount and run xfs_repair", "filesystem", "error", "nvme1n1", 1},
		{"XFS (dm-0): Metadata corruption detected at xfs_dinode_verify+0x2a0/0x5b0 [xfs], inode 0x2000081 dinode", "filesystem", "error", "dm-0", 1},
		{"XFS (nvme0n1p1): Metadata CRC error detected at xfs_agf_read_verify+0xd0/0xf0 [xfs], xfs_agf block 0x1 ", "filesystem", "error", "nvme0n1p1", 1},
		{`XFS (sdb): metadata I/O error in "xfs_imap_to_bp+0x5c/0x80 [xfs]" at daddr 0x8a66c0 len 32 error 5`, "filesystem", "error", "sdb", 1},
		{"XFS (sdb): log I/O error -5", "filesystem", "error", "sdb", 1},
		{"XFS (sdb): Filesystem has been shut down due to log error (0x2).", "filesystem", "error", "sdb", 1},
	} {
		f, ok := ParseFault(c.line)
		if !ok || f.Kind != c.kind || f.Level != c.level || f.Device != c.device || f.Count != c.count || f.Message != c.line {
			t.Errorf("ParseFault(%q) = %+v, %v; want %s %s %q ×%d", c.line, f, ok, c.kind, c.level, c.device, c.count)
		}
	}
	for _, line := range []string{
		"I/O error, dev sr0, sector 0 op 0x0:(READ) flags 0x80700 phys_seg 1 prio class 0",
		"I/O error, dev loop3, sector 8 op 0x0:(READ) flags 0x0 phys_seg 1 prio class 0",
		"operation not supported error, dev vda, sector 0 op 0x3:(DISCARD) flags 0x800 phys_seg 1 prio class 0",
		"recoverable transport error, dev sdb, sector 8 op 0x0:(READ) flags 0x0 phys_seg 1 prio class 0",
		"Buffer I/O error on dev fd0, logical block 0, async page read",
		"EXT4-fs (sda1): mounted filesystem with ordered data mode. Quota mode: none.",
		"XFS (nvme0n1p1): Mounting V5 Filesystem 4e9d1e33-8b07-4c4e-9b8a-6e0e0b5c9a11",
		"XFS (nvme0n1p1): Starting recovery (logdev: internal)",
		"XFS (nvme0n1p1): Ending clean mount",
		"XFS (sdb): Unmounting Filesystem 4e9d1e33-8b07-4c4e-9b8a-6e0e0b5c9a11",
		"pcieport 0000:00:01.0: AER: enabled with IRQ 24",
		"python[123]: I told the kernel about an I/O error",
		"",
	} {
		if f, ok := ParseFault(line); ok {
			t.Errorf("ParseFault(%q) = %+v, want none", line, f)
		}
	}
}

func TestFaultSeverity(t *testing.T) {
	for _, c := range []struct {
		kind, level string
		want        Severity
	}{
		{"disk", "error", Hardware}, {"filesystem", "error", Hardware}, {"memory", "uncorrected", Hardware},
		{"memory", "corrected", Notable}, {"machine_check", "corrected", Notable}, {"machine_check", "error", Notable},
		{"machine_check", "fatal", Hardware}, {"pcie", "fatal", Hardware}, {"pcie", "uncorrected", Hardware}, {"pcie", "corrected", Benign},
	} {
		f := Fault{Kind: c.kind, Level: c.level}
		if got := f.Severity(); got != c.want || f.Words().String() == "a hardware error" {
			t.Errorf("%s %s: severity %d (want %d), words %q", c.kind, c.level, got, c.want, f.Words())
		}
	}
	if s := (Fault{Kind: "disk", Level: "error", Device: "nvme0n1", Count: 3, Message: "I/O error"}).String(); s != "3 disk I/O errors on nvme0n1" {
		t.Errorf("String: %s", s)
	}
}

func TestSameDisk(t *testing.T) {
	for _, c := range []struct {
		dev, source string
		want        bool
	}{
		{"nvme0n1", "/dev/nvme0n1p1", true}, {"nvme0n1", "/dev/nvme0n1", true}, {"sda", "/dev/sda1", true}, {"sda1", "/dev/sda1", true},
		{"sda", "/dev/sdab", false}, {"sda", "/dev/sdb1", false}, {"nvme0n1", "/dev/nvme0n10", false}, {"sda", "/dev/sda1x", false}, {"mmcblk0", "/dev/mmcblk0p2", true},
		{"sda", "overlay", false}, {"", "/dev/sda", false}, {"nvme1n1", "/dev/nvme0n1p1", false},
	} {
		if got := SameDisk(c.dev, c.source); got != c.want {
			t.Errorf("SameDisk(%q, %q) = %v", c.dev, c.source, got)
		}
	}
}

// A failing disk logs an error with every write: the log keeps one entry
// a kind, level and device, counted, with the first and the last time;
// and at most MaxXids Xid reports, the newest.
func TestLogAggregates(t *testing.T) {
	var b strings.Builder
	for i := range 3 {
		fmt.Fprintf(&b, "3,%d,%d,-;I/O error, dev nvme0n1, sector %d op 0x1:(WRITE) flags 0x0 phys_seg 1 prio class 2\n", i, (i+1)*1000000, i*8)
	}
	b.WriteString("3,3,4000000,-;EDAC MC0: 2 CE memory read error on DIMM_A1 (channel:0 slot:0 page:0x1 offset:0x0 grain:8 syndrome:0x0)\n")
	for i := range MaxXids + 1 {
		fmt.Fprintf(&b, "4,%d,%d,-;NVRM: Xid (PCI:0000:18:00): 13, pid=%d, name=python, Graphics Exception\n", 4+i, 5000000+i, i+1)
	}
	l, err := ReadAll(writeLog(t, b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Faults) != 2 {
		t.Fatalf("faults %+v", l.Faults)
	}
	d := l.Faults[0]
	if d.Kind != "disk" || d.Count != 3 || d.First.Sub(l.Boot) != time.Second || d.Last.Sub(l.Boot) != 3*time.Second || !strings.Contains(d.Message, "sector 16") {
		t.Errorf("disk %+v", d)
	}
	if m := l.Faults[1]; m.Kind != "memory" || m.Count != 2 || m.Device != "MC0" {
		t.Errorf("memory %+v", m)
	}
	if len(l.Xids) != MaxXids || l.Xids[0].PID != 2 || l.Xids[MaxXids-1].PID != MaxXids+1 {
		t.Errorf("%d Xids kept, the first of pid %d", len(l.Xids), l.Xids[0].PID)
	}
}

// Whatever the kernel log holds, reading it never panics, and what is
// read keeps its invariants: a code over 0, a fault of a known kind with a
// count of at least 1.
func FuzzKernelLog(f *testing.F) {
	f.Add([]byte(records))
	f.Add([]byte("4,1,1,-;EDAC MC0: 2 CE memory read error on DIMM_A1 (channel:0)\n3,2,2,-;I/O error, dev sda, sector 8 op 0x1:(WRITE)\n"))
	f.Add([]byte("4,3,3,-;pcieport 0000:00:01.0: PCIe Bus Error: severity=Correctable, type=Physical Layer, (Receiver ID)\n"))
	f.Add([]byte("6,0,0,-;NVRM: Xid (PCI:0000:18:00 GPU-I:01 GPU-CI:00): 43, pid=9, name=x, Ch 10\n continuation\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var s scanner
		for len(b) > 0 { // in reads of uneven sizes, as a file gives them
			n := min(len(b), 1+int(b[0])%97)
			s.feed(b[:n])
			b = b[n:]
		}
		for _, x := range s.log.Xids {
			if x.Code <= 0 || x.String() == "" {
				t.Errorf("Xid %+v", x)
			}
		}
		for _, fl := range s.log.Faults {
			if fl.Count < 1 || fl.Words().String() == "a hardware error" || fl.String() == "" {
				t.Errorf("fault %+v", fl)
			}
		}
	})
}

// TestFaultTextIsString: the fault's Text says in English what String
// does, for every kind, level and count.
func TestFaultTextIsString(t *testing.T) {
	for _, kind := range []string{Memory, MachineCheck, PCIe, Disk, Filesystem, "other"} {
		for _, level := range []string{"error", "corrected", "uncorrected", "fatal"} {
			for _, n := range []int{1, 3} {
				for _, dev := range []string{"", "nvme0n1"} {
					f := Fault{Kind: kind, Level: level, Count: n, Device: dev}
					if got, want := f.Text().String(), f.String(); got != want {
						t.Errorf("%+v: Text %q, String %q", f, got, want)
					}
				}
			}
		}
	}
}
