package bench

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/compute"
	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/kernlog"
	"github.com/gpurent/gpurent/internal/probe"
	"github.com/gpurent/gpurent/internal/sharing"
	"github.com/gpurent/gpurent/internal/specs"
)

var update = flag.Bool("update", false, "rewrite testdata/fixtures from the builders below")

func p[T any](v T) *T { return &v }

const gib64 = uint64(1) << 30

// healthyH100 is a whole H100 SXM5 80GB on its own, as NVML describes one:
// PCI id 2330 (pci.ids), 700 W default and enforced (datasheet TDP), Gen5
// x16 link (datasheet), ECC on, no errors, idle; on a host with 26 CPUs, no
// steal, a local NVMe data disk.
func healthyH100() probe.Facts {
	total := uint64(81559) << 20 // "80GB" HBM3 as the driver reports it, a little under 80 GiB
	return probe.Facts{
		Version: probe.FactsVersion, CollectedAt: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC), DurationS: 3,
		GPU: probe.GPUFacts{Available: true, DriverVersion: "580.65.06", NVMLVersion: "13.580.65.06", CUDADriverVersion: 13000,
			Devices: []probe.Device{{
				Index: 0, Name: "NVIDIA H100 80GB HBM3", UUID: "GPU-00000000-0000-0000-0000-000000000001", BusID: "00000000:18:00.0",
				PCIDeviceID: 0x233010de,
				MemoryTotal: p(total), MemoryReserved: p(uint64(512) << 20), MemoryUsed: p(uint64(1) << 20), MemoryFree: p(total - 513<<20),
				Architecture: "hopper", ComputeCapability: "9.0", MIGEnabled: p(false), Virtualization: "none", ComputeMode: "default",
				Processes:          []probe.Process{},
				UtilizationSamples: []uint32{0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
				PowerLimitW:        p(700.0), PowerLimitDefaultW: p(700.0), PowerLimitMaxW: p(700.0), PowerDrawW: p(72.0),
				ClockSMMHz: p(uint32(345)), ClockSMMaxMHz: p(uint32(1980)), ClockMemMHz: p(uint32(2619)), ClockMemMaxMHz: p(uint32(2619)),
				ClockEventReasons: p(uint64(0x1)), ClockEvents: []string{"gpu_idle"}, PerformanceState: p(0), TemperatureC: p(31),
				PCIeGenCurr: p(1), PCIeGenMax: p(5), PCIeGenGPUMax: p(5), PCIeWidthCurr: p(16), PCIeWidthMax: p(16),
				ECCEnabled: p(true), ECCUncorrectedVolatile: p(uint64(0)), ECCCorrectedVolatile: p(uint64(0)), ECCUncorrectedAggregate: p(uint64(0)),
				RemappedRowsCorrectable: p(uint32(0)), RemappedRowsUncorrectable: p(uint32(0)), RemapPending: p(false), RemapFailed: p(false),
				Errors: map[string]string{"retired_pages_sbe": "NOT_SUPPORTED", "retired_pages_dbe": "NOT_SUPPORTED", "retired_pages_pending": "NOT_SUPPORTED"},
			}}},
		// A kernel log read since a boot 3 h before, with no Xid.
		KernelLog: &probe.KernelLog{Log: kernlog.Log{Boot: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC), Since: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)}},
		Sharing:   probe.SharingFacts{Container: "docker", ContainerEvidence: "/.dockerenv exists"},
		Host: probe.HostFacts{CPUModel: "Intel(R) Xeon(R) Platinum 8480+", OnlineCPUs: 26, StealPct: p(0.2), BusyPct: p(1.5), LoadAvg1: p(0.3),
			MemTotal: 225 * gib64, MemAvailable: 219 * gib64, DataDir: "/workspace", FSType: "ext4", FSSource: "/dev/nvme0n1p1",
			FSFree: p(uint64(480e9)), FSSize: p(uint64(500e9)), DiskWriteMBs: p(1850.0), DiskReadMBs: p(3100.0), DiskTestBytes: 256 << 20, DiskTestMethod: "o_direct",
			ShmSize: p(uint64(225 * gib64 / 2))}, // --ipc=host: the host's tmpfs, half its RAM by default
	}
}

// multi copies the first GPU of f n-1 times, each on its own bus, with
// RAM for all their memory.
func multi(f probe.Facts, n int) probe.Facts {
	f.Host.MemTotal, f.Host.MemAvailable = 2048*gib64, 2000*gib64
	d0 := f.GPU.Devices[0]
	for i := 1; i < n; i++ {
		d := d0
		d.Index, d.UUID, d.BusID = i, fmt.Sprintf("GPU-00000000-0000-0000-0000-%012d", i+1), fmt.Sprintf("00000000:%02X:00.0", 0x18+0x10*i)
		f.GPU.Devices = append(f.GPU.Devices, d)
	}
	return f
}

// hgx8 is an HGX H100 8-GPU board as NVML describes it, changed by edit:
// 18 NVLink 4 links a GPU, spread over the four NVSwitches 5, 4, 4, 5;
// GPUs 0-3 on one NUMA node and 4-7 on the other; peer-to-peer on between
// every pair; the NVLink fabric registered.
func hgx8(edit func(*probe.Facts)) probe.Facts {
	f := multi(healthyH100(), 8)
	sw := []int{0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 3}
	for i := range f.GPU.Devices {
		d := &f.GPU.Devices[i]
		d.NVLinks = nil
		for l := range 18 {
			d.NVLinks = append(d.NVLinks, probe.NVLink{Link: l, Active: true, Version: "4.0", Remote: "switch",
				RemoteBusID: fmt.Sprintf("00000000:%02X:00.0", 0x05+sw[l]), Errors: &probe.LinkErrors{}})
		}
		d.NVLinksActive = p(18)
		d.Fabric = &probe.Fabric{State: "completed", Status: "success"}
	}
	for a := range 8 {
		for b := a + 1; b < 8; b++ {
			path := "node"
			if a/4 != b/4 {
				path = "system"
			}
			f.GPU.Pairs = append(f.GPU.Pairs, probe.GPUPair{A: a, B: b, Path: path,
				P2P: map[string]string{"read": "ok", "write": "ok", "atomics": "ok", "nvlink": "ok"}})
		}
	}
	// Eight RDMA NICs, each behind its GPU's PCIe switch, as on a DGX H100.
	for k := range 8 {
		n := probe.NIC{Name: fmt.Sprintf("mlx5_%d", k), RDMA: true, Interfaces: []string{fmt.Sprintf("ibp%ds0", 0x1a+0x10*k)},
			BusID: fmt.Sprintf("0000:%02x:00.0", 0x1a+0x10*k)}
		for g := range 8 {
			path := "SYS"
			switch {
			case g == k:
				path = "PIX"
			case g/4 == k/4:
				path = "NODE"
			}
			n.Paths = append(n.Paths, path)
		}
		f.GPU.NICs = append(f.GPU.NICs, n)
	}
	// 380 GB/s each way, as NVIDIA's p2p bandwidth test measured an HGX
	// H100 (NVIDIA/nccl#1264), a little more within a half of the board.
	f.Peers = peerMatrix(f, func(a, b int) float64 { return 378 + 4*float64(btoi(a/4 == b/4)) })
	f.NVLinkErrorsAfter = countersAfter(f)
	// NVLink SHARP's sweep: about 480 GB/s at the largest sizes
	// (nccl-tests#212), far less at 8 MiB.
	f.AllReduce = allReduceSweep(8, 152.3, 281.7, 391.2, 458.6, 479.4)
	if edit != nil {
		edit(&f)
		for i := range f.GPU.Devices {
			d := &f.GPU.Devices[i]
			n := 0
			for _, l := range d.NVLinks {
				if l.Active {
					n++
				}
			}
			d.NVLinksActive = p(n)
		}
	}
	return f
}

