// Package probe gathers facts about the machine gpurent runs on: the GPUs as
// NVML reports them, the sharing layers around them (MPS, API-hooking
// preloads, limits in the environment), and the host (CPU quota and steal,
// memory, the data disk). Facts are plain data: gathered once, recorded to a
// file, judged anywhere by package bench.
//
// A field that could not be read is nil (or listed in Errors) rather than
// zero, so that "not supported by this card" is never judged as "0".
package probe

import (
	"time"

	"github.com/gpurent/gpurent/internal/compute"
	"github.com/gpurent/gpurent/internal/kernlog"
)

// FactsVersion is the schema version of Facts; docs/bench.md describes it.
const FactsVersion = 1

// MaxFactsSize caps a facts file read back (bench --replay): one of an
// 8-GPU machine with every sample and a long kernel log takes well under
// 1 MiB, and 64 MiB still costs nothing to hold in memory.
const MaxFactsSize = 64 << 20

// Facts is everything bench judges.
type Facts struct {
	Version     int          `json:"version"`
	CollectedAt time.Time    `json:"collected_at"`
	DurationS   float64      `json:"duration_s"` // sampling window
	GPU         GPUFacts     `json:"gpu"`
	Sharing     SharingFacts `json:"sharing"`
	Host        HostFacts    `json:"host"`
	// Torch lists the PyTorch installs found, to judge the CUDA they were
	// built with against the driver's.
	Torch []TorchInstall `json:"torch,omitempty"`
	// Compute holds what the compute probes measured, one entry per device
	// and backend; absent when none ran.
	Compute []compute.Results `json:"compute,omitempty"`
	// KernelLog holds the NVIDIA driver's Xid reports and the kernel's
	// hardware errors since the machine booted; nil in facts recorded
	// before gpurent read them.
	KernelLog *KernelLog `json:"kernel_log,omitempty"`
	// XidEvents holds the Xids NVML's events delivered while bench
	// measured: in a container that cannot read the kernel log, the one
	// sight of a fault the GPU has under load. Nil where NVML's library is
	// not on this machine, and in facts recorded before gpurent read them.
	XidEvents *XidEvents `json:"xid_events,omitempty"`
	// Peers is the GPU-to-GPU copy matrix, on a machine with two or more
	// GPUs; NVLinkErrorsAfter each NVLink's error counters once the
	// measurements were done, to compare with the devices' counters
	// read before them.
	Peers             *compute.Peers `json:"peers,omitempty"`
	NVLinkErrorsAfter []LinkCount    `json:"nvlink_errors_after,omitempty"`
	// AllReduce is NCCL's all-reduce over every GPU, after the copies.
	AllReduce *compute.AllReduce `json:"all_reduce,omitempty"`
}

// XidEvents is what NVML's Xid events said over a span of seconds, or
// why they could not be had (then only Error is set).
type XidEvents struct {
	Error   string        `json:"error,omitempty"`
	Seconds float64       `json:"seconds,omitempty"`
	Xids    []kernlog.Xid `json:"xids,omitempty"`
}

// GPUFacts is what NVML said, or why it could not be asked.
type GPUFacts struct {
	// Available is false when NVML could not be loaded or initialised;
	// Error then says why in words a person understands.
	Available         bool     `json:"available"`
	Error             string   `json:"error,omitempty"`
	DriverVersion     string   `json:"driver_version,omitempty"`
	NVMLVersion       string   `json:"nvml_version,omitempty"`
	CUDADriverVersion int      `json:"cuda_driver_version,omitempty"` // 1000*major + 10*minor
	Devices           []Device `json:"devices"`
	// Pairs join each two GPUs (by index, A < B) with their PCIe path
	// and peer-to-peer status; none with one GPU.
	Pairs []GPUPair `json:"pairs,omitempty"`
	// NICs are the network adapters and each one's path to each GPU
	// (from sysfs), on a machine with two or more GPUs.
	NICs []NIC `json:"nics,omitempty"`
}

// KernelLog is what the kernel log said of the hardware, or why it could
// not be read (then only Error is set).
type KernelLog struct {
	Error string `json:"error,omitempty"`
	kernlog.Log
}

