package probe

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unsafe"

	"github.com/gpurent/gpurent/internal/compute"
	"github.com/gpurent/gpurent/internal/dl"
)

// The NVML binding below is written from NVIDIA's nvml.h
// (prototypes, versioned symbol names and struct layouts compiled from
// the real header), not from memory. It loads libnvidia-ml.so.1 at run
// time with purego, so the binary needs no C toolchain and no driver to
// build; where the library is absent, OpenNVML says so in words.

// nvmlReturn codes (abi_reference.md §1.4) that change control flow.
const (
	nvmlSuccess           = 0
	nvmlErrNotSupported   = 3
	nvmlErrNotFound       = 6
	nvmlErrInsufficient   = 7
	nvmlErrDriverNotLoad  = 9
	nvmlErrLibNotFound    = 12
	nvmlErrGPUIsLost      = 15
	nvmlErrRMMismatch     = 18         // LIB_RM_VERSION_MISMATCH
	nvmlMemoryV2Version   = 0x02000028 // sizeof(nvmlMemory_v2_t)=40 | 2<<24
	nvmlNameBuffer        = 96         // NVML_DEVICE_NAME_V2_BUFFER_SIZE
	nvmlUUIDBuffer        = 96         // NVML_DEVICE_UUID_V2_BUFFER_SIZE
	nvmlVersionBuffer     = 80
	nvmlNVLinkMaxLinks    = 18 // 11.8–13.2 headers; the 13.3 header's 36 only adds links newer parts have
	nvmlGPUUtilSamples    = 1  // NVML_GPU_UTILIZATION_SAMPLES
	nvmlClockGraphicsType = 0
	nvmlClockSMType       = 1
	nvmlClockMemType      = 2

	nvmlEnabled            = 1 // NVML_FEATURE_ENABLED, NVML_DEVICE_MIG_ENABLE; an NVLink that is up
	nvmlTemperatureGPU     = 0 // NVML_TEMPERATURE_GPU
	nvmlErrCorrected       = 0 // NVML_MEMORY_ERROR_TYPE_CORRECTED
	nvmlErrUncorrected     = 1 // NVML_MEMORY_ERROR_TYPE_UNCORRECTED
	nvmlVolatileECC        = 0 // NVML_VOLATILE_ECC: since the driver loaded
	nvmlAggregateECC       = 1 // NVML_AGGREGATE_ECC: the card's lifetime
	nvmlRetiredMultipleSBE = 0 // NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS
	nvmlRetiredDBE         = 1 // NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR
)

// nvmlErrorName names return codes for Errors maps and messages.
func nvmlErrorName(r int32) string {
	names := map[int32]string{1: "UNINITIALIZED", 2: "INVALID_ARGUMENT", 3: "NOT_SUPPORTED", 4: "NO_PERMISSION",
		5: "ALREADY_INITIALIZED", 6: "NOT_FOUND", 7: "INSUFFICIENT_SIZE", 8: "INSUFFICIENT_POWER", 9: "DRIVER_NOT_LOADED",
		10: "TIMEOUT", 11: "IRQ_ISSUE", 12: "LIBRARY_NOT_FOUND", 13: "FUNCTION_NOT_FOUND", 14: "CORRUPTED_INFOROM",
		15: "GPU_IS_LOST", 16: "RESET_REQUIRED", 17: "OPERATING_SYSTEM", 18: "LIB_RM_VERSION_MISMATCH", 19: "IN_USE",
		20: "MEMORY", 21: "NO_DATA", 22: "VGPU_ECC_NOT_SUPPORTED", 23: "INSUFFICIENT_RESOURCES", 24: "FREQ_NOT_SUPPORTED",
		25: "ARGUMENT_VERSION_MISMATCH", 26: "DEPRECATED", 27: "NOT_READY", 28: "GPU_NOT_FOUND", 29: "INVALID_STATE",
		30: "RESET_TYPE_NOT_SUPPORTED", 999: "UNKNOWN"}
	if n, ok := names[r]; ok {
		return n
	}
	return fmt.Sprintf("error %d", r)
}

// Go layouts of the NVML structs (abi_reference.md §1.9, sizes checked in
// nvml_test.go).
type nvmlPciInfo struct { // 68 bytes
	BusIDLegacy                                      [16]byte
	Domain, Bus, Device, PciDeviceID, PciSubSystemID uint32
	BusID                                            [32]byte
}

