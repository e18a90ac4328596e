package probe

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/gpurent/gpurent/internal/dl"
	"github.com/gpurent/gpurent/internal/dl/dltest"
)

// simDevice mirrors struct device in testdata/fakenvml.c.
type simDevice struct {
	Name, UUID                                          [96]byte
	BusID                                               [32]byte
	PCIDeviceID, PCISubsystemID, Domain, Bus, Dev       int64
	Total, Reserved, Used                               int64
	Arch, CCMajor, CCMinor                              int64
	MIG, MIGDevices                                     int64
	Virt, ComputeMode                                   int64
	PowerLimit, PowerDefault, PowerMax, PowerDraw       int64
	ClockSM, ClockSMMax, ClockMem, ClockMemMax          int64
	EventReasons, PState, Temp                          int64
	PCIeGen, PCIeGenMax, PCIeGenGPUMax                  int64
	PCIeWidth, PCIeWidthMax                             int64
	ECC, ECCUncVolatile, ECCCorrVolatile, ECCUncAggr    int64
	RetiredSBE, RetiredDBE, RetiredPending              int64
	Remap, RemapCorr, RemapUnc, RemapPending, RemapFail int64
	NVLinks, NVLinksActive                              int64
	ComputeProcs, MPSProcs                              int64
	ProcPID, ProcMem                                    [4]int64
	Util                                                int64
}

// simNVMLConfig mirrors struct config in testdata/fakenvml.c.
type simNVMLConfig struct {
	Driver, NVML [80]byte
	CUDAVersion  int64
	InitResult   int64
	Count        int64
	Dev          [8]simDevice
}

// simNVMLStats mirrors struct stats in testdata/fakenvml.c.
type simNVMLStats struct {
	Inits, Shutdowns, Refs, BadCalls, UtilCalls int64
	EventSets                                   int64
}

// simNVML builds the simulated NVML with flags, configures it with its
// default device (an H100 SXM, see fakenvml.c) changed by edit, and
// returns its path and a reader of its counters.
func simNVML(t *testing.T, edit func(*simNVMLConfig), flags ...string) (string, func() simNVMLStats) {
	t.Helper()
	path := dltest.BuildC(t, "testdata/fakenvml.c", "libnvidia-ml.so.1", flags...)
	lib, err := dl.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(lib.Close)
	var cfg simNVMLConfig
	lib.Call("fake_default", uintptr(unsafe.Pointer(&cfg)))
	if edit != nil {
		edit(&cfg)
	}
	if _, err := lib.Call("fake_config", uintptr(unsafe.Pointer(&cfg))); err != nil {
		t.Fatal(err)
	}
	return path, func() simNVMLStats {
		var s simNVMLStats
		lib.Call("fake_stats", uintptr(unsafe.Pointer(&s)))
		return s
	}
}