// pcie4 is four H100 PCIe cards, pairs 0-1 and 2-3 behind one PCIe switch
// each, the halves on two sockets; bridged joins each pair with 12 NVLink
// 4 links (three bridges), and p2p is every pair's read and write status.
func pcie4(bridged bool, p2p string) probe.Facts {
	f := healthyH100()
	d := &f.GPU.Devices[0]
	d.Name, d.PCIDeviceID = "NVIDIA H100 PCIe", 0x233110de
	d.PowerLimitW, d.PowerLimitDefaultW, d.PowerLimitMaxW = p(350.0), p(350.0), p(350.0)
	f = multi(f, 4)
	for i := range f.GPU.Devices {
		d := &f.GPU.Devices[i]
		for l := range 12 {
			nl := probe.NVLink{Link: l, Version: "4.0"}
			if bridged {
				nl.Active, nl.Remote, nl.RemoteBusID, nl.Errors = true, "gpu", f.GPU.Devices[i^1].BusID, &probe.LinkErrors{}
			}
			d.NVLinks = append(d.NVLinks, nl)
		}
		d.NVLinksActive = p(12 * btoi(bridged))
	}
	for a := range 4 {
		for b := a + 1; b < 4; b++ {
			path, nv := "system", "not supported"
			if a/2 == b/2 {
				path = "single"
				if bridged {
					nv = "ok"
				}
			}
			f.GPU.Pairs = append(f.GPU.Pairs, probe.GPUPair{A: a, B: b, Path: path,
				P2P: map[string]string{"read": p2p, "write": p2p, "atomics": p2p, "nvlink": nv}})
		}
	}
	// Over three bridges 12 × 25 GB/s a direction, of which copies reach
	// 84%; over PCIe Gen5 x16 (63 GB/s) about 80% within a switch, less
	// across sockets; staged through the host without P2P, a fifth.
	f.Peers = peerMatrix(f, func(a, b int) float64 {
		switch {
		case p2p != "ok":
			return 11.5
		case bridged && a/2 == b/2:
			return 252
		case a/2 == b/2:
			return 50.1
		}
		return 41.7
	})
	if bridged {
		f.NVLinkErrorsAfter = countersAfter(f)
	}
	f.AllReduce = allReduceSweep(4, 14.1, 26.3, 31.0, 32.4, 32.8)
	if p2p != "ok" {
		f.AllReduce = allReduceSweep(4, 6.2, 8.8, 9.6, 9.9, 10.0)
	}
	return f
}

// peerMatrix is a copy matrix of f's GPUs, gbs(a, b) GB/s from a to b,
// and both ways at once twice the slower direction, a little less.
func peerMatrix(f probe.Facts, gbs func(a, b int) float64) *compute.Peers {
	p := &compute.Peers{Devices: len(f.GPU.Devices), Bytes: 256 << 20, Copies: 4, Timeout: 10}
	for _, a := range f.GPU.Devices {
		for _, b := range f.GPU.Devices {
			if a.Index == b.Index {
				continue
			}
			x := compute.Peer{Src: a.Index, Dst: b.Index, SrcBus: a.BusID[4:], DstBus: b.BusID[4:], SrcGPU: a.Index, DstGPU: b.Index,
				Access: true, GBs: gbs(a.Index, b.Index)}
			if a.Index < b.Index {
				x.BidirGBs = 1.97 * min(x.GBs, gbs(b.Index, a.Index))
			}
			p.Pairs = append(p.Pairs, x)
		}
	}
	return p
}

// countersAfter are f's NVLink counters, read again after the load.
func countersAfter(f probe.Facts) []probe.LinkCount {
	var out []probe.LinkCount
	for _, d := range f.GPU.Devices {
		for _, l := range d.NVLinks {
			if l.Errors != nil {
				out = append(out, probe.LinkCount{GPU: d.Index, Link: l.Link, LinkErrors: *l.Errors})
			}
		}
	}
	return out
}

// allReduceSweep is NCCL's all-reduce over n GPUs, sizes 8 MiB to 2 GiB
// by fours reaching bus bandwidths bus.
func allReduceSweep(n int, bus ...float64) *compute.AllReduce {
	a := &compute.AllReduce{Library: "/usr/lib/python3/dist-packages/nvidia/nccl/lib/libnccl.so.2", Version: "2.28.9", Ranks: n, Checked: true}
	size := int64(8 << 20)
	for _, b := range bus {
		alg := b / (2 * float64(n-1) / float64(n))
		a.Sizes = append(a.Sizes, compute.AllReduceSize{Bytes: size, Ms: float64(size) / alg / 1e6, AlgGBs: alg, BusGBs: b})
		a.BusGBs = max(a.BusGBs, b)
		size *= 4
	}
	return a
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// probed adds synthetic compute results to a facts builder: figures a
// healthy H100 SXM could show (FP32 90% of 67, BF16 mma.sync 61% of 989.5
// as an H200 measured, copy 87% of 3350 GB/s, H2D 80% of a Gen5 x16 link,
// cuBLASLt GEMMs at 70-76% of the dense peaks), and
// a sustained series from a 2 ms kernel with 1% jitter, passed through the
// same analysis bench runs. Synthetic: they test the judgement, not the
// card.
func probed(f probe.Facts, sustained []float64, allocGiB float64) probe.Facts {
	return probedGEMM(f, sustained, allocGiB, 692)
}

// probedGEMM is probed with the BF16 GEMM at bf16 TFLOPS.
func probedGEMM(f probe.Facts, sustained []float64, allocGiB, bf16 float64) probe.Facts {
	c := compute.AnalyzeLaunches(sustained, compute.DefaultContentionLimits())
	f.Compute = []compute.Results{{Backend: "cuda", Index: 0, Available: true, Device: "NVIDIA H100 80GB HBM3", Driver: "CUDA 13.0",
		Results: []compute.Result{
			{Probe: compute.ProbeResidue, Value: 0, Unit: "bytes", Timing: compute.Summary{N: 1, Median: 96.4},
				Notes: i18n.Plain("read 78.0 MiB in 1248 samples over 77.60 GiB of fresh allocations before writing them: 0 of 1248 samples held non-zero bytes")},
			{Probe: compute.ProbeFP32, Precision: "fp32", Value: 60.3, Unit: "TFLOPS", Timing: compute.Summary{N: 5, Median: 20.1, Spread: 0.004}},
			{Probe: compute.ProbeBF16, Precision: "bf16", Value: 603, Unit: "TFLOPS", Timing: compute.Summary{N: 5, Median: 20.0, Spread: 0.003}},
			{Probe: compute.ProbeFP8, Precision: "fp8", Error: "FP8 kernels did not load (PTX 8.4 needs a CUDA 12.4 or newer driver): CUDA_ERROR_UNSUPPORTED_PTX_VERSION", Unit: "TFLOPS"},
			{Probe: compute.ProbeGEMMFP32, Precision: "fp32", Value: 51.0, Unit: "TFLOPS", Timing: compute.Summary{N: 5, Median: 21.6, Spread: 0.006}},
			{Probe: compute.ProbeGEMMTF32, Precision: "tf32", Value: 361, Unit: "TFLOPS", Timing: compute.Summary{N: 5, Median: 3.05, Spread: 0.01}},
			{Probe: compute.ProbeGEMMBF16, Precision: "bf16", Value: bf16, Unit: "TFLOPS", Timing: compute.Summary{N: 5, Median: 1100 / bf16, Spread: 0.01}},
			{Probe: compute.ProbeCopy, Value: 2915, Unit: "GB/s", Timing: compute.Summary{N: 5, Median: 0.37, Spread: 0.01}},
			{Probe: compute.ProbeH2D, Value: 50.1, Unit: "GB/s", Timing: compute.Summary{N: 5, Median: 5.4, Spread: 0.01}},
			{Probe: compute.ProbeAlloc, Value: allocGiB, Unit: "GiB"},
			{Probe: compute.ProbeSustain, Value: c.P50Ms, Unit: "ms", Contention: &c, Timing: compute.Summarize(sustained)},
		}}}
	return f
}

// soakRun is a synthetic 120 s soak of gpu as bench --soak 2m records it:
// BF16 GEMMs at tflops(t), an interval a second, and an NVML sample
// every second drawing watts(t) at smMHz(t), warming from 40 C to 70 C.
// Synthetic: it tests the judgement, not the card.
func soakRun(f *probe.Facts, gpu int, tflops, watts, smMHz func(t float64) float64) {
	s := &compute.Soak{Seconds: 120, GEMM: "cuBLASLt 12.8.4 8192³ BF16", Slots: 560, MemoryGiB: 70.4, Iterations: 1,
		Tolerance: 1.0 / 64, ReferenceChecked: 64, ReferenceMaxErr: 0.000412,
		FP32: &compute.Soak{Seconds: 120, GEMM: "cuBLASLt 12.8.4 8192³ FP32", Slots: 2, MemoryGiB: 1.03, Tolerance: 1.0 / 64, ReferenceChecked: 64, ReferenceMaxErr: 0.000001}}
	var tf []float64
	for t := 1.0; t <= 120; t++ {
		v := tflops(t)
		s.Intervals = append(s.Intervals, compute.SoakInterval{AtS: t, TFLOPS: v})
		s.Iterations += int(v * 1e12 / (2 * 8192 * 8192 * 8192))
		tf = append(tf, v)
	}
	s.FP32.Iterations = s.Iterations / 128
	for t := 1.0; t <= 120; t++ {
		s.FP32.Intervals = append(s.FP32.Intervals, compute.SoakInterval{AtS: t, TFLOPS: 49.8})
	}
	for t := 1.0; t <= 120; t++ {
		w, sm, mem, temp, ev := watts(t), uint32(smMHz(t)), uint32(2619), 40+int(min(30, t/2)), uint64(0)
		if sm < 1500 {
			ev = 0x60 // sw and hw thermal slowdown
		}
		s.Samples = append(s.Samples, compute.SoakSample{AtS: t, PowerW: &w, SMClockMHz: &sm, MemClockMHz: &mem, TempC: &temp, ClockEvents: &ev})
	}
	sum := compute.Summarize(tf)
	f.Compute[gpu].Results = append(f.Compute[gpu].Results, compute.Result{Probe: compute.ProbeSoak, Unit: "TFLOPS", Value: sum.Median,
		Timing: compute.Summary{N: len(tf), Median: sum.Median, Spread: sum.Spread}, Soak: s,
		Notes: i18n.Plain(fmt.Sprintf("%s loop for 120.0 s: %d iterations over 560 results in 70.4 GiB, each compared with the first (tolerance 1/64 of size + 1); 64 of the first result's elements checked against FP64 on the CPU", s.GEMM, s.Iterations))})
}

func steady(v float64) func(float64) float64 { return func(float64) float64 { return v } }

// memtested adds a clean memory test of 77.6 GiB to gpu's results.
func memtested(f *probe.Facts, gpu int) *compute.Result {
	f.Compute[gpu].Results = append(f.Compute[gpu].Results, compute.Result{Probe: compute.ProbeMemtest, Unit: "words", Timing: compute.Summary{N: 73, Median: 41.5},
		Notes: i18n.Plain("73 passes over 77.60 GiB (98% of the 79.15 GiB free) in 3.6 s: walking ones, own address, moving inversions, random (seed 0x5eed); 2008 GB/s median, 1961 GB/s slowest pass")})
	return &f.Compute[gpu].Results[len(f.Compute[gpu].Results)-1]
}

// launches is a synthetic series of n 2 ms launches with 1% jitter; every
// slowEvery-th launch (0: none) waits out a 4 ms time slice.
func launches(n, slowEvery int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = 2 * (1 + 0.01*float64((i*7919)%13-6)/6)
		if slowEvery > 0 && i%slowEvery == slowEvery-1 {
			out[i] += 4
		}
	}
	return out
}