// Device is one physical GPU. Memory is in bytes, power in watts, clocks in
// MHz, temperature in °C, utilization in percent.
type Device struct {
	Index int `json:"index"`
	// Lost: NVML answered GPU_IS_LOST for this GPU: it has fallen off the
	// bus and answers nothing until a reboot.
	Lost           bool   `json:"lost,omitempty"`
	Name           string `json:"name"`
	UUID           string `json:"uuid"`
	BusID          string `json:"bus_id"`
	PCIDeviceID    uint32 `json:"pci_device_id"` // device id << 16 | vendor id (0x10de)
	PCISubsystemID uint32 `json:"pci_subsystem_id"`

	MemoryTotal    *uint64 `json:"memory_total,omitempty"`
	MemoryReserved *uint64 `json:"memory_reserved,omitempty"`
	MemoryUsed     *uint64 `json:"memory_used,omitempty"`
	MemoryFree     *uint64 `json:"memory_free,omitempty"`

	Architecture      string `json:"architecture,omitempty"`       // "hopper", "ampere", ...
	ComputeCapability string `json:"compute_capability,omitempty"` // "9.0"

	MIGEnabled     *bool       `json:"mig_enabled,omitempty"`
	MIGDevices     []MIGDevice `json:"mig_devices,omitempty"`
	Virtualization string      `json:"virtualization,omitempty"` // none, passthrough, vgpu, host_vgpu, host_vsga
	ComputeMode    string      `json:"compute_mode,omitempty"`   // default, exclusive_thread, prohibited, exclusive_process

	Processes []Process `json:"processes"`

	// UtilizationSamples are GPU utilization readings taken while gpurent
	// itself ran nothing on the GPU: any activity is someone else's.
	UtilizationSamples []uint32 `json:"utilization_samples,omitempty"`

	PowerLimitW        *float64 `json:"power_limit_w,omitempty"`         // enforced
	PowerLimitDefaultW *float64 `json:"power_limit_default_w,omitempty"` // the board's default
	PowerLimitMaxW     *float64 `json:"power_limit_max_w,omitempty"`     // the highest settable
	PowerDrawW         *float64 `json:"power_draw_w,omitempty"`

	ClockSMMHz     *uint32 `json:"clock_sm_mhz,omitempty"`
	ClockSMMaxMHz  *uint32 `json:"clock_sm_max_mhz,omitempty"`
	ClockMemMHz    *uint32 `json:"clock_mem_mhz,omitempty"`
	ClockMemMaxMHz *uint32 `json:"clock_mem_max_mhz,omitempty"`
	// ClockEventReasons is NVML's clock event (throttle) bitmask; names are
	// decoded in ClockEvents.
	ClockEventReasons *uint64  `json:"clock_event_reasons,omitempty"`
	ClockEvents       []string `json:"clock_events,omitempty"`
	PerformanceState  *int     `json:"performance_state,omitempty"` // P0 = 0 … P15
	TemperatureC      *int     `json:"temperature_c,omitempty"`

	// PCIe: *Max is the best link of device and slot together, GPUMax the
	// device's own capability. An idle link trains down, so Curr is evidence
	// only.
	PCIeGenCurr   *int `json:"pcie_gen_curr,omitempty"`
	PCIeGenMax    *int `json:"pcie_gen_max,omitempty"`
	PCIeGenGPUMax *int `json:"pcie_gen_gpu_max,omitempty"`
	PCIeWidthCurr *int `json:"pcie_width_curr,omitempty"`
	PCIeWidthMax  *int `json:"pcie_width_max,omitempty"`

	ECCEnabled                *bool   `json:"ecc_enabled,omitempty"`
	ECCUncorrectedVolatile    *uint64 `json:"ecc_uncorrected_volatile,omitempty"`
	ECCCorrectedVolatile      *uint64 `json:"ecc_corrected_volatile,omitempty"`
	ECCUncorrectedAggregate   *uint64 `json:"ecc_uncorrected_aggregate,omitempty"`
	RetiredPagesSBE           *uint32 `json:"retired_pages_sbe,omitempty"`
	RetiredPagesDBE           *uint32 `json:"retired_pages_dbe,omitempty"`
	RetiredPagesPending       *bool   `json:"retired_pages_pending,omitempty"`
	RemappedRowsCorrectable   *uint32 `json:"remapped_rows_correctable,omitempty"`
	RemappedRowsUncorrectable *uint32 `json:"remapped_rows_uncorrectable,omitempty"`
	RemapPending              *bool   `json:"remap_pending,omitempty"`
	RemapFailed               *bool   `json:"remap_failed,omitempty"`

	NVLinksActive *int `json:"nvlinks_active,omitempty"`
	// NVLinks are the GPU's links, each with its state, generation, far
	// end and error counters; Fabric its NVLink fabric registration
	// (NVSwitch boards).
	NVLinks []NVLink `json:"nvlinks,omitempty"`
	Fabric  *Fabric  `json:"fabric,omitempty"`

	// Errors names each read that failed and why ("NOT_SUPPORTED", or a
	// symbol this driver lacks).
	Errors map[string]string `json:"errors,omitempty"`
}

// MIGDevice is one MIG instance carved from a GPU.
type MIGDevice struct {
	Index       int     `json:"index"`
	Name        string  `json:"name"`
	UUID        string  `json:"uuid"`
	MemoryTotal *uint64 `json:"memory_total,omitempty"`
}