// The NVML binding reads every field of a simulated H100 through real
// dlopen and calls, with the struct layouts and versioned symbols of
// abi_reference.md §1, and leaves no call refused and no init unbalanced.
func TestNVMLSimulated(t *testing.T) {
	path, stats := simNVML(t, nil)
	g := GPU(context.Background(), GPUOptions{Library: path, Window: 50 * time.Millisecond})
	if !g.Available || g.Error != "" || len(g.Devices) != 1 {
		t.Fatalf("%+v", g)
	}
	if g.DriverVersion != "570.86.15" || g.NVMLVersion != "12.570.86.15" || g.CUDADriverVersion != 12080 {
		t.Errorf("system: %q %q %d", g.DriverVersion, g.NVMLVersion, g.CUDADriverVersion)
	}
	d := g.Devices[0]
	if len(d.Errors) != 0 {
		t.Errorf("errors: %v", d.Errors)
	}
	str := func(what, got, want string) {
		if got != want {
			t.Errorf("%s: got %q, want %q", what, got, want)
		}
	}
	str("name", d.Name, "NVIDIA H100 80GB HBM3")
	str("uuid", d.UUID, "GPU-5b8c9a3e-1f2d-4c6b-9e7a-0d1c2b3a4f5e")
	str("bus id", d.BusID, "00000000:3B:00.0")
	str("architecture", d.Architecture, "hopper")
	str("compute capability", d.ComputeCapability, "9.0")
	str("virtualization", d.Virtualization, "passthrough")
	str("compute mode", d.ComputeMode, "exclusive_process")
	if d.PCIDeviceID != 0x233010de || d.PCISubsystemID != 0x16c110de {
		t.Errorf("pci ids %#x %#x", d.PCIDeviceID, d.PCISubsystemID)
	}
	num := func(what string, got *float64, want float64) {
		t.Helper()
		if got == nil {
			t.Errorf("%s: missing", what)
		} else if *got != want {
			t.Errorf("%s: got %v, want %v", what, *got, want)
		}
	}
	num("memory total", f64(d.MemoryTotal), 85520809984)
	num("memory reserved", f64(d.MemoryReserved), 555745280)
	num("memory used", f64(d.MemoryUsed), 2<<30)
	num("memory free", f64(d.MemoryFree), 85520809984-555745280-(2<<30))
	num("power limit", f64(d.PowerLimitW), 500)
	num("default power limit", f64(d.PowerLimitDefaultW), 700)
	num("max power limit", f64(d.PowerLimitMaxW), 700)
	num("power draw", f64(d.PowerDrawW), 123.456)
	num("sm clock", f64(d.ClockSMMHz), 1980)
	num("sm clock max", f64(d.ClockSMMaxMHz), 1980)
	num("mem clock", f64(d.ClockMemMHz), 2619)
	num("mem clock max", f64(d.ClockMemMaxMHz), 2619)
	num("clock event bits", f64(d.ClockEventReasons), 0x5)
	num("pstate", f64(d.PerformanceState), 0)
	num("temperature", f64(d.TemperatureC), 41)
	num("pcie gen", f64(d.PCIeGenCurr), 5)
	num("pcie gen max", f64(d.PCIeGenMax), 4)
	num("pcie gen gpu max", f64(d.PCIeGenGPUMax), 5)
	num("pcie width", f64(d.PCIeWidthCurr), 16)
	num("pcie width max", f64(d.PCIeWidthMax), 16)
	num("ecc uncorrected volatile", f64(d.ECCUncorrectedVolatile), 0)
	num("ecc corrected volatile", f64(d.ECCCorrectedVolatile), 3)
	num("ecc uncorrected aggregate", f64(d.ECCUncorrectedAggregate), 1)
	num("retired sbe", f64(d.RetiredPagesSBE), 0)
	num("retired dbe", f64(d.RetiredPagesDBE), 2)
	num("remapped correctable", f64(d.RemappedRowsCorrectable), 1)
	num("remapped uncorrectable", f64(d.RemappedRowsUncorrectable), 0)
	num("nvlinks active", f64(d.NVLinksActive), 16)
	if !slices.Equal(d.ClockEvents, []string{"gpu_idle", "sw_power_cap"}) {
		t.Errorf("clock events %v", d.ClockEvents)
	}
	if d.MIGEnabled == nil || *d.MIGEnabled || d.ECCEnabled == nil || !*d.ECCEnabled ||
		d.RetiredPagesPending == nil || *d.RetiredPagesPending || d.RemapPending == nil || *d.RemapPending ||
		d.RemapFailed == nil || *d.RemapFailed {
		t.Errorf("flags: mig %v ecc %v pending %v remap %v/%v", d.MIGEnabled, d.ECCEnabled, d.RetiredPagesPending, d.RemapPending, d.RemapFailed)
	}
	wantProcs(t, d.Processes, "4242 compute 1073741824", "4343 compute -", "4444 mps 536870912")
	if len(d.UtilizationSamples) < 2 || d.UtilizationSamples[0] != 37 {
		t.Errorf("utilization samples %v", d.UtilizationSamples)
	}
	s := stats()
	if s.BadCalls != 0 || s.Inits != 1 || s.Shutdowns != 1 || s.Refs != 0 {
		t.Errorf("simulated NVML: %+v (want no refused call, one init, one shutdown)", s)
	}
}

// f64 is *p as a float64, or nil.
func f64[T uint64 | uint32 | int | float64](p *T) *float64 {
	if p == nil {
		return nil
	}
	v := float64(*p)
	return &v
}

// wantProcs compares processes as "pid kind memory" lines.
func wantProcs(t *testing.T, got []Process, want ...string) {
	t.Helper()
	var lines []string
	for _, p := range got {
		m := "-"
		if p.UsedMemory != nil {
			m = strconv.FormatUint(*p.UsedMemory, 10)
		}
		lines = append(lines, fmt.Sprintf("%d %s %s", p.PID, p.Kind, m))
	}
	if !slices.Equal(lines, want) {
		t.Errorf("processes %q, want %q", lines, want)
	}
}

