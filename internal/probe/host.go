package probe

import (
	"bufio"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/gpurent/gpurent/internal/fsspace"
	"github.com/gpurent/gpurent/internal/mounts"
	"github.com/gpurent/gpurent/internal/procfs"
)

// HostOptions tune the host probes.
type HostOptions struct {
	DataDir   string        // directory whose disk is measured; "." when empty
	Window    time.Duration // steal and load sampling window
	DiskBytes int64         // size of the disk test file; 0 skips the disk test
}

// Host gathers HostFacts. It samples /proc/stat over opt.Window and writes
// and reads back opt.DiskBytes in opt.DataDir, bypassing the page cache.
func Host(ctx context.Context, opt HostOptions) HostFacts {
	h := HostFacts{Errors: map[string]string{}}
	fail := func(what string, err error) { h.Errors[what] = err.Error() }

	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		h.CPUModel = cpuModel(string(b))
	} else {
		fail("cpu_model", err)
	}
	if b, err := os.ReadFile("/sys/devices/system/cpu/online"); err == nil {
		if n, err := countCPUList(strings.TrimSpace(string(b))); err == nil {
			h.OnlineCPUs = n
		} else {
			fail("online_cpus", err)
		}
	} else {
		fail("online_cpus", err)
	}
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		if n, ok := allowedCPUs(string(b)); ok {
			h.AllowedCPUs = n
		}
	}
	if q, err := cgroupQuota(); err == nil {
		h.CPUQuota = q
	} else {
		fail("cpu_quota", err)
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		h.MemTotal, h.MemAvailable = meminfo(string(b))
	} else {
		fail("memory", err)
	}
	if lim, ok := procfs.MemoryLimit("/"); ok {
		v := uint64(lim)
		h.MemLimit = &v
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			if v, err := strconv.ParseFloat(f[0], 64); err == nil {
				h.LoadAvg1 = &v
			}
		}
	}

	dir := opt.DataDir
	if dir == "" {
		dir = "."
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	h.DataDir = dir
	if b, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		h.FSType, h.FSSource = mountFor(string(b), dir)
		h.FSNetwork = mounts.NetworkFS(h.FSType)
	} else {
		fail("filesystem", err)
	}
	if free, size, err := fsspace.Of(dir); err == nil {
		h.FSFree, h.FSSize = &free, &size
	} else {
		fail("fs_free", err)
	}
	if _, size, err := fsspace.Of("/dev/shm"); err == nil {
		h.ShmSize = &size
	} else {
		fail("shm", err)
	}

	// Steal and busy time over the window; the disk test runs meanwhile
	// would disturb it, so it runs after.
	before, err := readCPUTimes()
	if err != nil {
		fail("steal", err)
	} else {
		select {
		case <-ctx.Done():
		case <-time.After(opt.Window):
		}
		after, err := readCPUTimes()
		if err != nil {
			fail("steal", err)
		} else if steal, busy, ok := cpuShares(before, after); ok {
			h.StealPct, h.BusyPct = &steal, &busy
		}
	}

	if opt.DiskBytes > 0 && ctx.Err() == nil {
		// The test file must not fill the disk the user's training writes
		// its checkpoints to: at most half of what is free.
		if h.FSFree != nil && float64(opt.DiskBytes) > float64(*h.FSFree)/2 {
			fail("disk", fmt.Errorf("not run: its %d MB would take more than half the free space; a smaller --disk-mb measures it", opt.DiskBytes>>20))
		} else if w, r, method, err := diskThroughput(dir, opt.DiskBytes); err != nil {
			fail("disk", err)
		} else {
			h.DiskWriteMBs, h.DiskReadMBs, h.DiskTestMethod = &w, &r, method
			h.DiskTestBytes = opt.DiskBytes
		}
	}
	if len(h.Errors) == 0 {
		h.Errors = nil
	}
	return h
}

// cpuModel names the CPU from /proc/cpuinfo: x86's "model name", else,
// on arm64, where the kernel gives only the implementer and part numbers,
// the core those numbers stand for. The numbers name ARM's core design, not
// the chip: a GH200's Grace, whose lscpu says Neoverse-V2 (a public GH200
// machine's lscpu output, hu-po/warp-ik docs/specs/arm-gh200.md, read
// 2026-12-03), reads "ARM Neoverse-V2".
func cpuModel(cpuinfo string) string {
	var impl, part string
	for _, line := range strings.Split(cpuinfo, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "model name":
			return strings.TrimSpace(v)
		case "CPU implementer":
			if impl == "" {
				impl = strings.TrimSpace(v)
			}
		case "CPU part":
			if part == "" {
				part = strings.TrimSpace(v)
			}
		}
	}
	if impl == "" {
		return ""
	}
	return armCPUName(impl, part)
}

