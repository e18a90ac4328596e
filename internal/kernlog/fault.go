package kernlog

import (
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/gpurent/gpurent/internal/i18n"
)

// The kinds of Fault.
const (
	MachineCheck = "machine_check"
	Memory       = "memory"
	Disk         = "disk"
	PCIe         = "pcie"
	Filesystem   = "filesystem"
)

// Fault is a hardware error the kernel reported: the kernel lines of one
// kind, level and device, counted, with when the first and the last came
// and the last one's words (a failing disk or link can log thousands).
type Fault struct {
	// Kind: machine_check (a line marked "[Hardware Error]": the CPU's
	// machine check or the firmware's error source, APEI), memory (EDAC's
	// count of memory errors), disk (a block I/O error), pcie (a PCIe or
	// CXL bus error, AER), filesystem (ext4 or XFS found its metadata
	// damaged, or XFS could not read or write it and shut down).
	Kind string `json:"kind"`
	// Level: corrected, uncorrected, fatal, or error where the line says
	// no more.
	Level  string `json:"level"`
	Device string `json:"device,omitempty"` // nvme0n1, 0000:3b:00.0, MC0
	// Count is the lines, or for memory the errors EDAC counted.
	Count   int       `json:"count"`
	First   time.Time `json:"first"`
	Last    time.Time `json:"last"`
	Message string    `json:"message"`
}

// The lines, as the kernel prints them:
//   - HW_ERR, "[Hardware Error]: " (include/linux/printk.h), which the
//     kernel puts before a hardware error for the hardware's vendor to
//     see: x86's machine checks ("mce: [Hardware Error]: Machine check
//     events logged" for corrected ones) and APEI's GHES ("{1}[Hardware
//     Error]: event severity: corrected");
//   - EDAC (drivers/edac/edac_mc.c): "EDAC MC0: 1 CE memory read error on
//     ...", "EDAC MC0: 1 UE ...";
//   - the block layer: "I/O error, dev nvme0n1, sector 2048 op 0x1:(WRITE)
//     ..." (blk_print_req_error; the first word is blk_errors' name of the
//     status: "critical medium", "timeout", "device offline" and the like
//     are the device failing, "critical space allocation" a thin-provisioned
//     disk out of space; "operation not supported", a VM disk refusing a
//     discard, and the transient ones are not counted), and fs/buffer.c's
//     "Buffer I/O error on dev sda1, logical block 0";
//   - PCIe AER (drivers/pci/pcie/aer.c), after the device's driver and
//     address: "pcieport 0000:00:01.0: PCIe Bus Error: severity=Corrected,
//     type=Physical Layer, (Receiver ID)" ("CXL Bus Error" on CXL; since
//     Linux 6.x the PCIe spec's "Correctable", "Uncorrectable (Fatal)");
//   - ext4 (fs/ext4/super.c): "EXT4-fs error (device nvme0n1p1): ...";
//   - XFS, the root file system of Amazon Linux and RHEL images, whose
//     every line is "XFS (dev): ..." (fs/xfs/xfs_message.c), mostly
//     mounts and recoveries; its errors: "Corruption detected. Unmount and
//     run xfs_repair" (xfs_error.c), "Metadata corruption detected at
//     ..." and "Metadata CRC error detected at ..." (its verifiers),
//     "metadata I/O error in ..." (xfs_buf.c: the disk failed a read or
//     write), "log I/O error -5" (xfs_log.c) and "Filesystem has been
//     shut down due to ..." (every later write fails).
var (
	edacLine = regexp.MustCompile(`EDAC (MC\d+): (\d+) (CE|UE) `)
	blkLine  = regexp.MustCompile(`(?:^|: )(?:I/O|critical medium|critical target|critical space allocation|timeout|device offline|protection) error, dev ([^,\s]+), sector \d+`)
	bufLine  = regexp.MustCompile(`^Buffer I/O error on dev ([^,\s]+),`)
	aerLine  = regexp.MustCompile(`([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]): (?:PCIe|CXL) Bus Error: severity=(Correct(?:ed|able)|Uncorrect(?:ed|able) \((?:Non-)?Fatal\))`)
	ext4Line = regexp.MustCompile(`^EXT4-fs error \(device ([^)]+)\)`)
	xfsLine  = regexp.MustCompile(`^XFS \(([^)]+)\): (?:Corruption detected\. Unmount and run xfs_repair|Metadata (?:corruption|CRC error) detected at |metadata I/O error in |log I/O error |Filesystem has been shut down due to )`)
	ghesSev  = regexp.MustCompile(`event severity: (corrected|recoverable|fatal)`)
)

