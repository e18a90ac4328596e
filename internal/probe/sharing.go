package probe

import (
	"cmp"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"github.com/gpurent/gpurent/internal/i18n"
)

// Environ is where the sharing probes look: an environment and a file
// system root. Tests give a fake one; RealEnviron is the running process.
type Environ struct {
	Lookup func(key string) (string, bool)
	Root   string // "/" for the real machine
	// Arch is the CPU architecture, as Go names it (amd64, arm64): only
	// x86 CPUs show a VM by a flag. Empty: this binary's own.
	Arch string
}

// RealEnviron is this process's environment and the real file system.
func RealEnviron() Environ { return Environ{Lookup: os.LookupEnv, Root: "/", Arch: runtime.GOARCH} }

func (e Environ) read(path string) (string, bool) {
	b, err := os.ReadFile(filepath.Join(e.Root, path))
	return string(b), err == nil
}

func (e Environ) exists(path string) bool {
	_, err := os.Stat(filepath.Join(e.Root, path))
	return err == nil
}

// sharingEnv are variables that attach a process to a shared GPU or limit
// its share: MPS (NVIDIA MPS docs), HAMi-core's limits (its README).
func sharingEnv() []string {
	return []string{
		"CUDA_MPS_PIPE_DIRECTORY", "CUDA_MPS_LOG_DIRECTORY", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE",
		"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "CUDA_DEVICE_MEMORY_LIMIT", "CUDA_DEVICE_SM_LIMIT",
		"CUDA_DEVICE_MEMORY_SHARED_CACHE", "CUDA_INJECTION64_PATH",
	}
}

// interposers are library names that hook the CUDA driver API between an
// application and libcuda (HAMi-core's libvgpu.so), or forward it to a
// remote machine.
func interposers() []string {
	return []string{"libvgpu.so", "libcuda_hook", "libgpushare", "libscuda", "librcuda"}
}

// Sharing gathers the traces of GPU-sharing layers.
func Sharing(e Environ) SharingFacts {
	var s SharingFacts
	s.LDPreload, _ = e.Lookup("LD_PRELOAD")
	if b, ok := e.read("/etc/ld.so.preload"); ok {
		for _, line := range strings.Split(b, "\n") {
			if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
				s.LDSoPreload = append(s.LDSoPreload, line)
			}
		}
	}
	maps, ok := e.read("/proc/self/maps")
	s.MapsUnread = !ok
	if ok {
		seen := map[string]bool{}
		for _, line := range strings.Split(maps, "\n") {
			f := strings.Fields(line)
			if len(f) < 6 {
				continue
			}
			base := filepath.Base(f[len(f)-1])
			for _, name := range interposers() {
				if strings.HasPrefix(base, name) && !seen[f[len(f)-1]] {
					seen[f[len(f)-1]] = true
					s.MappedInterposers = append(s.MappedInterposers, f[len(f)-1])
				}
			}
		}
	}
	for _, k := range sharingEnv() {
		if v, ok := e.Lookup(k); ok {
			if s.CUDAEnv == nil {
				s.CUDAEnv = map[string]string{}
			}
			s.CUDAEnv[k] = v
		}
	}
	dir := "/tmp/nvidia-mps"
	if v, ok := e.Lookup("CUDA_MPS_PIPE_DIRECTORY"); ok && v != "" {
		dir = v
	}
	if e.exists(dir) {
		s.MPSPipeDirectory = dir
	}
	if v, ok := e.Lookup("CUDA_VISIBLE_DEVICES"); ok {
		s.CUDAVisibleDevices = &v
	}
	s.Container, s.ContainerEvidence = container(e)
	arch := cmp.Or(e.Arch, runtime.GOARCH)
	switch info, ok := e.read("/proc/cpuinfo"); {
	case !ok:
		s.HypervisorUnknown = i18n.Key("/proc/cpuinfo not read")
	case arch != "amd64" && arch != "386":
		s.HypervisorUnknown = arch + " CPUs have no hypervisor flag"
	default:
		s.Hypervisor = hasHypervisorFlag(info)
	}
	if v, ok := e.read("/sys/class/dmi/id/product_name"); ok {
		s.DMIProduct = strings.TrimSpace(v)
	}
	if v, ok := e.read("/sys/class/dmi/id/sys_vendor"); ok {
		s.DMIVendor = strings.TrimSpace(v)
	}
	return s
}

func container(e Environ) (kind, evidence string) {
	switch {
	case e.exists("/.dockerenv"):
		return "docker", "/.dockerenv exists"
	case e.exists("/run/.containerenv"):
		return "podman", "/run/.containerenv exists"
	}
	if _, ok := e.Lookup("KUBERNETES_SERVICE_HOST"); ok {
		return "kubernetes", "KUBERNETES_SERVICE_HOST is set"
	}
	if cg, ok := e.read("/proc/1/cgroup"); ok {
		for _, k := range []string{"docker", "kubepods", "containerd", "lxc", "libpod"} {
			if strings.Contains(cg, k) {
				return k, "/proc/1/cgroup mentions " + k
			}
		}
	}
	if v, ok := e.read("/proc/1/environ"); ok && strings.Contains(v, "container=") {
		for _, kv := range strings.Split(v, "\x00") {
			if k, val, _ := strings.Cut(kv, "="); k == "container" {
				return val, "PID 1 has container=" + val
			}
		}
	}
	return "", ""
}

func hasHypervisorFlag(cpuinfo string) bool {
	for _, line := range strings.Split(cpuinfo, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok && strings.TrimSpace(k) == "flags" {
			flags := strings.Fields(v)
			sort.Strings(flags)
			i := sort.SearchStrings(flags, "hypervisor")
			return i < len(flags) && flags[i] == "hypervisor"
		}
	}
	return false
}