// Process is a process holding a context on the GPU. NVML reports host PIDs,
// so a PID is not comparable with this container's own.
type Process struct {
	PID        uint32  `json:"pid"`
	Kind       string  `json:"kind"` // compute or mps
	UsedMemory *uint64 `json:"used_memory,omitempty"`
}

// SharingFacts are the traces a GPU-sharing layer leaves in the process
// environment and on the file system.
type SharingFacts struct {
	LDPreload         string   `json:"ld_preload,omitempty"`
	LDSoPreload       []string `json:"ld_so_preload,omitempty"`      // lines of /etc/ld.so.preload
	MappedInterposers []string `json:"mapped_interposers,omitempty"` // suspicious libraries mapped in this process
	// MapsUnread: /proc/self/maps could not be read, so the libraries
	// mapped into this process were not seen.
	MapsUnread         bool              `json:"maps_unread,omitempty"`
	CUDAEnv            map[string]string `json:"cuda_env,omitempty"`             // CUDA_* variables that share or limit a GPU
	MPSPipeDirectory   string            `json:"mps_pipe_directory,omitempty"`   // where an MPS daemon would listen, if it exists
	CUDAVisibleDevices *string           `json:"cuda_visible_devices,omitempty"` // nil when unset
	Container          string            `json:"container,omitempty"`            // docker, podman, kubernetes, lxc, or empty
	ContainerEvidence  string            `json:"container_evidence,omitempty"`
	Hypervisor         bool              `json:"hypervisor"` // the CPU's hypervisor flag: a VM
	// HypervisorUnknown says why Hypervisor tells nothing: /proc/cpuinfo
	// not read, or a CPU (arm64) that has no such flag. Empty where it does.
	HypervisorUnknown string `json:"hypervisor_unknown,omitempty"`
	DMIProduct        string `json:"dmi_product,omitempty"`
	DMIVendor         string `json:"dmi_vendor,omitempty"`
}

// HostFacts describe the CPU, memory and the data directory's disk.
type HostFacts struct {
	CPUModel   string `json:"cpu_model,omitempty"`
	OnlineCPUs int    `json:"online_cpus"`
	// AllowedCPUs is how many CPUs this process may run on (its affinity:
	// a container's cpuset), which /sys's online list does not show;
	// 0 when unknown.
	AllowedCPUs  int      `json:"allowed_cpus,omitempty"`
	CPUQuota     *float64 `json:"cpu_quota,omitempty"` // cores the cgroup allows; nil when unlimited
	StealPct     *float64 `json:"steal_pct,omitempty"` // of all CPU time over the sampling window
	BusyPct      *float64 `json:"busy_pct,omitempty"`  // non-idle, non-steal CPU time by everyone, of all CPU time
	LoadAvg1     *float64 `json:"load_avg_1,omitempty"`
	MemTotal     uint64   `json:"mem_total"`     // bytes, from /proc/meminfo: the host's, even in a container
	MemAvailable uint64   `json:"mem_available"` // bytes, likewise
	// MemLimit is what the memory cgroup (the container) may use, in
	// bytes; nil when it sets no limit.
	MemLimit *uint64 `json:"mem_limit,omitempty"`

	DataDir        string   `json:"data_dir"`
	FSType         string   `json:"fs_type,omitempty"`
	FSSource       string   `json:"fs_source,omitempty"`
	FSNetwork      bool     `json:"fs_network"`
	FSFree         *uint64  `json:"fs_free,omitempty"` // bytes
	FSSize         *uint64  `json:"fs_size,omitempty"` // bytes: the file system's size as df shows it
	DiskWriteMBs   *float64 `json:"disk_write_mbs,omitempty"`
	DiskReadMBs    *float64 `json:"disk_read_mbs,omitempty"`
	DiskTestBytes  int64    `json:"disk_test_bytes,omitempty"`
	DiskTestMethod string   `json:"disk_test_method,omitempty"` // o_direct, or fsync+fadvise
	// ShmSize is the size of /dev/shm in bytes, where PyTorch's DataLoader
	// workers and NCCL exchange data; nil when unread.
	ShmSize *uint64 `json:"shm_size,omitempty"`
	// Errors names each host probe that failed and why.
	Errors map[string]string `json:"errors,omitempty"`
}

// ReadKernelLog reads the Xid reports and hardware errors in the kernel
// log at path (kernlog.DefaultPath), as facts.
func ReadKernelLog(path string) *KernelLog {
	l, err := kernlog.ReadAll(path)
	if err != nil {
		return &KernelLog{Error: err.Error()}
	}
	return &KernelLog{Log: l}
}