type nvmlMemoryV2 struct { // 40 bytes
	Version                     uint32
	_                           uint32
	Total, Reserved, Free, Used uint64
}

type nvmlMemoryV1 struct{ Total, Free, Used uint64 } // 24 bytes

type nvmlUtilization struct{ GPU, Memory uint32 } // 8 bytes

type nvmlSample struct { // 16 bytes
	TimeStamp uint64
	Value     [8]byte
}

// NVML is an open, initialised libnvidia-ml.
type NVML struct {
	lib *dl.Lib
}

// errNoNVML is returned (wrapped) when the NVIDIA management library cannot
// be loaded: no driver, or a container started without GPU access.
var errNoNVML = errors.New("no NVIDIA GPU was found")

// OpenNVML loads libnvidia-ml.so.1 (or library, a path, where not empty)
// and initialises it. Its error is a sentence for a person.
func OpenNVML(library string) (*NVML, error) {
	names := []string{"libnvidia-ml.so.1", "libnvidia-ml.so"}
	if library != "" {
		names = []string{library}
	}
	lib, err := dl.Open(names...)
	if errors.Is(err, dl.ErrNoLoader) {
		return nil, noLibrary{fmt.Errorf("%w: %v", errNoNVML, err)}
	}
	if err != nil {
		return nil, noLibrary{fmt.Errorf("%w: the NVIDIA driver library libnvidia-ml.so.1 is not on this machine (no NVIDIA driver installed, or a container started without GPU access such as docker --gpus all): %v",
			errNoNVML, err)}
	}
	n := &NVML{lib: lib}
	r, err := n.call("nvmlInit_v2")
	if err != nil {
		lib.Close()
		return nil, fmt.Errorf("%w: libnvidia-ml.so.1 loaded but %v", errNoNVML, err)
	}
	if r != nvmlSuccess {
		lib.Close()
		hint := ""
		switch r {
		case nvmlErrDriverNotLoad:
			hint = " (the kernel driver is not loaded)"
		case nvmlErrRMMismatch:
			hint = " (the driver library and the loaded kernel module are different versions: the driver was updated without a reboot; nvidia-smi says \"Driver/library version mismatch\")"
		}
		return nil, fmt.Errorf("%w: NVML failed to initialise: %s%s", errNoNVML, nvmlErrorName(r), hint)
	}
	return n, nil
}

// IsNoGPU reports whether err means there is no usable NVIDIA GPU.
func IsNoGPU(err error) bool { return errors.Is(err, errNoNVML) }

// noLibrary is OpenNVML's error when NVML's library is not found at all:
// no NVIDIA driver on this machine, as on every CPU machine.
type noLibrary struct{ error }

func (e noLibrary) Unwrap() error { return e.error }

// IsNoLibrary reports whether err means NVML's library is not on this
// machine, rather than found and failing.
func IsNoLibrary(err error) bool {
	var n noLibrary
	return errors.As(err, &n)
}

// Close shuts NVML down and unloads it.
func (n *NVML) Close() {
	n.call("nvmlShutdown")
	n.lib.Close()
}

// call invokes an NVML function returning nvmlReturn_t.
//
//go:uintptrescapes
func (n *NVML) call(name string, args ...uintptr) (int32, error) { return n.lib.Call(name, args...) }