// Older and odder drivers: the 535.43-535.86 drivers whose _v3 process
// functions write 32-byte entries, and a 450 driver with none of the
// newer symbols; each still reads right, the missing ones named.
// Utilizations reads each GPU's utilization and UUID, and leaves out a
// GPU in MIG mode, which has none.
func TestNVMLSimulatedUtilizations(t *testing.T) {
	path, stats := simNVML(t, func(c *simNVMLConfig) {
		c.Count, c.Dev[1] = 2, c.Dev[0]
		c.Dev[0].Util = 93
		copy(c.Dev[1].UUID[:], "GPU-00000000-0000-0000-0000-000000000001\x00")
		c.Dev[1].Util = 12
		c.Dev[1].EventReasons = 0x48 // hw_slowdown, hw_thermal_slowdown
	})
	n, err := OpenNVML(path)
	if err != nil {
		t.Fatal(err)
	}
	us, err := n.Utilizations()
	want := []Utilization{{0, "GPU-5b8c9a3e-1f2d-4c6b-9e7a-0d1c2b3a4f5e", 93, 0x5, true, false}, {1, "GPU-00000000-0000-0000-0000-000000000001", 12, 0x48, true, false}}
	if err != nil || !slices.Equal(us, want) {
		t.Errorf("Utilizations = %v, %v; want %v", us, err, want)
	}
	n.Close()
	if s := stats(); s.BadCalls != 0 || s.UtilCalls != 2 {
		t.Errorf("simulated NVML: %+v", s)
	}

	// A GPU fallen off the bus is listed as lost, beside the others.
	t.Setenv("FAKENVML_LOST", "1")
	path, _ = simNVML(t, func(c *simNVMLConfig) { c.Count, c.Dev[1] = 2, c.Dev[0] })
	if n, err = OpenNVML(path); err != nil {
		t.Fatal(err)
	}
	us, err = n.Utilizations()
	n.Close()
	if err != nil || len(us) != 2 || us[0].Lost || !us[1].Lost || us[1].Index != 1 {
		t.Errorf("one GPU lost: %+v, %v", us, err)
	}
	t.Setenv("FAKENVML_LOST", "-1")

	// The facts bench judges: the lost GPU is marked, the other read.
	t.Setenv("FAKENVML_LOST", "1")
	path, stats = simNVML(t, func(c *simNVMLConfig) { c.Count, c.Dev[1] = 2, c.Dev[0] })
	g := GPU(context.Background(), GPUOptions{Library: path, Window: 20 * time.Millisecond})
	if len(g.Devices) != 2 || g.Devices[0].Lost || g.Devices[0].Name == "" || !g.Devices[1].Lost || g.Devices[1].Errors["handle"] != "GPU_IS_LOST" {
		t.Errorf("facts with GPU 1 lost: %+v", g.Devices)
	}
	if s := stats(); s.BadCalls != 0 {
		t.Errorf("simulated NVML: %+v", s)
	}
	t.Setenv("FAKENVML_LOST", "-1")

	path, _ = simNVML(t, func(c *simNVMLConfig) { c.Dev[0].MIG = 1 })
	if n, err = OpenNVML(path); err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if us, err := n.Utilizations(); err == nil || !strings.Contains(err.Error(), "GPU 0 utilization: ") {
		t.Errorf("MIG mode: %v, %v; want an error naming the GPU", us, err)
	}
}

func TestNVMLSimulatedDrivers(t *testing.T) {
	t.Run("535 early, 32-byte process entries", func(t *testing.T) {
		path, stats := simNVML(t, nil, "-DDRIVER_535_EARLY")
		g := GPU(context.Background(), GPUOptions{Library: path, Window: time.Millisecond})
		if len(g.Devices) != 1 {
			t.Fatalf("%+v", g)
		}
		wantProcs(t, g.Devices[0].Processes, "4242 compute 1073741824", "4343 compute -", "4444 mps 536870912")
		if s := stats(); s.BadCalls != 0 {
			t.Errorf("%+v", s)
		}
	})
	t.Run("450: v2 processes, v1 memory, throttle reasons", func(t *testing.T) {
		path, stats := simNVML(t, nil, "-DDRIVER_450")
		g := GPU(context.Background(), GPUOptions{Library: path, Window: time.Millisecond})
		if len(g.Devices) != 1 {
			t.Fatalf("%+v", g)
		}
		d := g.Devices[0]
		wantProcs(t, d.Processes, "4242 compute 1073741824", "4343 compute -", "4444 mps 536870912")
		// v1 memory: used includes reserved, and reserved is unknown
		if d.MemoryTotal == nil || *d.MemoryTotal != 85520809984 || d.MemoryUsed == nil || *d.MemoryUsed != 555745280+(2<<30) || d.MemoryReserved != nil {
			t.Errorf("memory %v %v %v", d.MemoryTotal, d.MemoryUsed, d.MemoryReserved)
		}
		if d.ClockEventReasons == nil || *d.ClockEventReasons != 0x5 {
			t.Errorf("throttle reasons through the old name: %v", d.ClockEventReasons)
		}
		if d.PCIeGenGPUMax != nil || d.Errors["pcie_gen_gpu_max"] == "" || len(d.Errors) != 1 {
			t.Errorf("errors %v (want only pcie_gen_gpu_max, named)", d.Errors)
		}
		if s := stats(); s.BadCalls != 0 {
			t.Errorf("%+v", s)
		}
	})
}

