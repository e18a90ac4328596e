package probe

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/gpurent/gpurent/internal/dl"
	"github.com/gpurent/gpurent/internal/mounts"
)

// The Go structs must have the sizes compiled from the real headers
// (abi_reference.md §1.5), or every field after the first is misread.
func TestNVMLStructSizes(t *testing.T) {
	for name, got := range map[string]uintptr{
		"nvmlPciInfo_t":     unsafe.Sizeof(nvmlPciInfo{}),
		"nvmlMemory_v2_t":   unsafe.Sizeof(nvmlMemoryV2{}),
		"nvmlMemory_t":      unsafe.Sizeof(nvmlMemoryV1{}),
		"nvmlUtilization_t": unsafe.Sizeof(nvmlUtilization{}),
		"nvmlSample_t":      unsafe.Sizeof(nvmlSample{}),
	} {
		want := map[string]uintptr{"nvmlPciInfo_t": 68, "nvmlMemory_v2_t": 40, "nvmlMemory_t": 24, "nvmlUtilization_t": 8, "nvmlSample_t": 16}[name]
		if got != want {
			t.Errorf("%s: %d bytes, want %d", name, got, want)
		}
	}
	if off := unsafe.Offsetof(nvmlPciInfo{}.PciDeviceID); off != 28 {
		t.Errorf("pciDeviceId at %d, want 28", off)
	}
	if off := unsafe.Offsetof(nvmlPciInfo{}.BusID); off != 36 {
		t.Errorf("busId at %d, want 36", off)
	}
	if off := unsafe.Offsetof(nvmlMemoryV2{}.Free); off != 24 {
		t.Errorf("nvmlMemory_v2_t.free at %d, want 24", off)
	}
	if nvmlMemoryV2Version != 40|2<<24 {
		t.Error("nvmlMemory_v2 version")
	}
}

// Without NVML's library the loader must say so in words, and GPU must
// report it rather than fail: a library path that does not exist, and the
// loader's search where it finds none (a machine with a driver skips that
// one).
func TestNVMLAbsentFailsCleanly(t *testing.T) {
	for _, lib := range []string{filepath.Join(t.TempDir(), "libnvidia-ml.so.1"), ""} {
		if l, err := dl.Open("libnvidia-ml.so.1"); lib == "" && err == nil {
			l.Close()
			t.Log("this machine has libnvidia-ml.so.1: scripts/gpu-check.sh covers it")
			continue
		}
		n, err := OpenNVML(lib)
		if err == nil {
			n.Close()
			t.Fatalf("library %q: OpenNVML succeeded without a driver", lib)
		}
		if !IsNoGPU(err) || !IsNoLibrary(err) || !strings.Contains(err.Error(), "libnvidia-ml.so.1") || !strings.Contains(err.Error(), "no NVIDIA GPU was found") {
			t.Errorf("library %q: error %q", lib, err)
		}
		g := GPU(context.Background(), GPUOptions{Library: lib, Window: time.Millisecond})
		if g.Available || g.Error == "" || g.Devices == nil {
			t.Errorf("library %q: facts without a driver: %+v", lib, g)
		}
	}
}

func TestProcessStride(t *testing.T) {
	mk := func(written, size int) []byte {
		b := make([]byte, size)
		for i := range b {
			b[i] = 0xA5
		}
		for i := 0; i < written; i++ {
			b[i] = 0
		}
		return b
	}
	for _, tc := range []struct {
		fn      string
		written int
		n, want int
	}{
		{"nvmlDeviceGetComputeRunningProcesses_v3", 48, 2, 24},
		{"nvmlDeviceGetComputeRunningProcesses_v3", 64, 2, 32},
		{"nvmlDeviceGetComputeRunningProcesses_v3", 32, 2, 16},
		{"nvmlDeviceGetComputeRunningProcesses_v2", 24, 1, 24},
		{"nvmlDeviceGetComputeRunningProcesses", 32, 2, 16},
	} {
		if got := processStride(tc.fn, mk(tc.written, 32*(tc.n+4)), tc.n); got != tc.want {
			t.Errorf("%s wrote %d bytes for %d: stride %d, want %d", tc.fn, tc.written, tc.n, got, tc.want)
		}
	}
}