func cstring(b []byte) string {
	if i := indexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

// GPUOptions tune GPU fact gathering.
type GPUOptions struct {
	// Window is how long utilization is sampled while gpurent is idle.
	Window time.Duration
	// Settle is how long readings are not kept before the window begins.
	// A reading is the share of NVML's last sample period (1/6 s to 1 s,
	// by product) in which a kernel ran, so the first ones still cover the
	// work of whatever process used the GPU just before: on an H200, a
	// bench started right after another read 83% once, then 0%. Zero
	// keeps every reading (tests); bench settles UtilizationPeriodMax.
	Settle time.Duration
	// Library is the NVML library to load; empty: libnvidia-ml.so.1 by the
	// dynamic loader's search. Tests point it at a simulated one.
	Library string
}

// GPU gathers GPUFacts through NVML. When NVML is absent it returns
// Available false and the reason; it never fails otherwise: a value that
// cannot be read is left nil and the reason goes to the device's Errors.
func GPU(ctx context.Context, opt GPUOptions) GPUFacts {
	n, err := OpenNVML(opt.Library)
	if err != nil {
		return GPUFacts{Error: err.Error(), Devices: []Device{}}
	}
	defer n.Close()
	return n.Facts(ctx, opt)
}

// Facts reads every device.
func (n *NVML) Facts(ctx context.Context, opt GPUOptions) GPUFacts {
	g := GPUFacts{Available: true, Devices: []Device{}}
	buf := make([]byte, nvmlVersionBuffer)
	if r, err := n.call("nvmlSystemGetDriverVersion", uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf))); err == nil && r == nvmlSuccess {
		g.DriverVersion = cstring(buf)
	}
	buf2 := make([]byte, nvmlVersionBuffer)
	if r, err := n.call("nvmlSystemGetNVMLVersion", uintptr(unsafe.Pointer(&buf2[0])), uintptr(len(buf2))); err == nil && r == nvmlSuccess {
		g.NVMLVersion = cstring(buf2)
	}
	var cuda int32
	if r, err := n.call("nvmlSystemGetCudaDriverVersion_v2", uintptr(unsafe.Pointer(&cuda))); err == nil && r == nvmlSuccess {
		g.CUDADriverVersion = int(cuda)
	}
	var count uint32
	r, err := n.call("nvmlDeviceGetCount_v2", uintptr(unsafe.Pointer(&count)))
	if err != nil || r != nvmlSuccess {
		g.Available = false
		if err != nil {
			g.Error = "NVML could not count GPUs: " + err.Error()
		} else {
			g.Error = "NVML could not count GPUs: " + nvmlErrorName(r)
		}
		return g
	}
	handles := make([]uintptr, count)
	for i := range handles {
		d := Device{Index: i, Errors: map[string]string{}, Processes: []Process{}}
		var h uintptr
		r, err := n.call("nvmlDeviceGetHandleByIndex_v2", uintptr(i), uintptr(unsafe.Pointer(&h)))
		if err != nil || r != nvmlSuccess {
			d.Errors["handle"] = errText(r, err)
			d.Lost = err == nil && r == nvmlErrGPUIsLost
			g.Devices = append(g.Devices, d)
			continue
		}
		handles[i] = h
		n.device(h, &d)
		g.Devices = append(g.Devices, d)
	}
	if len(handles) > 1 {
		g.Pairs = n.pairs(handles)
	}
	n.sampleUtilization(ctx, handles, &g, opt.Window, opt.Settle)
	for i := range g.Devices {
		if len(g.Devices[i].Errors) == 0 {
			g.Devices[i].Errors = nil
		}
	}
	return g
}

func errText(r int32, err error) string {
	if err != nil {
		return err.Error()
	}
	return nvmlErrorName(r)
}

// get calls an NVML getter and records a failure under key. Like call it
// keeps what its arguments point to on the heap and alive: a buffer left
// on the goroutine's stack moves when the stack grows during the call, and
// NVML would write where it was (the simulated NVML caught an empty GPU
// name that way).
//
//go:uintptrescapes
func (n *NVML) get(d *Device, key, name string, args ...uintptr) bool {
	r, err := n.call(name, args...)
	if err != nil || r != nvmlSuccess {
		d.Errors[key] = errText(r, err)
		d.Lost = d.Lost || (err == nil && r == nvmlErrGPUIsLost)
		return false
	}
	return true
}