type fixture struct {
	name   string
	order  Order
	facts  func() probe.Facts
	want   string   // verdict
	fails  []string // ids of failed checks, exactly
	warns  []string // ids of warned checks, exactly, where given
	advice string   // in the first failed check's advice
}

func fixtures() []fixture {
	dev := func(f *probe.Facts) *probe.Device { return &f.GPU.Devices[0] }
	return []fixture{
		{name: "healthy-h100-sxm", order: Order{GPU: "H100 SXM", GPUs: 1}, want: Pass, facts: healthyH100},
		// /proc/meminfo shows the host's 225 GiB; the container may use 16.
		{name: "h100-container-limited-to-16gib", order: Order{GPU: "H100 SXM", GPUs: 1}, want: Warn, warns: []string{"host.memory"},
			facts: func() probe.Facts {
				f := healthyH100()
				f.Host.MemLimit = p(16 * gib64)
				return f
			}},
		{name: "a100-80gb-is-mig-3g40gb", order: Order{GPU: "A100 80GB SXM"}, want: Fail, fails: []string{"gpu0.mig"}, advice: "MIG slice",
			facts: func() probe.Facts {
				f := healthyH100()
				d := dev(&f)
				d.Name, d.PCIDeviceID, d.Architecture, d.ComputeCapability = "NVIDIA A100-SXM4-80GB", 0x20b210de, "ampere", "8.0"
				d.MemoryTotal = p(uint64(81920) << 20)
				d.PowerLimitW, d.PowerLimitDefaultW, d.PowerLimitMaxW = p(400.0), p(400.0), p(400.0)
				d.PCIeGenMax, d.PCIeGenGPUMax = p(4), p(4)
				d.MIGEnabled = p(true)
				d.MIGDevices = []probe.MIGDevice{{Index: 0, Name: "NVIDIA A100-SXM4-80GB MIG 3g.40gb", UUID: "MIG-00000000-0000-0000-0000-000000000002", MemoryTotal: p(uint64(40192) << 20)}}
				d.UtilizationSamples = nil
				d.Errors = map[string]string{"utilization": "NOT_SUPPORTED", "remapped_rows": "NOT_SUPPORTED"}
				d.RemapPending, d.RemapFailed, d.RemappedRowsCorrectable, d.RemappedRowsUncorrectable = nil, nil, nil, nil
				return f
			}},
		// A 3g.40gb instance of an H100 rented knowingly (no order): the
		// instance measures 3/7 of the card's compute and half its memory
		// (synthetic scaling), which is what MIG means, not a fault.
		{name: "h100-mig-3g40gb-probed", want: Warn, warns: []string{"gpu0.mig"},
			facts: func() probe.Facts {
				f := healthyH100()
				d := dev(&f)
				d.MIGEnabled = p(true)
				d.MIGDevices = []probe.MIGDevice{{Index: 0, Name: "NVIDIA H100 80GB HBM3 MIG 3g.40gb", UUID: "MIG-00000000-0000-0000-0000-000000000003", MemoryTotal: p(uint64(40448) << 20)}}
				d.UtilizationSamples, d.ComputeMode = nil, ""
				d.Errors = map[string]string{"utilization": "NOT_SUPPORTED", "remapped_rows": "NOT_SUPPORTED", "compute_mode": "NOT_SUPPORTED"}
				d.RemapPending, d.RemapFailed, d.RemappedRowsCorrectable, d.RemappedRowsUncorrectable = nil, nil, nil, nil
				f = probed(f, launches(2000, 0), 37.9)
				for i := range f.Compute[0].Results {
					r := &f.Compute[0].Results[i]
					switch r.Probe {
					case compute.ProbeCopy, compute.ProbeH2D:
						r.Value /= 2
					case compute.ProbeAlloc, compute.ProbeSustain:
					default:
						r.Value *= 3.0 / 7
					}
				}
				return f
			}},
		{name: "other-tenant-holds-24gb", order: Order{GPU: "H100 SXM"}, want: Fail, fails: []string{"gpu0.memory_used", "gpu0.processes"}, advice: "Someone else's data",
			facts: func() probe.Facts {
				f := healthyH100()
				d := dev(&f)
				d.Processes = []probe.Process{{PID: 48213, Kind: "compute", UsedMemory: p(24 * gib64)}}
				d.MemoryUsed = p(24*gib64 + 1<<20)
				return f
			}},
		{name: "busy-60pct-while-idle", want: Fail, fails: []string{"gpu0.utilization"}, advice: "busy with someone else's work",
			facts: func() probe.Facts {
				f := healthyH100()
				dev(&f).UtilizationSamples = []uint32{55, 62, 60, 64, 58, 61, 59, 63, 60, 58}
				return f
			}},
		{name: "h100-power-capped-300w", order: Order{GPU: "H100 SXM"}, want: Fail, fails: []string{"gpu0.power_limit"}, advice: "power-capped",
			facts: func() probe.Facts {
				f := healthyH100()
				dev(&f).PowerLimitW = p(300.0)
				return f
			}},
		{name: "pcie-gen4-x8-on-gen5-x16", want: Fail, fails: []string{"gpu0.pcie"}, advice: "less than half its PCIe bandwidth",
			facts: func() probe.Facts {
				f := healthyH100()
				d := dev(&f)
				d.PCIeGenMax, d.PCIeWidthMax, d.PCIeWidthCurr = p(4), p(8), p(8)
				return f
			}},
		{name: "vgpu-guest", want: Fail, fails: []string{"gpu0.virtualization"}, advice: "virtual GPU",
			facts: func() probe.Facts {
				f := healthyH100()
				dev(&f).Virtualization = "vgpu"
				f.Sharing.Hypervisor = true
				return f
			}},
		{name: "libvgpu-preloaded", order: Order{GPU: "H100 SXM"}, want: Fail,
			fails: []string{"gpu0.memory", "sharing.interposer", "sharing.mps_and_limits"}, advice: "less memory than its datasheet",
			facts: func() probe.Facts {
				f := healthyH100()
				d := dev(&f)
				d.MemoryTotal, d.MemoryFree = p(20*gib64), p(20*gib64-1<<20) // HAMi hooks NVML too and reports its limit
				f.Sharing.LDPreload = "/usr/local/vgpu/libvgpu.so"
				f.Sharing.MappedInterposers = []string{"/usr/local/vgpu/libvgpu.so"}
				f.Sharing.CUDAEnv = map[string]string{"CUDA_DEVICE_MEMORY_LIMIT": "20g", "CUDA_DEVICE_SM_LIMIT": "50"}
				return f
			}},
		// Xids in the kernel log since the boot, as the driver prints them
		// (kernlog.ParseXid's tests): a GSP firmware timeout an hour before the
		// rental fails the card (NVIDIA's catalog: reset the GPU).
		{name: "xid-119-gsp-timeout-since-boot", want: Fail, fails: []string{"gpu0.xid"}, advice: "Xid 119",
			facts: func() probe.Facts {
				f := healthyH100()
				f.KernelLog.Xids = []kernlog.Xid{
					{Code: 119, Bus: "0000:18:00", Message: "Timeout after 6s of waiting for RPC response from GPU0 GSP!", At: time.Date(2026, 11, 30, 11, 0, 0, 0, time.UTC)},
					{Code: 13, Bus: "0000:18:00", PID: 2371, Process: "python3", Message: "Graphics Exception", At: time.Date(2026, 11, 30, 11, 1, 0, 0, time.UTC)},
				}
				return f
			}},
		// A program's own errors (an MMU fault, a graphics exception, the
		// clean-up after them) say nothing against the card.
		{name: "xid-program-errors-only", want: Pass, warns: []string{},
			facts: func() probe.Facts {
				f := healthyH100()
				for i, c := range []int{31, 13, 45, 31} {
					f.KernelLog.Xids = append(f.KernelLog.Xids, kernlog.Xid{Code: c, Bus: "0000:18:00", PID: 501, Process: "python",
						Message: "MMU Fault", At: time.Date(2026, 11, 30, 10, i, 0, 0, time.UTC)})
				}
				return f
			}},
		// A contained memory error (Xid 94): the program stopped, the card
		// runs on; worth a look.
		{name: "xid-94-contained-ecc", want: Warn, warns: []string{"gpu0.xid"},
			facts: func() probe.Facts {
				f := healthyH100()
				f.KernelLog.Xids = []kernlog.Xid{{Code: 94, Bus: "0000:18:00", PID: 77, Process: "python", Message: "Contained: SM (0x1). RST: No, D-RST: No",
					At: time.Date(2026, 11, 30, 11, 30, 0, 0, time.UTC)}}
				return f
			}},
		// An Xid 79 on a GPU NVML does not list: one that fell off the bus
		// and is gone from the machine's list.
		{name: "xid-79-on-an-unlisted-gpu", want: Fail, fails: []string{"gpu.xid"}, advice: "reboot",
			facts: func() probe.Facts {
				f := healthyH100()
				f.KernelLog.Xids = []kernlog.Xid{{Code: 79, Bus: "0000:2a:00", Message: "GPU has fallen off the bus.", At: time.Date(2026, 11, 30, 9, 5, 0, 0, time.UTC)}}
				return f
			}},
		// The kernel's own reports of failing hardware since the boot: a
		// data disk that fails writes fails the machine.
		{name: "disk-io-errors-on-the-data-disk", want: Fail, fails: []string{"host.kernel"}, advice: "a disk failed reads or writes",
			facts: func() probe.Facts {
				f := healthyH100()
				f.KernelLog.Faults = []kernlog.Fault{
					{Kind: "pcie", Level: "corrected", Device: "0000:00:01.0", Count: 5, First: time.Date(2026, 11, 30, 9, 1, 0, 0, time.UTC), Last: time.Date(2026, 11, 30, 9, 2, 0, 0, time.UTC),
						Message: "pcieport 0000:00:01.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID)"},
					{Kind: "disk", Level: "error", Device: "nvme0n1", Count: 12, First: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC), Last: time.Date(2026, 11, 30, 11, 0, 0, 0, time.UTC),
						Message: "I/O error, dev nvme0n1, sector 123456 op 0x1:(WRITE) flags 0x8800 phys_seg 1 prio class 2"},
				}
				return f
			}},
		// Corrected RAM errors (EDAC): a module failing, worth a look.
		{name: "ram-corrected-errors", want: Warn, warns: []string{"host.kernel"},
			facts: func() probe.Facts {
				f := healthyH100()
				f.KernelLog.Faults = []kernlog.Fault{{Kind: "memory", Level: "corrected", Device: "MC0", Count: 40, First: time.Date(2026, 11, 30, 9, 30, 0, 0, time.UTC),
					Last: time.Date(2026, 11, 30, 11, 50, 0, 0, time.UTC), Message: "EDAC MC0: 2 CE memory read error on CPU_SrcID#0_MC#0_Chan#1_DIMM#0 (channel:1 slot:0 page:0x1e5b8f offset:0xc40 grain:32 syndrome:0x0)"}}
				return f
			}},
		// Corrected PCIe errors alone: counted in the evidence, no alarm.
		{name: "pcie-corrected-errors-only", want: Pass, warns: []string{},
			facts: func() probe.Facts {
				f := healthyH100()
				f.KernelLog.Faults = []kernlog.Fault{{Kind: "pcie", Level: "corrected", Device: "0000:00:01.0", Count: 3, First: time.Date(2026, 11, 30, 9, 1, 0, 0, time.UTC),
					Last: time.Date(2026, 11, 30, 9, 2, 0, 0, time.UTC), Message: "pcieport 0000:00:01.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID)"}}
				return f
			}},
		// A container without /dev/kmsg: skipped, and said so.
		{name: "kernel-log-unreadable", want: Pass, warns: []string{},
			facts: func() probe.Facts {
				f := healthyH100()
				f.KernelLog = &probe.KernelLog{Error: "the kernel log cannot be read: no /dev/kmsg (a container without it)"}
				return f
			}},
		// The same container, where NVML's events delivered an
		// uncorrectable memory error while the probes ran: the card fails.
		{name: "xid-48-under-the-bench-in-a-container", want: Fail, fails: []string{"gpu0.xid"}, advice: "while bench measured it (Xid 48): an uncorrectable (double-bit) GPU memory error: data in GPU memory may be wrong; the GPU needs a reset, and the error repeating means failing memory. It faulted under the bench's own load",
			facts: func() probe.Facts {
				f := healthyH100()
				f.KernelLog = &probe.KernelLog{Error: "the kernel log cannot be read: no /dev/kmsg (a container without it)"}
				f.XidEvents = &probe.XidEvents{Seconds: 11.6, Xids: []kernlog.Xid{{Code: 48, Bus: "0000:18:00", At: time.Date(2026, 11, 30, 12, 0, 8, 0, time.UTC)}}}
				return f
			}},
		{name: "retired-pages-pending", want: Fail, fails: []string{"gpu0.retired_pages"}, advice: "waiting to be retired",
			facts: func() probe.Facts {
				f := healthyH100()
				d := dev(&f)
				d.RetiredPagesSBE, d.RetiredPagesDBE, d.RetiredPagesPending = p(uint32(2)), p(uint32(1)), p(true)
				d.Errors = nil
				return f
			}},
		{name: "h20-sold-as-h100", order: Order{GPU: "H100"}, want: Fail, fails: []string{"gpu0.identity"}, advice: "You ordered H100 and got H20",
			facts: func() probe.Facts {
				f := healthyH100()
				d := dev(&f)
				d.Name, d.PCIDeviceID = "NVIDIA H20", 0x232910de
				d.MemoryTotal = p(uint64(97871) << 20) // 96 GB HBM3 (datasheet table)
				d.PowerLimitW, d.PowerLimitDefaultW = p(500.0), p(500.0)
				return f
			}},
		// The offer said 16 vCPUs and 256 GB: the container's cpuset holds
		// 8 of the host's 26, and its memory cgroup 128 GiB.
		{name: "host-short-of-the-order", order: Order{GPU: "H100 SXM", CPUs: 16, RAM: 256e9}, want: Fail, fails: []string{"host.cpu", "host.memory"},
			advice: "You ordered 16 CPUs and this container may use 8",
			facts: func() probe.Facts {
				f := healthyH100()
				f.Host.AllowedCPUs = 8
				f.Host.MemLimit = p(128 * gib64)
				return f
			}},
		// The same container judged without an order: it sees 26 CPUs and
		// may use 8, which is said, not failed.
		{name: "host-cpuset-8-of-26", want: Warn, warns: []string{"host.cpu"},
			facts: func() probe.Facts {
				f := healthyH100()
				f.Host.AllowedCPUs = 8
				return f
			}},
		// An order the host meets: 26 CPUs, and 225 GiB (241.6 GB) of RAM
		// for 240 GB ordered.
		{name: "healthy-h100-sxm-host-ordered", order: Order{GPU: "H100 SXM", GPUs: 1, CPUs: 26, RAM: 240e9, Disk: 500e9}, want: Pass, facts: healthyH100},
		// The offer said a 500 GB data disk; /workspace is on 200 GB.
		{name: "host-disk-smaller-than-ordered", order: Order{Disk: 500e9}, want: Fail, fails: []string{"host.disk_size"}, advice: "You ordered a 500 GB disk and the one under /workspace holds 200.0 GB",
			facts: func() probe.Facts {
				f := healthyH100()
				f.Host.FSSize, f.Host.FSFree = p(uint64(200e9)), p(uint64(180e9))
				return f
			}},
		// The image's PyTorch was built with CUDA 13.0; the host's driver
		// (550, CUDA 12.4) cannot run it, and a container cannot change it.
		{name: "driver-too-old-for-torch-cu130", want: Fail, fails: []string{"gpu.cuda"}, advice: "This driver is too old for that software",
			facts: func() probe.Facts {
				f := healthyH100()
				f.GPU.DriverVersion, f.GPU.CUDADriverVersion = "550.54.15", 12040
				f.Torch = []probe.TorchInstall{{Path: "/opt/conda/lib/python3.11/site-packages/torch/version.py", Version: "2.9.0+cu130", CUDA: "13.0"}}
				return f
			}},
		// A CPU-only PyTorch is the only one: it would train on the CPU.
		{name: "torch-cpu-only", want: Warn, warns: []string{"gpu.cuda"},
			facts: func() probe.Facts {
				f := healthyH100()
				f.Torch = []probe.TorchInstall{{Path: "/usr/local/lib/python3.12/dist-packages/torch/version.py", Version: "2.7.0+cpu"}}
				return f
			}},
		// A container started without --shm-size: Docker's 64 MiB.
		{name: "docker-default-shm", want: Warn, warns: []string{"host.shm"},
			facts: func() probe.Facts {
				f := healthyH100()
				f.Host.ShmSize = p(uint64(64 << 20))
				return f
			}},
		{name: "host-steal-25pct", want: Fail, fails: []string{"host.steal"}, advice: "oversold",
			facts: func() probe.Facts {
				f := healthyH100()
				f.Host.StealPct = p(25.0)
				f.Sharing.Hypervisor = true
				return f
			}},
		{name: "healthy-h100-sxm-probed", order: Order{GPU: "H100 SXM", GPUs: 1}, want: Pass,
			facts: func() probe.Facts { return probed(healthyH100(), launches(2000, 0), 77.6) }},
		{name: "h100-cotenant-time-sliced", want: Fail, fails: []string{"gpu0.sustained"}, advice: "time-sliced",
			facts: func() probe.Facts { return probed(healthyH100(), launches(2000, 3), 77.6) }},
		{name: "h100-gemm-at-a-fifth", want: Warn, warns: []string{"gpu0.gemm_bf16"},
			facts: func() probe.Facts { return probedGEMM(healthyH100(), launches(2000, 0), 77.6, 190) }},
		{name: "h100-mps-memory-limit", want: Fail, fails: []string{"gpu0.alloc"}, advice: "MPS",
			facts: func() probe.Facts { return probed(healthyH100(), launches(2000, 0), 19.5) }},
		// A driver or vGPU that does not scrub: 4 KiB of the last tenant's
		// data at the start of each MiB sampled.
		{name: "h100-memory-residue", want: Fail, fails: []string{"gpu0.residue"}, advice: "does not clear memory between tenants",
			facts: func() probe.Facts {
				f := probed(healthyH100(), launches(2000, 0), 77.6)
				r := &f.Compute[0].Results[0]
				r.Value = 1248 * 4096
				r.Notes = i18n.Plain("read 78.0 MiB in 1248 samples over 77.60 GiB of fresh allocations before writing them: 1248 of 1248 samples held non-zero bytes; the first at 0.00 GiB into the memory sampled")
				return f
			}},
		// bench --soak 2m --memtest on a healthy card: 650 of 700 W, the
		// clock steady at 1755 MHz, every result equal to the first.
		{name: "h100-soak-memtest-healthy", order: Order{GPU: "H100 SXM", GPUs: 1}, want: Pass,
			facts: func() probe.Facts {
				f := probed(healthyH100(), launches(2000, 0), 77.6)
				memtested(&f, 0)
				soakRun(&f, 0, steady(690), steady(650), steady(1755))
				return f
			}},
		// Silent data corruption: the 3,130th result differs from the first
		// in one element, by 8.
		{name: "h100-soak-wrong-result", want: Fail, fails: []string{"gpu0.soak"}, advice: "silent data corruption",
			facts: func() probe.Facts {
				f := probed(healthyH100(), launches(2000, 0), 77.6)
				soakRun(&f, 0, steady(690), steady(650), steady(1755))
				s := f.Compute[0].Results[len(f.Compute[0].Results)-1].Soak
				s.Mismatches, s.FirstMismatch = 1, &compute.SoakMismatch{Iteration: 3130, Elements: 1, Element: 22369621, MaxDiff: 8}
				return f
			}},
		// The FP32 GEMM beside the BF16 loop, on the CUDA cores, gets one
		// element wrong.
		{name: "h100-soak-fp32-wrong", want: Fail, fails: []string{"gpu0.soak"}, advice: "silent data corruption",
			facts: func() probe.Facts {
				f := probed(healthyH100(), launches(2000, 0), 77.6)
				soakRun(&f, 0, steady(690), steady(650), steady(1755))
				s := f.Compute[0].Results[len(f.Compute[0].Results)-1].Soak.FP32
				s.Mismatches, s.FirstMismatch = 1, &compute.SoakMismatch{Iteration: 402, Elements: 1, Element: 22369621, MaxDiff: 8}
				return f
			}},
		// Power plateaus at 60% of the 700 W limit under the full GEMM.
		{name: "h100-soak-power-plateau", want: Warn, warns: []string{"gpu0.soak_power"},
			facts: func() probe.Facts {
				f := probed(healthyH100(), launches(2000, 0), 77.6)
				soakRun(&f, 0, steady(690), steady(420), steady(1755))
				return f
			}},
		// After 40 s the SM clock falls to 60% of 1980 MHz with thermal
		// slowdowns, and the throughput with it.
		{name: "h100-soak-clocks-fall", want: Warn, warns: []string{"gpu0.soak", "gpu0.soak_clocks"},
			facts: func() probe.Facts {
				f := probed(healthyH100(), launches(2000, 0), 77.6)
				after40 := func(a, b float64) func(float64) float64 {
					return func(t float64) float64 {
						if t > 40 {
							return b
						}
						return a
					}
				}
				soakRun(&f, 0, after40(690, 430), steady(650), after40(1755, 1188))
				return f
			}},
		// A weak cell: bit 5 of one word reads 0 whenever it should be 1.
		{name: "h100-memtest-weak-cell", want: Fail, fails: []string{"gpu0.memtest"}, advice: "does not keep what was written",
			facts: func() probe.Facts {
				f := probed(healthyH100(), launches(2000, 0), 77.6)
				m := memtested(&f, 0)
				m.Value = 3
				m.Notes = i18n.Plain(m.Notes.String() + "; walking one, bit 5: 1 words wrong at 0x7f2a6bc00000-0x7f2a6bc00003 (0.684 GiB into the memory tested), bits 0x20; " +
					"moving inversions 0x55555555: 1 words wrong at 0x7f2a6bc00000-0x7f2a6bc00003 (0.684 GiB into the memory tested), bits 0x20; " +
					"random, seed 0x5eed: 1 words wrong at 0x7f2a6bc00000-0x7f2a6bc00003 (0.684 GiB into the memory tested), bits 0x20")
				return f
			}},
		// Two H100s soaked at once: the second delivers 15% less.
		{name: "2x-h100-soak-one-slower", order: Order{GPU: "H100 SXM", GPUs: 2}, want: Warn, warns: []string{"gpu.soak_homogeneity"},
			facts: func() probe.Facts {
				f := probed(healthyH100(), launches(2000, 0), 77.6)
				d := f.GPU.Devices[0]
				d.Index, d.UUID, d.BusID = 1, "GPU-00000000-0000-0000-0000-000000000002", "00000000:2A:00.0"
				f.GPU.Devices = append(f.GPU.Devices, d)
				r := f.Compute[0]
				r.Index, r.Results = 1, slices.Clone(r.Results)
				f.Compute = append(f.Compute, r)
				soakRun(&f, 0, steady(690), steady(650), steady(1755))
				soakRun(&f, 1, steady(586), steady(650), steady(1755))
				return f
			}},
		// Eight H100s measured in full mode; gpu5 is power-capped: its FP32,
		// GEMM and sustained launches are 20% slower than its peers'.
		{name: "8x-h100-one-slower", order: Order{GPU: "H100 SXM", GPUs: 8}, want: Warn, warns: []string{"gpu.homogeneity"},
			facts: func() probe.Facts {
				f := probed(healthyH100(), launches(2000, 0), 77.6)
				f.Host.MemTotal, f.Host.MemAvailable = 2048*gib64, 2000*gib64 // RAM for eight GPUs' memory
				d0, r0 := f.GPU.Devices[0], f.Compute[0]
				for i := 1; i < 8; i++ {
					d := d0
					d.Index, d.UUID, d.BusID = i, fmt.Sprintf("GPU-00000000-0000-0000-0000-%012d", i+1), fmt.Sprintf("00000000:%02X:00.0", 0x18+0x10*i)
					f.GPU.Devices = append(f.GPU.Devices, d)
					r := r0
					r.Index, r.Results = i, slices.Clone(r0.Results)
					f.Compute = append(f.Compute, r)
				}
				for k := range f.Compute[5].Results {
					r := &f.Compute[5].Results[k]
					switch r.Probe {
					case compute.ProbeFP32, compute.ProbeGEMMBF16:
						r.Value *= 0.8
					case compute.ProbeSustain:
						r.Value /= 0.8
					}
				}
				return f
			}},
		// The links of an HGX H100 board, as a DGX H100's nvidia-smi
		// topo -m shows them: every pair NV18 through the NVSwitches.
		{name: "hgx-h100-8-healthy", order: Order{GPU: "H100 SXM", GPUs: 8}, want: Pass, facts: func() probe.Facts { return hgx8(nil) }},
		{name: "hgx-h100-nvlink-down", order: Order{GPU: "H100 SXM", GPUs: 8}, want: Fail, fails: []string{"gpu3.nvlink"}, advice: "NVLinks of this board are down or missing",
			facts: func() probe.Facts {
				return hgx8(func(f *probe.Facts) { f.GPU.Devices[3].NVLinks[7] = probe.NVLink{Link: 7, Version: "4.0"} })
			}},
		// A board whose GPU 6 shows NVML only 12 links, all up: six are
		// missing, not down.
		{name: "hgx-h100-nvlinks-missing", order: Order{GPU: "H100 SXM", GPUs: 8}, want: Fail, fails: []string{"gpu6.nvlink"}, advice: "NVLinks of this board are down or missing",
			facts: func() probe.Facts {
				return hgx8(func(f *probe.Facts) { f.GPU.Devices[6].NVLinks = f.GPU.Devices[6].NVLinks[:12] })
			}},
		{name: "hgx-h100-nvlink-crc-errors", order: Order{GPU: "H100 SXM", GPUs: 8}, want: Warn, warns: []string{"gpu5.nvlink"},
			facts: func() probe.Facts {
				return hgx8(func(f *probe.Facts) {
					f.GPU.Devices[5].NVLinks[2].Errors = &probe.LinkErrors{CRCFlit: 4210, Replay: 37}
				})
			}},
		{name: "hgx-h100-fabric-manager-down", order: Order{GPU: "H100 SXM", GPUs: 8}, want: Fail, fails: []string{"gpu.fabric"}, advice: "nvidia-fabricmanager",
			facts: func() probe.Facts {
				return hgx8(func(f *probe.Facts) {
					for i := range f.GPU.Devices {
						f.GPU.Devices[i].Fabric = &probe.Fabric{State: "in_progress"}
					}
				})
			}},
		// Four H100 PCIe cards, bridged in pairs, behind a host whose PCIe
		// switches keep ACS on: NVML says P2P is not supported by the chipset.
		{name: "4x-h100-pcie-p2p-blocked", order: Order{GPU: "H100 PCIe", GPUs: 4}, want: Warn, warns: []string{"gpu.p2p", "gpu.p2p_bandwidth"},
			facts: func() probe.Facts { return pcie4(true, "chipset not supported") }},
		// One bridge of a pair missing: 8 of 12 links up.
		{name: "4x-h100-pcie-bridge-missing", order: Order{GPU: "H100 PCIe", GPUs: 4}, want: Warn, warns: []string{"gpu2.nvlink", "gpu3.nvlink"},
			facts: func() probe.Facts {
				f := pcie4(true, "ok")
				for _, g := range []int{2, 3} {
					for l := 8; l < 12; l++ {
						f.GPU.Devices[g].NVLinks[l] = probe.NVLink{Link: l, Version: "4.0"}
					}
					f.GPU.Devices[g].NVLinksActive = p(8)
				}
				return f
			}},
		{name: "hgx-h100-p2p-hangs", order: Order{GPU: "H100 SXM", GPUs: 8}, want: Fail, fails: []string{"gpu.p2p_bandwidth"}, advice: "NCCL_P2P_DISABLE=1",
			facts: func() probe.Facts {
				return hgx8(func(f *probe.Facts) {
					f.Peers.Pairs = f.Peers.Pairs[:14] // gpu0 and gpu1's rows, then gpu2 to gpu0 hung
					f.Peers.Hung = "CUDA device 2 to 0"
					f.Peers.Pairs = append(f.Peers.Pairs, compute.Peer{Src: 2, Dst: 0, SrcGPU: 2, DstGPU: 0, Access: true, TimedOut: true,
						Error: "the copies did not finish in 10s: the path between these GPUs hangs"})
				})
			}},
		{name: "hgx-h100-one-slow-pair", order: Order{GPU: "H100 SXM", GPUs: 8}, want: Warn, warns: []string{"gpu.p2p_bandwidth"},
			facts: func() probe.Facts {
				return hgx8(func(f *probe.Facts) {
					for i := range f.Peers.Pairs {
						if x := &f.Peers.Pairs[i]; (x.Src == 2 && x.Dst == 5) || (x.Src == 5 && x.Dst == 2) {
							x.GBs, x.BidirGBs = 94.6, x.BidirGBs/4
						}
					}
				})
			}},
		{name: "hgx-h100-nvlink-errors-rise", order: Order{GPU: "H100 SXM", GPUs: 8}, want: Warn, warns: []string{"gpu.nvlink_errors"},
			facts: func() probe.Facts {
				return hgx8(func(f *probe.Facts) {
					for i := range f.NVLinkErrorsAfter {
						if a := &f.NVLinkErrorsAfter[i]; a.GPU == 6 && a.Link == 4 {
							a.CRCFlit, a.Replay = 57, 12
						}
					}
				})
			}},
		{name: "hgx-h100-nccl-p2p-disabled", order: Order{GPU: "H100 SXM", GPUs: 8}, want: Warn, warns: []string{"gpu.allreduce"},
			facts: func() probe.Facts {
				return hgx8(func(f *probe.Facts) {
					f.AllReduce = allReduceSweep(8, 9.1, 14.7, 17.2, 17.9, 18.1)
					f.AllReduce.Env = []string{"NCCL_P2P_DISABLE=1"}
				})
			}},
		{name: "hgx-h100-nccl-hangs", order: Order{GPU: "H100 SXM", GPUs: 8}, want: Fail, fails: []string{"gpu.allreduce"}, advice: "NCCL_P2P_DISABLE=1",
			facts: func() probe.Facts {
				return hgx8(func(f *probe.Facts) {
					f.AllReduce = &compute.AllReduce{Version: "2.28.9", Ranks: 8, Checked: true, Hung: "the all-reduce of 128 MiB",
						Error: "all-reduce of 128 MiB: the all-reduce did not finish in 30s: the path between these GPUs hangs"}
				})
			}},
		{name: "hgx-h100-no-nccl", order: Order{GPU: "H100 SXM", GPUs: 8}, want: Pass,
			facts: func() probe.Facts {
				return hgx8(func(f *probe.Facts) {
					f.AllReduce = &compute.AllReduce{Error: "NCCL (libnccl.so.2) is not on this machine: install it (the nvidia-nccl-cu12 or -cu13 wheel PyTorch brings, or the libnccl2 package), or set GPURENT_NCCL to its path"}
				})
			}},
		// bench --links on one GPU: the copies have no pair, NCCL ran one
		// rank; both say so, and the verdict is the one-GPU run's.
		{name: "h100-links-one-gpu", order: Order{GPU: "H100 SXM", GPUs: 1}, want: Pass,
			facts: func() probe.Facts {
				f := healthyH100()
				f.Peers = &compute.Peers{Devices: 1}
				f.AllReduce = &compute.AllReduce{Library: "libnccl.so.2", Version: "2.28.3", Ranks: 1, Checked: true,
					Sizes: []compute.AllReduceSize{{Bytes: 2 << 30, Ms: 1.31, AlgGBs: 1639.3}}}
				return f
			}},
		{name: "4x-h100-pcie-no-bridges", order: Order{GPU: "H100 PCIe", GPUs: 4}, want: Pass, facts: func() probe.Facts { return pcie4(false, "ok") }},
		{name: "no-driver", want: Pass,
			facts: func() probe.Facts {
				f := healthyH100()
				f.GPU = probe.GPUFacts{Error: "no NVIDIA GPU was found: the NVIDIA driver library libnvidia-ml.so.1 is not on this machine", Devices: []probe.Device{}}
				return f
			}},
		{name: "no-driver-expecting-h100", order: Order{GPU: "H100 SXM"}, want: Fail, fails: []string{"gpu.present"}, advice: "no NVIDIA GPU",
			facts: func() probe.Facts {
				f := healthyH100()
				f.GPU = probe.GPUFacts{Error: "no NVIDIA GPU was found: the NVIDIA driver library libnvidia-ml.so.1 is not on this machine", Devices: []probe.Device{}}
				return f
			}},
	}
}