// A MIG-enabled card: its instances are listed, and what NVML does not
// answer on a MIG parent (utilization, compute mode, remapped rows) is
// recorded as not supported rather than guessed.
func TestNVMLSimulatedMIG(t *testing.T) {
	path, stats := simNVML(t, func(c *simNVMLConfig) { c.Dev[0].MIG, c.Dev[0].MIGDevices = 1, 3 })
	g := GPU(context.Background(), GPUOptions{Library: path, Window: 20 * time.Millisecond})
	if len(g.Devices) != 1 {
		t.Fatalf("%+v", g)
	}
	d := g.Devices[0]
	if d.MIGEnabled == nil || !*d.MIGEnabled || len(d.MIGDevices) != 3 {
		t.Fatalf("mig %v %+v", d.MIGEnabled, d.MIGDevices)
	}
	for i, m := range d.MIGDevices {
		if m.Index != i || m.Name != "MIG 1g.10gb (simulated)" || m.UUID != "MIG-5b8c9a3e-1f2d-4c6b-9e7a-0d1c2b3a4f5e" || m.MemoryTotal == nil || *m.MemoryTotal != 10<<30 {
			t.Errorf("mig device %d: %+v", i, m)
		}
	}
	for _, k := range []string{"compute_mode", "remapped_rows", "utilization"} {
		if d.Errors[k] != "NOT_SUPPORTED" {
			t.Errorf("errors[%s] = %q, want NOT_SUPPORTED (all: %v)", k, d.Errors[k], d.Errors)
		}
	}
	if s := stats(); s.BadCalls != 0 || s.Refs != 0 {
		t.Errorf("%+v", s)
	}
}

// NVML that loads but will not initialise is no GPU, said in words with
// the likely cause: the kernel module is not loaded, or (common on a
// rented box after an unattended upgrade) it is older than the library.
func TestNVMLSimulatedInitFails(t *testing.T) {
	for r, want := range map[int64]string{
		nvmlErrDriverNotLoad: "no NVIDIA GPU was found: NVML failed to initialise: DRIVER_NOT_LOADED (the kernel driver is not loaded)",
		nvmlErrRMMismatch:    "no NVIDIA GPU was found: NVML failed to initialise: LIB_RM_VERSION_MISMATCH (the driver library and the loaded kernel module are different versions: the driver was updated without a reboot;",
	} {
		path, stats := simNVML(t, func(c *simNVMLConfig) { c.InitResult = r })
		_, err := OpenNVML(path)
		if !IsNoGPU(err) || IsNoLibrary(err) || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%v, want %s (found, failing)", err, want)
		}
		g := GPU(context.Background(), GPUOptions{Library: path, Window: time.Millisecond})
		if g.Available || g.Error != err.Error() {
			t.Errorf("%+v", g)
		}
		if s := stats(); s.BadCalls != 0 || s.Refs != 0 {
			t.Errorf("%+v", s)
		}
	}
}

// The first utilization reading still covers the process that used the GPU
// just before (on an H200: 83%, then 0%); bench's settle keeps it out of the
// window, which then reads only the idle GPU.
func TestNVMLSimulatedUtilizationSettle(t *testing.T) {
	path, _ := simNVML(t, func(c *simNVMLConfig) { c.Dev[0].Util = 0 })
	lib, err := dl.Open(path) // the same library GPU opens: one instance
	if err != nil {
		t.Fatal(err)
	}
	defer lib.Close()
	for _, settle := range []time.Duration{0, 150 * time.Millisecond} {
		lib.Call("fake_util_tail", 83, 100) // a sample period of 100 ms
		g := GPU(context.Background(), GPUOptions{Library: path, Window: 20 * time.Millisecond, Settle: settle})
		if len(g.Devices) != 1 || len(g.Devices[0].UtilizationSamples) == 0 {
			t.Fatalf("settle %v: %+v", settle, g)
		}
		s := g.Devices[0].UtilizationSamples
		if tail := slices.Contains(s, 83); tail != (settle == 0) {
			t.Errorf("settle %v: samples %v (want the previous process's 83%% only without a settle)", settle, s)
		}
	}
}