func (n *NVML) device(h uintptr, d *Device) {
	name := make([]byte, nvmlNameBuffer)
	if n.get(d, "name", "nvmlDeviceGetName", h, uintptr(unsafe.Pointer(&name[0])), uintptr(len(name))) {
		d.Name = cstring(name)
	}
	uuid := make([]byte, nvmlUUIDBuffer)
	if n.get(d, "uuid", "nvmlDeviceGetUUID", h, uintptr(unsafe.Pointer(&uuid[0])), uintptr(len(uuid))) {
		d.UUID = cstring(uuid)
	}
	pci := new(nvmlPciInfo)
	if n.get(d, "pci", "nvmlDeviceGetPciInfo_v3", h, uintptr(unsafe.Pointer(pci))) {
		d.PCIDeviceID, d.PCISubsystemID, d.BusID = pci.PciDeviceID, pci.PciSubSystemID, cstring(pci.BusID[:])
	}
	mem := &nvmlMemoryV2{Version: nvmlMemoryV2Version}
	if n.get(d, "memory", "nvmlDeviceGetMemoryInfo_v2", h, uintptr(unsafe.Pointer(mem))) {
		d.MemoryTotal, d.MemoryReserved, d.MemoryUsed, d.MemoryFree = u64(mem.Total), u64(mem.Reserved), u64(mem.Used), u64(mem.Free)
	} else {
		m1 := new(nvmlMemoryV1)
		if n.get(d, "memory_v1", "nvmlDeviceGetMemoryInfo", h, uintptr(unsafe.Pointer(m1))) {
			d.MemoryTotal, d.MemoryUsed, d.MemoryFree = u64(m1.Total), u64(m1.Used), u64(m1.Free)
			delete(d.Errors, "memory")
		}
	}
	var arch uint32
	if n.get(d, "architecture", "nvmlDeviceGetArchitecture", h, uintptr(unsafe.Pointer(&arch))) {
		d.Architecture = archName(arch)
	}
	var major, minor int32
	if n.get(d, "compute_capability", "nvmlDeviceGetCudaComputeCapability", h, uintptr(unsafe.Pointer(&major)), uintptr(unsafe.Pointer(&minor))) {
		d.ComputeCapability = fmt.Sprintf("%d.%d", major, minor)
	}
	var cur, pend uint32
	r, err := n.call("nvmlDeviceGetMigMode", h, uintptr(unsafe.Pointer(&cur)), uintptr(unsafe.Pointer(&pend)))
	switch {
	case err == nil && r == nvmlSuccess:
		on := cur == nvmlEnabled
		d.MIGEnabled = &on
		if on {
			n.migDevices(h, d)
		}
	case err == nil && r == nvmlErrNotSupported:
		off := false
		d.MIGEnabled = &off // no MIG on this card
	default:
		d.Errors["mig"] = errText(r, err)
	}
	var virt uint32
	if n.get(d, "virtualization", "nvmlDeviceGetVirtualizationMode", h, uintptr(unsafe.Pointer(&virt))) {
		d.Virtualization = virtualizationName(virt)
	}
	var mode uint32
	if n.get(d, "compute_mode", "nvmlDeviceGetComputeMode", h, uintptr(unsafe.Pointer(&mode))) {
		d.ComputeMode = computeModeName(mode)
	}
	d.Processes = append(n.processes(h, d, "compute", "nvmlDeviceGetComputeRunningProcesses"), n.processes(h, d, "mps", "nvmlDeviceGetMPSComputeRunningProcesses")...)

	var mw uint32
	if n.get(d, "power_limit", "nvmlDeviceGetEnforcedPowerLimit", h, uintptr(unsafe.Pointer(&mw))) {
		d.PowerLimitW = watts(mw)
	}
	if n.get(d, "power_limit_default", "nvmlDeviceGetPowerManagementDefaultLimit", h, uintptr(unsafe.Pointer(&mw))) {
		d.PowerLimitDefaultW = watts(mw)
	}
	var minW, maxW uint32
	if n.get(d, "power_limit_max", "nvmlDeviceGetPowerManagementLimitConstraints", h, uintptr(unsafe.Pointer(&minW)), uintptr(unsafe.Pointer(&maxW))) {
		d.PowerLimitMaxW = watts(maxW)
	}
	if n.get(d, "power_draw", "nvmlDeviceGetPowerUsage", h, uintptr(unsafe.Pointer(&mw))) {
		d.PowerDrawW = watts(mw)
	}
	for _, c := range []struct {
		key, fn string
		typ     uintptr
		dst     **uint32
	}{
		{"clock_sm", "nvmlDeviceGetClockInfo", nvmlClockSMType, &d.ClockSMMHz},
		{"clock_sm_max", "nvmlDeviceGetMaxClockInfo", nvmlClockSMType, &d.ClockSMMaxMHz},
		{"clock_mem", "nvmlDeviceGetClockInfo", nvmlClockMemType, &d.ClockMemMHz},
		{"clock_mem_max", "nvmlDeviceGetMaxClockInfo", nvmlClockMemType, &d.ClockMemMaxMHz},
	} {
		v := new(uint32)
		if n.get(d, c.key, c.fn, h, c.typ, uintptr(unsafe.Pointer(v))) {
			*c.dst = v
		}
	}
	reasons, r, err := n.clockEvents(h)
	if err == nil && r == nvmlSuccess {
		d.ClockEventReasons = &reasons
		d.ClockEvents = ClockEventNames(reasons)
	} else {
		d.Errors["clock_events"] = errText(r, err)
	}
	var pstate int32
	if n.get(d, "performance_state", "nvmlDeviceGetPerformanceState", h, uintptr(unsafe.Pointer(&pstate))) && pstate >= 0 && pstate <= 15 {
		p := int(pstate)
		d.PerformanceState = &p
	}
	var temp uint32
	if n.get(d, "temperature", "nvmlDeviceGetTemperature", h, nvmlTemperatureGPU, uintptr(unsafe.Pointer(&temp))) {
		t := int(temp)
		d.TemperatureC = &t
	}
	for _, c := range []struct {
		key, fn string
		dst     **int
	}{
		{"pcie_gen_curr", "nvmlDeviceGetCurrPcieLinkGeneration", &d.PCIeGenCurr},
		{"pcie_gen_max", "nvmlDeviceGetMaxPcieLinkGeneration", &d.PCIeGenMax},
		{"pcie_gen_gpu_max", "nvmlDeviceGetGpuMaxPcieLinkGeneration", &d.PCIeGenGPUMax},
		{"pcie_width_curr", "nvmlDeviceGetCurrPcieLinkWidth", &d.PCIeWidthCurr},
		{"pcie_width_max", "nvmlDeviceGetMaxPcieLinkWidth", &d.PCIeWidthMax},
	} {
		var v uint32
		if n.get(d, c.key, c.fn, h, uintptr(unsafe.Pointer(&v))) {
			x := int(v)
			*c.dst = &x
		}
	}
	n.health(h, d)
}