func TestFixtures(t *testing.T) {
	tab, err := specs.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, fx := range fixtures() {
		t.Run(fx.name, func(t *testing.T) {
			path := filepath.Join("testdata", "fixtures", fx.name+".json")
			if *update {
				b, _ := json.MarshalIndent(fx.facts(), "", "  ")
				if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./internal/bench -run TestFixtures -update)", err)
			}
			var f probe.Facts
			if err := json.Unmarshal(b, &f); err != nil {
				t.Fatal(err)
			}
			r, err := Judge(f, tab, fx.order, DefaultLimits())
			if err != nil {
				t.Fatal(err)
			}
			var fails, warns []string
			var firstAdvice string
			for _, c := range r.Checks {
				if c.Status == Warn {
					warns = append(warns, c.ID)
				}
				if c.Status == Fail {
					fails = append(fails, c.ID)
					if firstAdvice == "" {
						firstAdvice = c.Advice.String()
					}
				}
			}
			slices.Sort(fails)
			if r.Verdict != fx.want || !slices.Equal(fails, fx.fails) {
				t.Errorf("verdict %s, failed %v; want %s, %v", r.Verdict, fails, fx.want, fx.fails)
				for _, c := range r.Checks {
					if c.Status != Pass {
						t.Logf("  %s %s: %s", c.ID, c.Status, c.Evidence.String())
					}
				}
			}
			if fx.warns != nil && !slices.Equal(warns, fx.warns) {
				t.Errorf("warned %v, want %v", warns, fx.warns)
			}
			if fx.advice != "" && !strings.Contains(firstAdvice, fx.advice) {
				t.Errorf("advice %q, want it to contain %q", firstAdvice, fx.advice)
			}
			for _, c := range r.Checks {
				if c.Status != Pass && c.Status != Skip && c.Advice.String() == "" {
					t.Errorf("%s is %s without advice", c.ID, c.Status)
				}
				if c.Evidence.String() == "" {
					t.Errorf("%s has no evidence", c.ID)
				}
			}
		})
	}
}