// ParseFault reads a hardware error from one kernel log message; ok is
// false for any other message. First and Last are left zero.
func ParseFault(msg string) (f Fault, ok bool) {
	msg = strings.TrimRight(msg, "\r\n")
	f = Fault{Count: 1, Message: msg, Level: "error"}
	switch {
	case edacLine.MatchString(msg):
		m := edacLine.FindStringSubmatch(msg)
		f.Kind, f.Device = Memory, m[1]
		if n, err := strconv.Atoi(m[2]); err == nil && n > 0 {
			f.Count = n
		}
		f.Level = map[string]string{"CE": "corrected", "UE": "uncorrected"}[m[3]]
	case strings.Contains(msg, "[Hardware Error]: "):
		f.Kind = MachineCheck
		switch m := ghesSev.FindStringSubmatch(msg); {
		case m != nil && m[1] == "recoverable":
			f.Level = "uncorrected"
		case m != nil:
			f.Level = m[1]
		case strings.Contains(msg, "Machine check events logged"):
			f.Level = "corrected"
		}
	case aerLine.MatchString(msg):
		m := aerLine.FindStringSubmatch(msg)
		f.Kind, f.Device = PCIe, strings.ToLower(m[1])
		switch {
		case strings.HasPrefix(m[2], "Correct"):
			f.Level = "corrected"
		case strings.HasSuffix(m[2], "(Non-Fatal)"):
			f.Level = "uncorrected"
		default:
			f.Level = "fatal"
		}
	case blkLine.MatchString(msg) || bufLine.MatchString(msg):
		m := blkLine.FindStringSubmatch(msg)
		if m == nil {
			m = bufLine.FindStringSubmatch(msg)
		}
		if virtualDisk(m[1]) {
			return Fault{}, false
		}
		f.Kind, f.Device = Disk, m[1]
	case ext4Line.MatchString(msg):
		f.Kind, f.Device = Filesystem, ext4Line.FindStringSubmatch(msg)[1]
	case xfsLine.MatchString(msg):
		f.Kind, f.Device = Filesystem, xfsLine.FindStringSubmatch(msg)[1]
	default:
		return Fault{}, false
	}
	return f, true
}

// virtualDisk: the CD-ROM a VM's image attaches, a floppy, a loop device
// (a snap's squashfs) and RAM disks fail reads without a word about the
// machine's own disks.
func virtualDisk(dev string) bool {
	for _, p := range []string{"sr", "fd", "loop", "ram", "zram"} {
		if rest, ok := strings.CutPrefix(dev, p); ok && rest != "" && rest[0] >= '0' && rest[0] <= '9' {
			return true
		}
	}
	return false
}

// AddFault counts f in with the faults of fs of its kind, level and
// device, or adds it.
func AddFault(fs []Fault, f Fault) []Fault {
	for i := range fs {
		g := &fs[i]
		if g.Kind == f.Kind && g.Level == f.Level && g.Device == f.Device {
			g.Count += f.Count
			g.Last, g.Message = f.Last, f.Message
			return fs
		}
	}
	return append(fs, f)
}

// SameDisk says whether a disk fault's device (nvme0n1, sda) is the disk
// of a file system mounted from source (/dev/nvme0n1p1, /dev/sda): the
// device or a partition of it. Linux names a partition by the disk's name
// and a number, with a "p" between when the name ends in a digit (sda1,
// nvme0n1p1): nvme0n10 is another disk than nvme0n1.
func SameDisk(dev, source string) bool {
	src, ok := strings.CutPrefix(source, "/dev/")
	if !ok || dev == "" {
		return false
	}
	part, ok := strings.CutPrefix(src, dev)
	if !ok {
		return false
	}
	if part == "" {
		return true
	}
	if last := dev[len(dev)-1]; last >= '0' && last <= '9' {
		if part, ok = strings.CutPrefix(part, "p"); !ok {
			return false
		}
	}
	_, err := strconv.ParseUint(part, 10, 32)
	return err == nil
}

// Severity weighs a fault for someone renting the machine.
func (f Fault) Severity() Severity {
	switch {
	case f.Kind == Disk || f.Kind == Filesystem:
		return Hardware
	case f.Level == "uncorrected" || f.Level == "fatal":
		return Hardware
	case f.Kind == PCIe && f.Level == "corrected":
		return Benign // the link retried and went on; counted in the evidence
	}
	return Notable
}