// health reads ECC, retired pages, remapped rows and NVLink state.
func (n *NVML) health(h uintptr, d *Device) {
	var cur, pend uint32
	if n.get(d, "ecc_mode", "nvmlDeviceGetEccMode", h, uintptr(unsafe.Pointer(&cur)), uintptr(unsafe.Pointer(&pend))) {
		on := cur == nvmlEnabled
		d.ECCEnabled = &on
		for _, c := range []struct {
			key          string
			typ, counter uintptr
			dst          **uint64
		}{
			{"ecc_uncorrected_volatile", nvmlErrUncorrected, nvmlVolatileECC, &d.ECCUncorrectedVolatile},
			{"ecc_corrected_volatile", nvmlErrCorrected, nvmlVolatileECC, &d.ECCCorrectedVolatile},
			{"ecc_uncorrected_aggregate", nvmlErrUncorrected, nvmlAggregateECC, &d.ECCUncorrectedAggregate},
		} {
			v := new(uint64)
			if on && n.get(d, c.key, "nvmlDeviceGetTotalEccErrors", h, c.typ, c.counter, uintptr(unsafe.Pointer(v))) {
				*c.dst = v
			}
		}
	}
	for _, c := range []struct {
		key   string
		cause uintptr
		dst   **uint32
	}{{"retired_pages_sbe", nvmlRetiredMultipleSBE, &d.RetiredPagesSBE}, {"retired_pages_dbe", nvmlRetiredDBE, &d.RetiredPagesDBE}} {
		count := new(uint32) // 0 asks for the count: INSUFFICIENT_SIZE or SUCCESS (none)
		r, err := n.call("nvmlDeviceGetRetiredPages", h, c.cause, uintptr(unsafe.Pointer(count)), 0)
		if err == nil && (r == nvmlSuccess || r == nvmlErrInsufficient) {
			*c.dst = count
		} else {
			d.Errors[c.key] = errText(r, err)
		}
	}
	var pending uint32
	if n.get(d, "retired_pages_pending", "nvmlDeviceGetRetiredPagesPendingStatus", h, uintptr(unsafe.Pointer(&pending))) {
		p := pending == nvmlEnabled
		d.RetiredPagesPending = &p
	}
	var corr, unc, isPend, failed uint32
	if n.get(d, "remapped_rows", "nvmlDeviceGetRemappedRows", h, uintptr(unsafe.Pointer(&corr)), uintptr(unsafe.Pointer(&unc)),
		uintptr(unsafe.Pointer(&isPend)), uintptr(unsafe.Pointer(&failed))) {
		p, f := isPend == 1, failed == 1
		d.RemappedRowsCorrectable, d.RemappedRowsUncorrectable, d.RemapPending, d.RemapFailed = &corr, &unc, &p, &f
	}
	n.nvlinks(h, d)
	if len(d.NVLinks) > 0 {
		active := 0
		for _, l := range d.NVLinks {
			if l.Active {
				active++
			}
		}
		d.NVLinksActive = &active
	}
	n.fabric(h, d)
}