func TestClockEventNames(t *testing.T) {
	got := strings.Join(ClockEventNames(0x1|0x4|0x40), ",")
	if got != "gpu_idle,sw_power_cap,hw_thermal_slowdown" {
		t.Errorf("got %s", got)
	}
	if len(ClockEventNames(0)) != 0 {
		t.Error("no bits, no names")
	}
}

func TestParsers(t *testing.T) {
	if n, err := countCPUList("0-3,8,10-11"); err != nil || n != 7 {
		t.Errorf("countCPUList: %d %v", n, err)
	}
	if _, err := countCPUList("3-1"); err == nil {
		t.Error("bad range accepted")
	}
	status := "Name:\tgpurent\nCpus_allowed:\tff00\nCpus_allowed_list:\t8-15\nMems_allowed_list:\t0\n"
	if n, ok := allowedCPUs(status); !ok || n != 8 {
		t.Errorf("allowedCPUs: %d %v", n, ok)
	}
	if _, ok := allowedCPUs("Name:\tgpurent\n"); ok {
		t.Error("allowedCPUs without the line")
	}
	if q, err := parseCPUMax("400000 100000\n"); err != nil || q == nil || *q != 4 {
		t.Errorf("cpu.max: %v %v", q, err)
	}
	if q, err := parseCPUMax("max 100000"); err != nil || q != nil {
		t.Errorf("unlimited: %v %v", q, err)
	}
	// user nice system idle iowait irq softirq steal: 25% steal, 25% busy.
	a, _ := parseCPULine("cpu  100 0 0 100 0 0 0 0 0 0")
	b, err := parseCPULine("cpu  150 0 0 200 0 0 0 50 0 0")
	if err != nil {
		t.Fatal(err)
	}
	if steal, busy, ok := cpuShares(a, b); !ok || steal != 25 || busy != 25 {
		t.Errorf("steal %v busy %v", steal, busy)
	}
	mi := "1 0 0:1 / / rw - ext4 /dev/vda rw\n2 1 0:2 / /data rw - nfs4 server:/export rw\n3 1 0:3 / /data/x\\040y rw - fuse.s3fs s3fs rw\n"
	for dir, want := range map[string]string{"/home": "ext4", "/data/run": "nfs4", "/data/x y/z": "fuse.s3fs", "/datax": "ext4"} {
		if typ, _ := mountFor(mi, dir); typ != want {
			t.Errorf("mountFor(%s) = %s, want %s", dir, typ, want)
		}
	}
	if !mounts.NetworkFS("nfs4") || !mounts.NetworkFS("fuse.s3fs") || mounts.NetworkFS("overlay") || mounts.NetworkFS("ext4") {
		t.Error("networkFS")
	}
	total, avail := meminfo("MemTotal:       16384 kB\nMemFree: 1 kB\nMemAvailable:    8192 kB\n")
	if total != 16384*1024 || avail != 8192*1024 {
		t.Errorf("meminfo %d %d", total, avail)
	}
}