// armCPUName decodes an arm64 "CPU implementer" and "CPU part" pair: the
// server cores GPU machines are built on, from util-linux's lscpu tables
// (sys-utils/lscpu-arm.c, read 2026-12-03), which gather them from ARM's
// manuals and the kernel's arch/arm64/include/asm/cputype.h. Others are
// given by their numbers, never guessed.
func armCPUName(impl, part string) string {
	i, errI := strconv.ParseUint(strings.TrimPrefix(impl, "0x"), 16, 16)
	p, errP := strconv.ParseUint(strings.TrimPrefix(part, "0x"), 16, 16)
	type key struct{ impl, part uint64 }
	vendors := map[uint64]string{0x41: "ARM", 0x43: "Cavium", 0x46: "Fujitsu", 0x48: "HiSilicon",
		0x4e: "NVIDIA", 0x50: "APM", 0x51: "Qualcomm", 0x70: "Phytium", 0xc0: "Ampere"}
	parts := map[key]string{
		{0x41, 0xd08}: "Cortex-A72",
		{0x41, 0xd0c}: "Neoverse-N1",
		{0x41, 0xd40}: "Neoverse-V1",
		{0x41, 0xd49}: "Neoverse-N2",
		{0x41, 0xd4f}: "Neoverse-V2",
		{0x43, 0x0af}: "ThunderX2-99xx",
		{0x46, 0x001}: "A64FX",
		{0x48, 0xd01}: "Kunpeng-920",
		{0x4e, 0x004}: "Carmel",
		{0x70, 0x662}: "FTC662",
		{0x70, 0x663}: "FTC663",
		{0xc0, 0xac3}: "Ampere-1",
		{0xc0, 0xac4}: "Ampere-1a",
	}
	if errI != nil {
		return fmt.Sprintf("ARM CPU (implementer %s, part %s)", impl, part)
	}
	vendor, ok := vendors[i]
	if !ok {
		vendor = "ARM CPU"
	}
	if name, ok := parts[key{i, p}]; ok && errP == nil {
		return vendor + " " + name
	}
	return fmt.Sprintf("%s (implementer %#x, part %s)", vendor, i, part)
}

// allowedCPUs counts the CPUs in /proc/self/status's Cpus_allowed_list:
// the affinity a container's cpuset gives its processes.
func allowedCPUs(status string) (int, bool) {
	for line := range strings.Lines(status) {
		if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			n, err := countCPUList(strings.TrimSpace(v))
			return n, err == nil && n > 0
		}
	}
	return 0, false
}

// countCPUList counts a kernel CPU list such as "0-3,8,10-11".
func countCPUList(s string) (int, error) {
	n := 0
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return 0, fmt.Errorf("cpu list %q: %w", s, err)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return 0, fmt.Errorf("cpu list %q: bad range %q", s, part)
			}
		}
		n += b - a + 1
	}
	return n, nil
}

// cgroupQuota reads the CPU limit of this process's cgroup: cgroup v2's
// cpu.max, else v1's cfs quota. nil means unlimited.
func cgroupQuota() (*float64, error) {
	if b, err := os.ReadFile("/sys/fs/cgroup/cpu.max"); err == nil {
		return parseCPUMax(string(b))
	}
	q, errQ := os.ReadFile("/sys/fs/cgroup/cpu/cpu.cfs_quota_us")
	p, errP := os.ReadFile("/sys/fs/cgroup/cpu/cpu.cfs_period_us")
	if errQ != nil || errP != nil {
		return nil, nil // no cgroup CPU controller visible: no limit known
	}
	return parseCPUMax(strings.TrimSpace(string(q)) + " " + strings.TrimSpace(string(p)))
}

// parseCPUMax parses "max 100000" or "400000 100000" (quota, period in µs);
// v1's "-1" quota is unlimited too.
func parseCPUMax(s string) (*float64, error) {
	f := strings.Fields(s)
	if len(f) != 2 {
		return nil, fmt.Errorf("cpu.max %q: want quota and period", strings.TrimSpace(s))
	}
	if f[0] == "max" || f[0] == "-1" {
		return nil, nil
	}
	q, err1 := strconv.ParseFloat(f[0], 64)
	p, err2 := strconv.ParseFloat(f[1], 64)
	if err1 != nil || err2 != nil || p <= 0 || q <= 0 {
		return nil, fmt.Errorf("cpu.max %q: not numbers", strings.TrimSpace(s))
	}
	v := q / p
	return &v, nil
}

func meminfo(s string) (total, avail uint64) {
	for _, line := range strings.Split(s, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		v, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			continue
		}
		switch f[0] {
		case "MemTotal:":
			total = v * 1024
		case "MemAvailable:":
			avail = v * 1024
		}
	}
	return total, avail
}