func (n *NVML) migDevices(h uintptr, d *Device) {
	var max uint32
	if !n.get(d, "mig_count", "nvmlDeviceGetMaxMigDeviceCount", h, uintptr(unsafe.Pointer(&max))) {
		return
	}
	for i := uint32(0); i < max; i++ {
		var mh uintptr
		r, err := n.call("nvmlDeviceGetMigDeviceHandleByIndex", h, uintptr(i), uintptr(unsafe.Pointer(&mh)))
		if err != nil || r == nvmlErrNotFound {
			continue
		}
		if r != nvmlSuccess {
			continue
		}
		m := MIGDevice{Index: int(i)}
		name := make([]byte, nvmlNameBuffer)
		if r, err := n.call("nvmlDeviceGetName", mh, uintptr(unsafe.Pointer(&name[0])), uintptr(len(name))); err == nil && r == nvmlSuccess {
			m.Name = cstring(name)
		}
		uuid := make([]byte, nvmlUUIDBuffer)
		if r, err := n.call("nvmlDeviceGetUUID", mh, uintptr(unsafe.Pointer(&uuid[0])), uintptr(len(uuid))); err == nil && r == nvmlSuccess {
			m.UUID = cstring(uuid)
		}
		mem := &nvmlMemoryV2{Version: nvmlMemoryV2Version}
		if r, err := n.call("nvmlDeviceGetMemoryInfo_v2", mh, uintptr(unsafe.Pointer(mem))); err == nil && r == nvmlSuccess {
			m.MemoryTotal = u64(mem.Total)
		}
		d.MIGDevices = append(d.MIGDevices, m)
	}
}

// processes lists processes through the _v3, _v2 or v1 function, whichever
// this driver has, reading entries with the stride the driver wrote: the
// process-info struct is 16, 24 or (drivers 535.43.02–535.86.05) 32 bytes
// (abi_reference.md §1.6). The buffer is over-allocated at 32 bytes an entry
// and filled with a sentinel, and the stride is chosen from the bytes the
// driver changed.
func (n *NVML) processes(h uintptr, d *Device, kind, base string) []Process {
	fn := ""
	for _, name := range []string{base + "_v3", base + "_v2", base} {
		if n.lib.Has(name) {
			fn = name
			break
		}
	}
	if fn == "" {
		d.Errors["processes_"+kind] = "no " + base + " symbol in this driver"
		return nil
	}
	var count uint32
	r, _ := n.call(fn, h, uintptr(unsafe.Pointer(&count)), 0)
	if r == nvmlSuccess {
		return nil // none
	}
	if r != nvmlErrInsufficient {
		d.Errors["processes_"+kind] = nvmlErrorName(r)
		return nil
	}
	for attempt := 0; attempt < 3; attempt++ {
		count += 4 // room for processes that start meanwhile
		const maxStride = 32
		buf := make([]byte, int(count)*maxStride)
		for i := range buf {
			buf[i] = 0xA5
		}
		got := count
		r, _ = n.call(fn, h, uintptr(unsafe.Pointer(&got)), uintptr(unsafe.Pointer(&buf[0])))
		if r == nvmlErrInsufficient {
			count = got
			continue
		}
		if r != nvmlSuccess {
			d.Errors["processes_"+kind] = nvmlErrorName(r)
			return nil
		}
		stride := processStride(fn, buf, int(got))
		out := make([]Process, 0, got)
		for i := 0; i < int(got); i++ {
			e := buf[i*stride:]
			pid := *(*uint32)(unsafe.Pointer(&e[0]))
			mem := *(*uint64)(unsafe.Pointer(&e[8]))
			p := Process{PID: pid, Kind: kind}
			if mem != ^uint64(0) { // NVML_VALUE_NOT_AVAILABLE
				p.UsedMemory = &mem
			}
			out = append(out, p)
		}
		return out
	}
	d.Errors["processes_"+kind] = "process list kept growing"
	return nil
}

// processStride is the entry size the driver wrote. The plain function
// writes 16-byte v1 entries. For _v2/_v3 it is 24 bytes, unless the driver
// wrote past 24*n bytes (the 32-byte layout of early 535 drivers) or no
// further than 16*n (v1 entries; nvitop PR #226, a single report).
func processStride(fn string, buf []byte, n int) int {
	if !strings.HasSuffix(fn, "_v2") && !strings.HasSuffix(fn, "_v3") {
		return 16
	}
	end := 0
	for i := len(buf) - 1; i >= 0; i-- {
		if buf[i] != 0xA5 {
			end = i + 1
			break
		}
	}
	switch {
	case n > 0 && end > 24*n:
		return 32
	case n > 0 && end <= 16*n:
		return 16 // one report of a 550 driver writing v1 entries through _v3
	}
	return 24
}