// An arm64 /proc/cpuinfo has no "model name": the implementer and part
// numbers name the core. The first input has the shape the arm64 kernel
// prints, one block per CPU (Features shortened), with a Grace CPU's
// numbers: ARM's implementer code and the Neoverse V2 part.
func TestCPUModel(t *testing.T) {
	grace := "processor\t: 0\nBogoMIPS\t: 2000.00\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics\n" +
		"CPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x0\nCPU part\t: 0xd4f\nCPU revision\t: 0\n\n" +
		"processor\t: 1\nCPU implementer\t: 0x41\nCPU part\t: 0xd4f\n"
	for _, c := range []struct{ in, want string }{
		{"processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\n", "Intel(R) Xeon(R) Platinum 8480+"},
		{grace, "ARM Neoverse-V2"},
		{"CPU implementer\t: 0x48\nCPU part\t: 0xd01\n", "HiSilicon Kunpeng-920"},
		{"CPU implementer\t: 0xc0\nCPU part\t: 0xac3\n", "Ampere Ampere-1"},
		// A core the table lacks, and a vendor it lacks: numbers, not a guess.
		{"CPU implementer\t: 0x41\nCPU part\t: 0xd84\n", "ARM (implementer 0x41, part 0xd84)"},
		{"CPU implementer\t: 0x6d\nCPU part\t: 0xd49\n", "ARM CPU (implementer 0x6d, part 0xd49)"},
		{"CPU implementer\t: bogus\nCPU part\t: 0xd49\n", "ARM CPU (implementer bogus, part 0xd49)"},
		{"processor\t: 0\n", ""},
	} {
		if got := cpuModel(c.in); got != c.want {
			t.Errorf("cpuModel(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// The host probes run for real on the test machine.
func TestHostForReal(t *testing.T) {
	dir := t.TempDir()
	h := Host(context.Background(), HostOptions{DataDir: dir, Window: 200 * time.Millisecond, DiskBytes: 8 << 20})
	if h.OnlineCPUs < 1 || h.MemTotal == 0 || h.MemAvailable == 0 || h.MemAvailable > h.MemTotal {
		t.Errorf("cpus %d mem %d/%d", h.OnlineCPUs, h.MemAvailable, h.MemTotal)
	}
	if h.StealPct == nil || *h.StealPct < 0 || *h.StealPct > 100 || h.BusyPct == nil {
		t.Errorf("steal %v busy %v (errors %v)", h.StealPct, h.BusyPct, h.Errors)
	}
	if h.FSType == "" || h.FSFree == nil {
		t.Errorf("fs %q free %v", h.FSType, h.FSFree)
	}
	if h.DiskWriteMBs == nil || *h.DiskWriteMBs <= 0 || h.DiskReadMBs == nil || *h.DiskReadMBs <= 0 || h.DiskTestMethod == "" {
		t.Errorf("disk: %v %v %q (errors %v)", h.DiskWriteMBs, h.DiskReadMBs, h.DiskTestMethod, h.Errors)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 0 {
		t.Errorf("disk test left %d files behind", len(entries))
	}
}

// A disk test bigger than half the free space is not run: a typo in
// --disk-mb must not fill the disk the training writes its checkpoints to.
func TestHostDiskTestLeavesFreeSpace(t *testing.T) {
	dir := t.TempDir()
	h := Host(context.Background(), HostOptions{DataDir: dir, Window: time.Millisecond, DiskBytes: 1 << 62})
	if h.FSFree == nil {
		t.Skip("free space unknown here:", h.Errors)
	}
	if e := h.Errors["disk"]; !strings.HasPrefix(e, "not run: its 4398046511104 MB would take more than half the free space") || h.DiskWriteMBs != nil {
		t.Errorf("disk error %q, write %v", e, h.DiskWriteMBs)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("a file was written: %v", entries)
	}
}

func TestSharingFake(t *testing.T) {
	root := t.TempDir()
	write := func(p, s string) {
		full := filepath.Join(root, p)
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("/etc/ld.so.preload", "# comment\n/usr/local/vgpu/libvgpu.so\n")
	write("/proc/self/maps", "7f00-7f01 r-xp 00000000 08:01 1 /usr/local/vgpu/libvgpu.so\n7f02-7f03 r-xp 00000000 08:01 2 /usr/lib/libc.so.6\n")
	write("/tmp/nvidia-mps/control", "")
	write("/.dockerenv", "")
	write("/proc/cpuinfo", "flags\t\t: fpu vme hypervisor sse\n")
	env := map[string]string{"LD_PRELOAD": "/x/libvgpu.so", "CUDA_DEVICE_MEMORY_LIMIT": "8g", "CUDA_VISIBLE_DEVICES": "0"}
	s := Sharing(Environ{Root: root, Arch: "amd64", Lookup: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	if s.LDPreload != "/x/libvgpu.so" || len(s.LDSoPreload) != 1 || len(s.MappedInterposers) != 1 || s.CUDAEnv["CUDA_DEVICE_MEMORY_LIMIT"] != "8g" ||
		s.MPSPipeDirectory != "/tmp/nvidia-mps" || s.Container != "docker" || !s.Hypervisor || s.HypervisorUnknown != "" || s.MapsUnread || s.CUDAVisibleDevices == nil {
		t.Errorf("%+v", s)
	}
}

// The hypervisor flag tells of a VM only on x86 and only when
// /proc/cpuinfo is read; elsewhere the facts say why it tells nothing.
func TestSharingHypervisorUnknown(t *testing.T) {
	root := t.TempDir()
	none := func(string) (string, bool) { return "", false }
	if s := Sharing(Environ{Root: root, Arch: "amd64", Lookup: none}); s.Hypervisor || s.HypervisorUnknown != "/proc/cpuinfo not read" || !s.MapsUnread {
		t.Errorf("no /proc: hypervisor %v, unknown %q, maps unread %v", s.Hypervisor, s.HypervisorUnknown, s.MapsUnread)
	}
	os.MkdirAll(filepath.Join(root, "proc"), 0o755)
	if err := os.WriteFile(filepath.Join(root, "proc/cpuinfo"), []byte("processor\t: 0\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32\nCPU implementer\t: 0x41\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if s := Sharing(Environ{Root: root, Arch: "arm64", Lookup: none}); s.Hypervisor || s.HypervisorUnknown != "arm64 CPUs have no hypervisor flag" {
		t.Errorf("arm64: hypervisor %v, unknown %q", s.Hypervisor, s.HypervisorUnknown)
	}
	if s := Sharing(Environ{Root: root, Arch: "amd64", Lookup: none}); s.Hypervisor || s.HypervisorUnknown != "" {
		t.Errorf("amd64 without the flag: hypervisor %v, unknown %q", s.Hypervisor, s.HypervisorUnknown)
	}
}

func TestSharingForReal(t *testing.T) {
	s := Sharing(RealEnviron())
	for _, m := range s.MappedInterposers {
		t.Errorf("this test process maps an interposer: %s", m)
	}
}

func FuzzHostParsers(f *testing.F) {
	f.Add("0-3,8", "400000 100000", "cpu  1 2 3 4 5 6 7 8 9 10", "1 0 0:1 / / rw - ext4 /dev/vda rw")
	f.Add("", "max", "cpu", "- -")
	f.Fuzz(func(t *testing.T, cpus, cpuMax, stat, mounts string) {
		if n, err := countCPUList(cpus); err == nil && n < 1 {
			t.Fatalf("countCPUList(%q) = %d without error", cpus, n)
		}
		if q, err := parseCPUMax(cpuMax); err == nil && q != nil && !(*q > 0) {
			t.Fatalf("parseCPUMax(%q) = %v", cpuMax, *q)
		}
		if a, err := parseCPULine(stat); err == nil {
			if s, b, ok := cpuShares(cpuTimes{}, a); ok && (s < 0 || b < -1e-9 || s > 100 || b > 100+1e-9) {
				t.Fatalf("shares %v %v from %q", s, b, stat)
			}
		}
		mountFor(mounts, "/work")
	})
}

// Torch reads version.py files under the usual Python prefixes of a root,
// each install once, without Python.
func TestTorch(t *testing.T) {
	root := t.TempDir()
	write := func(p, body string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("opt/conda/lib/python3.11/site-packages/torch/version.py",
		"from typing import Optional\n__version__ = '2.9.0+cu130'\ndebug = False\ncuda: Optional[str] = '13.0'\ngit_version = 'x'\nhip: Optional[str] = None\n")
	write("root/miniconda3/envs/ft/lib/python3.10/site-packages/torch/version.py", "__version__ = '1.13.1+cu117'\ndebug = False\ncuda = '11.7'\ngit_version = 'y'\nhip = None\n")
	write("usr/local/lib/python3.12/dist-packages/torch/version.py", "__version__ = '2.7.0+cpu'\ncuda: Optional[str] = None\nhip: Optional[str] = None\n")
	write("venv/lib/python3.12/site-packages/torch/version.py", "__version__ = '2.7.0+rocm6.3'\ncuda: Optional[str] = None\nhip: Optional[str] = '6.3.42131'\n")
	lookup := func(k string) (string, bool) {
		if k == "VIRTUAL_ENV" {
			return "/venv", true
		}
		return "", false
	}
	got := Torch(root, "/root", lookup)
	want := []TorchInstall{
		{Path: "/venv/lib/python3.12/site-packages/torch/version.py", Version: "2.7.0+rocm6.3", HIP: "6.3.42131"},
		{Path: "/opt/conda/lib/python3.11/site-packages/torch/version.py", Version: "2.9.0+cu130", CUDA: "13.0"},
		{Path: "/root/miniconda3/envs/ft/lib/python3.10/site-packages/torch/version.py", Version: "1.13.1+cu117", CUDA: "11.7"},
		{Path: "/usr/local/lib/python3.12/dist-packages/torch/version.py", Version: "2.7.0+cpu"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
}