// Words say what the fault means, for a person renting the machine.
func (f Fault) Words() i18n.Text {
	switch f.Kind {
	case Memory:
		if f.Level == "uncorrected" {
			return i18n.Textf("the machine's RAM had uncorrectable errors (EDAC): data in host memory was lost")
		}
		return i18n.Textf("the machine's RAM had corrected errors (EDAC): a memory module is failing")
	case MachineCheck:
		if f.Severity() == Hardware {
			return i18n.Textf("the CPU or the firmware reported an uncorrected hardware error ([Hardware Error]: a machine check or APEI)")
		}
		return i18n.Textf("the CPU or the firmware reported hardware errors ([Hardware Error]: a machine check or APEI), corrected so far: a machine that logs them fails more often")
	case PCIe:
		if f.Level == "corrected" {
			return i18n.Textf("a PCIe link corrected errors (AER): a marginal link; a flood of them slows the device behind it")
		}
		return i18n.Textf("a PCIe link lost data (AER): the device behind it (a GPU, an NVMe disk) can fail or fall off the bus")
	case Disk:
		return i18n.Textf("a disk failed reads or writes (block I/O errors): data on it may be lost, and a checkpoint written there may be corrupt")
	case Filesystem:
		return i18n.Textf("a file system (ext4, XFS) found its metadata damaged or could not write it: files on it may be lost")
	}
	return i18n.Textf("a hardware error")
}

// String is how many of what, where: "3 disk I/O errors on nvme0n1".
func (f Fault) String() string {
	what := map[string]string{Memory: "memory error", MachineCheck: "[Hardware Error] line", PCIe: "PCIe bus error",
		Disk: "disk I/O error", Filesystem: "file system error"}[f.Kind]
	if f.Count != 1 {
		what += "s"
	}
	s := strconv.Itoa(f.Count) + " " + f.Level + " " + what
	if f.Level == "error" {
		s = strconv.Itoa(f.Count) + " " + what
	}
	if f.Device != "" {
		s += " on " + f.Device
	}
	return s
}

// Text is String in the reader's language.
func (f Fault) Text() i18n.Text {
	var what i18n.Text
	lvl := i18n.Data(f.Level)
	switch f.Kind {
	case Memory:
		what = f.count(i18n.Textf("%d memory error", f.Count), i18n.Textf("%d memory errors", f.Count), i18n.Textf("%d %s memory error", f.Count, lvl), i18n.Textf("%d %s memory errors", f.Count, lvl))
	case MachineCheck:
		what = f.count(i18n.Textf("%d [Hardware Error] line", f.Count), i18n.Textf("%d [Hardware Error] lines", f.Count), i18n.Textf("%d %s [Hardware Error] line", f.Count, lvl), i18n.Textf("%d %s [Hardware Error] lines", f.Count, lvl))
	case PCIe:
		what = f.count(i18n.Textf("%d PCIe bus error", f.Count), i18n.Textf("%d PCIe bus errors", f.Count), i18n.Textf("%d %s PCIe bus error", f.Count, lvl), i18n.Textf("%d %s PCIe bus errors", f.Count, lvl))
	case Disk:
		what = f.count(i18n.Textf("%d disk I/O error", f.Count), i18n.Textf("%d disk I/O errors", f.Count), i18n.Textf("%d %s disk I/O error", f.Count, lvl), i18n.Textf("%d %s disk I/O errors", f.Count, lvl))
	case Filesystem:
		what = f.count(i18n.Textf("%d file system error", f.Count), i18n.Textf("%d file system errors", f.Count), i18n.Textf("%d %s file system error", f.Count, lvl), i18n.Textf("%d %s file system errors", f.Count, lvl))
	default:
		return i18n.Plain(f.String())
	}
	if f.Device != "" {
		what = i18n.Textf("%s on %s", what, f.Device)
	}
	return what
}

// count picks the form for f's count and level.
func (f Fault) count(one, many, levelOne, levelMany i18n.Text) i18n.Text {
	switch {
	case f.Level == "error" && f.Count == 1:
		return one
	case f.Level == "error":
		return many
	case f.Count == 1:
		return levelOne
	}
	return levelMany
}

// levels are the words String writes for a fault's Level.
var _ = []string{i18n.Key("corrected"), i18n.Key("uncorrected"), i18n.Key("fatal")}