// clockEvents reads the device's clock event (throttle) reasons.
func (n *NVML) clockEvents(h uintptr) (uint64, int32, error) {
	var reasons uint64
	r, err := n.call("nvmlDeviceGetCurrentClocksEventReasons", h, uintptr(unsafe.Pointer(&reasons)))
	if err != nil { // drivers before 535 have only the deprecated name; same bits
		r, err = n.call("nvmlDeviceGetCurrentClocksThrottleReasons", h, uintptr(unsafe.Pointer(&reasons)))
	}
	return reasons, r, err
}

// Utilization is one GPU's state at one moment: utilization.gpu, the
// percent of NVML's last sample period in which a kernel ran, and its clock
// event reasons (ClockEventNames), when they could be read.
type Utilization struct {
	Index       int
	UUID        string
	GPU         uint32
	ClockEvents uint64
	EventsRead  bool
	// Lost is NVML's GPU_IS_LOST: the GPU fell off the bus (a hardware or
	// driver fault, Xid 79) and answers nothing until a reboot.
	Lost bool
}

// Utilizations reads every GPU's utilization and clock event reasons now,
// for gpurent run's watch of idle and throttled GPUs. A lost GPU is listed
// as Lost; another that gives none (MIG mode: NOT_SUPPORTED) is left out,
// and the error says why when none gave one.
func (n *NVML) Utilizations() ([]Utilization, error) {
	var count uint32
	if r, err := n.call("nvmlDeviceGetCount_v2", uintptr(unsafe.Pointer(&count))); err != nil || r != nvmlSuccess {
		return nil, fmt.Errorf("NVML could not count GPUs: %s", errText(r, err))
	}
	var out []Utilization
	var why string
	for i := range int(count) {
		var h uintptr
		if r, err := n.call("nvmlDeviceGetHandleByIndex_v2", uintptr(i), uintptr(unsafe.Pointer(&h))); err != nil || r != nvmlSuccess {
			if err == nil && r == nvmlErrGPUIsLost {
				out = append(out, Utilization{Index: i, Lost: true})
			}
			why = fmt.Sprintf("GPU %d: %s", i, errText(r, err))
			continue
		}
		u := new(nvmlUtilization)
		if r, err := n.call("nvmlDeviceGetUtilizationRates", h, uintptr(unsafe.Pointer(u))); err != nil || r != nvmlSuccess {
			if err == nil && r == nvmlErrGPUIsLost {
				out = append(out, Utilization{Index: i, Lost: true})
			}
			why = fmt.Sprintf("GPU %d utilization: %s", i, errText(r, err))
			continue
		}
		uuid := make([]byte, nvmlUUIDBuffer)
		if r, err := n.call("nvmlDeviceGetUUID", h, uintptr(unsafe.Pointer(&uuid[0])), uintptr(len(uuid))); err != nil || r != nvmlSuccess {
			uuid[0] = 0
		}
		ev, r, err := n.clockEvents(h)
		out = append(out, Utilization{Index: i, UUID: cstring(uuid), GPU: u.GPU, ClockEvents: ev, EventsRead: err == nil && r == nvmlSuccess})
	}
	if len(out) == 0 && why != "" {
		return nil, errors.New(why)
	}
	return out, nil
}

// Sample reads what a soak watches on GPU index (NVML's numbering):
// power draw, SM and memory clocks, temperature and clock event reasons.
// What NVML will not give is left out; no handle is an error.
func (n *NVML) Sample(index int) (compute.SoakSample, error) {
	var s compute.SoakSample
	var h uintptr
	if r, err := n.call("nvmlDeviceGetHandleByIndex_v2", uintptr(index), uintptr(unsafe.Pointer(&h))); err != nil || r != nvmlSuccess {
		return s, fmt.Errorf("GPU %d: %s", index, errText(r, err))
	}
	ok := func(r int32, err error) bool { return err == nil && r == nvmlSuccess }
	var mw uint32
	if ok(n.call("nvmlDeviceGetPowerUsage", h, uintptr(unsafe.Pointer(&mw)))) {
		s.PowerW = watts(mw)
	}
	var sm, mem, temp uint32
	if ok(n.call("nvmlDeviceGetClockInfo", h, nvmlClockSMType, uintptr(unsafe.Pointer(&sm)))) {
		s.SMClockMHz = &sm
	}
	if ok(n.call("nvmlDeviceGetClockInfo", h, nvmlClockMemType, uintptr(unsafe.Pointer(&mem)))) {
		s.MemClockMHz = &mem
	}
	if ok(n.call("nvmlDeviceGetTemperature", h, nvmlTemperatureGPU, uintptr(unsafe.Pointer(&temp)))) {
		t := int(temp)
		s.TempC = &t
	}
	if ev, r, err := n.clockEvents(h); ok(r, err) {
		s.ClockEvents = &ev
	}
	return s, nil
}