// A container's memory limit, not the host RAM /proc/meminfo shows, is
// what host.memory measures and judges.
func TestContainerMemoryLimit(t *testing.T) {
	tab, _ := specs.Load()
	f := healthyH100()
	f.Host.MemLimit = p(16 * gib64)
	r, err := Judge(f, tab, Order{}, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range r.Checks {
		if c.ID == "host.memory" {
			if c.Measured != 16.0 || c.Status != Warn || c.Evidence.String() != "this container may use 16.0 GiB (its memory cgroup's limit) of the host's 225.0 GiB RAM, 219.0 GiB of which is available; GPU memory 79.7 GiB in all" {
				t.Errorf("%+v", c)
			}
			return
		}
	}
	t.Fatal("no host.memory check")
}

// Host-device copies faster than the PCIe link can carry did not cross it
// (a GH200's NVLink-C2C): reported, not judged against that link; slow ones
// on the same link still fail. Synthetic values on the healthy H100's
// Gen5 x16 link (63.0 GB/s).
func TestHostDeviceBeyondThePCIeLink(t *testing.T) {
	tab, _ := specs.Load()
	for _, c := range []struct {
		gbs      float64
		status   string
		evidence string
	}{
		{50.1, Pass, "; 80% of the Gen5 x16 link's 63.0 GB/s"},
		{380, Pass, "; 603% of the Gen5 x16 link's 63.0 GB/s: more than that link carries, so these copies do not cross it"},
		{10, Fail, "; 16% of the Gen5 x16 link's 63.0 GB/s"},
	} {
		f := probed(healthyH100(), launches(2000, 0), 78.1)
		for i := range f.Compute[0].Results {
			if r := &f.Compute[0].Results[i]; r.Probe == compute.ProbeH2D {
				r.Value = c.gbs
			}
		}
		r, err := Judge(f, tab, Order{}, DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(r.Checks, func(ch Check) bool { return ch.ID == "gpu0.h2d" })
		if i < 0 {
			t.Fatal("no gpu0.h2d check")
		}
		ch := r.Checks[i]
		if ch.Status != c.status || !strings.Contains(ch.Evidence.String(), c.evidence) {
			t.Errorf("%.1f GB/s: %s %q, want %s and %q", c.gbs, ch.Status, ch.Evidence.String(), c.status, c.evidence)
		}
		if c.gbs > 100 && ch.Expected != nil {
			t.Errorf("%.1f GB/s: expected %v, want none (the link is not the path)", c.gbs, ch.Expected)
		}
	}
}

func TestBadOrder(t *testing.T) {
	tab, _ := specs.Load()
	if _, err := Judge(healthyH100(), tab, Order{GPU: "TPU v5"}, DefaultLimits()); err == nil || !strings.Contains(err.Error(), `--expect: no GPU in the datasheet table matches "TPU v5"; known models include`) {
		t.Errorf("got %v", err)
	}
	if _, err := Judge(healthyH100(), tab, Order{GPU: "A100 80GB SMX4"}, DefaultLimits()); err == nil || !strings.Contains(err.Error(), `matches "A100 80GB SMX4" (did you mean "A100 80GB SXM4"?)`) {
		t.Errorf("near miss: %v", err)
	}
}

func TestCountMismatch(t *testing.T) {
	tab, _ := specs.Load()
	r, err := Judge(healthyH100(), tab, Order{GPUs: 8}, DefaultLimits())
	if err != nil || r.Verdict != Fail || r.Checks[0].ID != "gpu.count" || r.Checks[0].Status != Fail {
		t.Errorf("%v %+v", err, r.Checks[0])
	}
}

// A disk test the probe declined (too big for the free space) is "not
// run", and one that broke is "failed": both skip host.disk.
func TestDiskTestNotRun(t *testing.T) {
	tab, _ := specs.Load()
	for e, want := range map[string]string{
		"not run: its 4096 MB would take more than half the free space; a smaller --disk-mb measures it": "; disk test not run: its 4096 MB would take more than half the free space; a smaller --disk-mb measures it",
		"disk test write: write /workspace/x: input/output error":                                        "; disk test failed: disk test write: write /workspace/x: input/output error",
	} {
		f := healthyH100()
		f.Host.DiskWriteMBs, f.Host.DiskReadMBs = nil, nil
		f.Host.Errors = map[string]string{"disk": e}
		r, err := Judge(f, tab, Order{}, DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, c := range r.Checks {
			if c.ID == "host.disk" {
				found = true
				if c.Status != Skip || !strings.Contains(c.Evidence.String(), want) {
					t.Errorf("%+v, want evidence with %q", c, want)
				}
			}
		}
		if !found {
			t.Error("no host.disk check")
		}
	}
}

// Host facts that could not be read are unknown, not zero: no /sys CPU
// list and no /proc/meminfo (a sandbox, an empty chroot) skip host.cpu and
// host.memory with the reason, and an order does not turn them into
// failures; no mount table leaves host.disk saying why its file system is
// not named.
func TestHostFactsNotRead(t *testing.T) {
	tab, _ := specs.Load()
	for _, order := range []Order{{}, {CPUs: 16, RAM: 64e9}} {
		f := healthyH100()
		f.Host.OnlineCPUs, f.Host.AllowedCPUs, f.Host.CPUQuota = 0, 0, nil
		f.Host.MemTotal, f.Host.MemAvailable, f.Host.MemLimit = 0, 0, nil
		f.Host.FSType, f.Host.FSSource = "", ""
		f.Host.Errors = map[string]string{"online_cpus": "open /sys/devices/system/cpu/online: no such file or directory", "memory": "open /proc/meminfo: no such file or directory",
			"filesystem": "open /proc/self/mountinfo: no such file or directory"}
		r, err := Judge(f, tab, order, DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{
			"host.cpu":    "CPUs not counted: open /sys/devices/system/cpu/online: no such file or directory",
			"host.memory": "RAM not read: open /proc/meminfo: no such file or directory",
		}
		for _, c := range r.Checks {
			if c.ID == "host.disk" && !strings.HasPrefix(c.Evidence.String(), "/workspace on a file system not known: open /proc/self/mountinfo: no such file or directory; write ") {
				t.Errorf("host.disk evidence %q", c.Evidence.String())
			}
			if ev, ok := want[c.ID]; ok {
				delete(want, c.ID)
				if c.Status != Skip || c.Measured != nil || c.Evidence.String() != ev || c.Advice.String() != "" {
					t.Errorf("order %+v: %s is %s, measured %v, evidence %q, advice %q; want skip, nothing measured, %q", order, c.ID, c.Status, c.Measured, c.Evidence.String(), c.Advice.String(), ev)
				}
			}
		}
		if len(want) > 0 {
			t.Errorf("order %+v: no check %v", order, want)
		}
	}
}

// With no container, hypervisor flag or DMI name found, the environment is
// called bare metal only where the flag would have shown a VM; elsewhere
// (arm64, /proc/cpuinfo unread) it says why that is not known. Facts
// recorded before hypervisor_unknown was kept read as before.
func TestBareMetalOnlyWhereTheFlagTells(t *testing.T) {
	for unknown, want := range map[string]string{
		"":                                   "bare metal, no container detected",
		"arm64 CPUs have no hypervisor flag": "no container detected; whether this is a virtual machine is not known: arm64 CPUs have no hypervisor flag, and no DMI product name was readable",
		"/proc/cpuinfo not read":             "no container detected; whether this is a virtual machine is not known: /proc/cpuinfo not read, and no DMI product name was readable",
	} {
		f := healthyH100()
		f.Sharing = probe.SharingFacts{HypervisorUnknown: unknown}
		if c := judged(t, f, "sharing.environment"); c.Evidence.String() != want || c.Status != Pass {
			t.Errorf("hypervisor_unknown %q: %s %q; want pass %q", unknown, c.Status, c.Evidence.String(), want)
		}
		// audit judges the same facts the same way.
		for _, c := range sharing.Checks(probe.Facts{Sharing: f.Sharing}) {
			if c.ID == "sharing.environment" && c.Evidence.String() != want {
				t.Errorf("sharing.Checks, hypervisor_unknown %q: %q", unknown, c.Evidence.String())
			}
		}
	}
}

// Where /proc/self/maps could not be read, sharing.interposer still
// passes on the two ways a library is preloaded, and says the mapped
// libraries went unseen rather than that none hooks CUDA.
func TestInterposerMapsUnread(t *testing.T) {
	f := healthyH100()
	f.Sharing.MapsUnread = true
	want := "no LD_PRELOAD or /etc/ld.so.preload; the libraries mapped into this process were not seen (/proc/self/maps not read)"
	if c := judged(t, f, "sharing.interposer"); c.Status != Pass || c.Evidence.String() != want {
		t.Errorf("%s %q; want pass %q", c.Status, c.Evidence.String(), want)
	}
}

// judged is the check id of f judged with no order and the default limits.
func judged(t *testing.T, f probe.Facts, id string) Check {
	t.Helper()
	tab, _ := specs.Load()
	r, err := Judge(f, tab, Order{}, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(r.Checks, func(ch Check) bool { return ch.ID == id })
	if i < 0 {
		t.Fatalf("no %s check", id)
	}
	return r.Checks[i]
}

// mma.sync is judged against what a healthy card of the architecture
// reached (Hopper: 61% of the dense peak, an H200 on 2026-12-04), where
// one was measured, and only reported elsewhere; cuBLASLt's GEMM of the
// same precision is judged against the peak, never the mma.sync figure.
func TestTensorCalibration(t *testing.T) {
	for _, c := range []struct {
		arch, probe string
		tflops      float64
		status      string
		evidence    string
	}{
		{"hopper", compute.ProbeBF16, 603, Pass, "61% of the H100 SXM5 datasheet's 989.5 TFLOPS"},
		// beside a co-tenant's GEMM loop the H200 gave 54% of its idle rate
		{"hopper", compute.ProbeBF16, 323, Warn, "33% of the H100 SXM5"},
		{"ampere", compute.ProbeBF16, 603, Skip, "not calibrated yet"},
		{"hopper", compute.ProbeGEMMBF16, 500, Pass, "51% of the H100 SXM5"},
	} {
		f := probed(healthyH100(), launches(2000, 0), 78.1)
		f.GPU.Devices[0].Architecture = c.arch
		for i := range f.Compute[0].Results {
			if r := &f.Compute[0].Results[i]; r.Probe == c.probe {
				r.Value = c.tflops
			}
		}
		ch := judged(t, f, "gpu0."+c.probe)
		if ch.Status != c.status || !strings.Contains(ch.Evidence.String(), c.evidence) {
			t.Errorf("%s %s at %.0f TFLOPS: %s %q, want %s and %q", c.arch, c.probe, c.tflops, ch.Status, ch.Evidence.String(), c.status, c.evidence)
		}
		if c.status == Warn && !strings.Contains(ch.Advice.String(), "H200 SXM measured 61%") {
			t.Errorf("%s %s: advice %q does not name the calibration", c.arch, c.probe, ch.Advice.String())
		}
	}
}