// mountFor finds the mount holding dir in /proc/self/mountinfo: the longest
// mount point that is a prefix of dir. Fields: ... mountpoint ... - fstype source.
func mountFor(mountinfo, dir string) (fstype, source string) {
	best := -1
	for _, line := range strings.Split(mountinfo, "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		f := strings.Fields(pre)
		g := strings.Fields(post)
		if len(f) < 5 || len(g) < 2 {
			continue
		}
		mp := mounts.Unescape(f[4])
		if (dir == mp || strings.HasPrefix(dir, strings.TrimSuffix(mp, "/")+"/") || mp == "/") && len(mp) >= best {
			best = len(mp)
			fstype, source = g[0], g[1]
		}
	}
	return fstype, source
}

type cpuTimes struct{ total, idle, steal uint64 }

// CPUTimes reads this machine's cumulative CPU time from /proc/stat, in
// clock ticks: all of it, and the part the hypervisor gave to other guests
// (steal).
func CPUTimes() (total, steal uint64, err error) {
	t, err := readCPUTimes()
	return t.total, t.steal, err
}

func readCPUTimes() (cpuTimes, error) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return cpuTimes{}, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if sc.Scan() {
		return parseCPULine(sc.Text())
	}
	return cpuTimes{}, errors.New("/proc/stat is empty")
}

// parseCPULine reads the aggregate "cpu" line of /proc/stat: user nice
// system idle iowait irq softirq steal guest guest_nice (proc(5)); guest
// time is already counted in user, so it is not added again.
func parseCPULine(line string) (cpuTimes, error) {
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return cpuTimes{}, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	var v [8]uint64
	for i := range v {
		x, err := strconv.ParseUint(f[i+1], 10, 64)
		if err != nil {
			return cpuTimes{}, fmt.Errorf("/proc/stat: %w", err)
		}
		v[i] = x
	}
	t := cpuTimes{idle: v[3] + v[4], steal: v[7]}
	for _, x := range v {
		t.total += x
	}
	return t, nil
}

// cpuShares is steal and busy (non-idle, non-steal) time as percentages of
// all CPU time between two readings.
func cpuShares(a, b cpuTimes) (steal, busy float64, ok bool) {
	if b.total <= a.total {
		return 0, 0, false
	}
	d := float64(b.total - a.total)
	steal = float64(b.steal-a.steal) / d * 100
	busy = float64((b.total-a.total)-(b.idle-a.idle)-(b.steal-a.steal)) / d * 100
	return steal, busy, true
}

// diskThroughput writes n random bytes to a temporary file in dir and reads
// them back, with O_DIRECT so the page cache cannot flatter the disk. Where
// the file system refuses O_DIRECT (tmpfs, some overlays) it writes, fsyncs,
// asks the kernel to drop the file's pages and reads. The file is removed.
func diskThroughput(dir string, n int64) (writeMBs, readMBs float64, method string, err error) {
	const block = 4 << 20
	buf := alignedBuffer(block)
	if _, err := rand.Read(buf); err != nil {
		return 0, 0, "", err
	}
	n = (n + block - 1) / block * block
	name := filepath.Join(dir, fmt.Sprintf(".gpurent-disktest-%d", os.Getpid()))
	defer os.Remove(name)

	method = "o_direct"
	var f *os.File
	if oDirect != 0 {
		f, err = os.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY|oDirect, 0o600)
	}
	if oDirect == 0 || err != nil {
		method = "fsync+fadvise"
		if f, err = os.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600); err != nil {
			return 0, 0, "", fmt.Errorf("disk test in %s: %w", dir, err)
		}
	}
	start := time.Now()
	for written := int64(0); written < n; written += block {
		if _, err := f.Write(buf); err != nil {
			f.Close()
			return 0, 0, "", fmt.Errorf("disk test write: %w", err)
		}
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return 0, 0, "", fmt.Errorf("disk test fsync: %w", err)
	}
	wsec := time.Since(start).Seconds()
	if method != "o_direct" {
		dropCache(f)
	}
	f.Close()

	flags := os.O_RDONLY
	if method == "o_direct" {
		flags |= oDirect
	}
	f, err = os.OpenFile(name, flags, 0)
	if err != nil {
		return 0, 0, "", fmt.Errorf("disk test read: %w", err)
	}
	defer f.Close()
	start = time.Now()
	var read int64
	for read < n {
		k, err := f.Read(buf)
		read += int64(k)
		if err != nil {
			break
		}
	}
	rsec := time.Since(start).Seconds()
	if read < n {
		return 0, 0, "", fmt.Errorf("disk test read %d of %d bytes", read, n)
	}
	mb := float64(n) / 1e6
	return mb / wsec, mb / rsec, method, nil
}

// alignedBuffer returns n bytes aligned to 4096, as O_DIRECT requires.
func alignedBuffer(n int) []byte {
	const align = 4096
	b := make([]byte, n+align)
	off := int(uintptr(unsafe.Pointer(&b[0])) & (align - 1))
	if off != 0 {
		off = align - off
	}
	return b[off : off+n]
}