// UtilizationPeriodMax is the longest period one utilization reading
// covers: "between 1 second and 1/6 second depending on the product"
// (nvmlDeviceGetUtilizationRates in NVML's API reference).
const UtilizationPeriodMax = time.Second

// sampleUtilization reads GPU utilization samples over the window, while
// gpurent holds no context: activity then is another process's. The
// window starts settle after the call, once no reading covers the time
// before it.
func (n *NVML) sampleUtilization(ctx context.Context, handles []uintptr, g *GPUFacts, window, settle time.Duration) {
	if window <= 0 {
		window = time.Second
	}
	if settle > 0 {
		select {
		case <-ctx.Done():
			return
		case <-time.After(settle):
		}
	}
	tick := time.NewTicker(window / 10)
	defer tick.Stop()
	deadline := time.After(window)
	for {
		for i, h := range handles {
			if h == 0 {
				continue
			}
			u := new(nvmlUtilization)
			if r, err := n.call("nvmlDeviceGetUtilizationRates", h, uintptr(unsafe.Pointer(u))); err == nil && r == nvmlSuccess {
				g.Devices[i].UtilizationSamples = append(g.Devices[i].UtilizationSamples, u.GPU)
			} else if len(g.Devices[i].UtilizationSamples) == 0 {
				g.Devices[i].Errors["utilization"] = errText(r, err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-deadline:
			return
		case <-tick.C:
		}
	}
}

func u64(v uint64) *uint64 { return &v }

func watts(mw uint32) *float64 {
	w := float64(mw) / 1000
	return &w
}

func archName(a uint32) string {
	switch a {
	case 2:
		return "kepler"
	case 3:
		return "maxwell"
	case 4:
		return "pascal"
	case 5:
		return "volta"
	case 6:
		return "turing"
	case 7:
		return "ampere"
	case 8:
		return "ada"
	case 9:
		return "hopper"
	case 10:
		return "blackwell"
	case 13:
		return "rubin"
	}
	return fmt.Sprintf("unknown(%d)", a)
}

// virtualizationName names nvmlGpuVirtualizationMode_t.
func virtualizationName(v uint32) string {
	return [...]string{"none", "passthrough", "vgpu", "host_vgpu", "host_vsga"}[min(v, 4)]
}

// computeModeName names nvmlComputeMode_t.
func computeModeName(m uint32) string {
	return [...]string{"default", "exclusive_thread", "prohibited", "exclusive_process", "unknown"}[min(m, 4)]
}

// HeldBack names the clock event reasons in bits that slow a GPU for heat
// or a power brake (hw_slowdown, sw_thermal_slowdown, hw_thermal_slowdown,
// hw_power_brake_slowdown): not those of its work being done (gpu_idle),
// of the power limit it was given (sw_power_cap) or of clock settings.
func HeldBack(bits uint64) []string { return ClockEventNames(bits & (0x8 | 0x20 | 0x40 | 0x80)) }

// ClockEventNames decodes NVML's clock event (throttle) reasons bitmask
// (abi_reference.md §1.8).
func ClockEventNames(bits uint64) []string {
	names := []struct {
		bit  uint64
		name string
	}{
		{0x1, "gpu_idle"}, {0x2, "applications_clocks_setting"}, {0x4, "sw_power_cap"}, {0x8, "hw_slowdown"},
		{0x10, "sync_boost"}, {0x20, "sw_thermal_slowdown"}, {0x40, "hw_thermal_slowdown"}, {0x80, "hw_power_brake_slowdown"},
		{0x100, "display_clock_setting"},
	}
	out := []string{}
	for _, x := range names {
		if bits&x.bit != 0 {
			out = append(out, x.name)
		}
	}
	return out
}
