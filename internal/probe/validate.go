package probe

import (
	"errors"
	"fmt"

	"github.com/gpurent/gpurent/internal/i18n"
)

// maxGBs bounds a bandwidth between GPUs: far above any link (NVLink 5
// carries 1.8 TB/s a GPU), and small enough that sums and averages of a
// few stay finite.
const maxGBs = 1e5

// maxDiskMBs bounds a disk speed in facts (host.disk_write_mbs, _read_mbs).
const maxDiskMBs = 1e6

// Validate reports facts that were never recorded or cannot be true, one
// error per field, named by its JSON path ("host.steal_pct"). Bench judges
// only what was measured: facts missing altogether, or impossible (a
// negative CPU count, a steal of more than all the time there is), would
// otherwise judge as an idle, unshared machine and pass. Fields that are
// absent where a probe could not read them (nil, or named in Errors) are
// valid: the checks skip them.
func (f Facts) Validate() error {
	var errs []error
	bad := func(field, format string, a ...any) {
		errs = append(errs, i18n.Errorf("%s: %w", field, i18n.Errorf(format, a...)))
	}
	nonNeg := func(field string, v *float64) {
		if v != nil && !(*v >= 0) {
			bad(field, "want 0 or more, got %g", *v)
		}
	}
	pct := func(field string, v *float64) {
		if v != nil && !(*v >= 0 && *v <= 100) {
			bad(field, "want a percentage from 0 to 100, got %g", *v)
		}
	}
	count := func(field string, v *int) {
		if v != nil && *v < 0 {
			bad(field, "want 0 or more, got %d", *v)
		}
	}
	if f.CollectedAt.IsZero() {
		bad("collected_at", "missing: gpurent records when it gathered the facts")
	}
	if !(f.DurationS >= 0) {
		bad("duration_s", "want 0 or more seconds, got %g", f.DurationS)
	}

	g := f.GPU
	if !g.Available && g.Error == "" && len(g.Devices) == 0 {
		bad("gpu", "no devices and no error: NVML was neither asked nor said why it could not be")
	}
	for i := range g.Devices {
		d := &g.Devices[i]
		at := fmt.Sprintf("gpu.devices[%d].", i)
		count(at+"index", &d.Index)
		for j, u := range d.UtilizationSamples {
			if u > 100 {
				bad(fmt.Sprintf("%sutilization_samples[%d]", at, j), "want a percentage from 0 to 100, got %d", u)
			}
		}
		nonNeg(at+"power_limit_w", d.PowerLimitW)
		nonNeg(at+"power_limit_default_w", d.PowerLimitDefaultW)
		nonNeg(at+"power_limit_max_w", d.PowerLimitMaxW)
		nonNeg(at+"power_draw_w", d.PowerDrawW)
		count(at+"pcie_gen_curr", d.PCIeGenCurr)
		count(at+"pcie_gen_max", d.PCIeGenMax)
		count(at+"pcie_gen_gpu_max", d.PCIeGenGPUMax)
		count(at+"pcie_width_curr", d.PCIeWidthCurr)
		count(at+"pcie_width_max", d.PCIeWidthMax)
		count(at+"nvlinks_active", d.NVLinksActive)
		count(at+"performance_state", d.PerformanceState)
		seen := map[int]bool{}
		for j, l := range d.NVLinks {
			if l.Link < 0 || l.Link >= 36 {
				bad(fmt.Sprintf("%snvlinks[%d].link", at, j), "want a link number from 0 to 35 (NVML_NVLINK_MAX_LINKS), got %d", l.Link)
			} else if seen[l.Link] {
				bad(fmt.Sprintf("%snvlinks[%d].link", at, j), "link %d is listed twice", l.Link)
			}
			seen[l.Link] = true
		}
		if d.MemoryTotal != nil && d.MemoryUsed != nil && *d.MemoryUsed > *d.MemoryTotal {
			bad(at+"memory_used", "%d bytes, more than memory_total %d", *d.MemoryUsed, *d.MemoryTotal)
		}
	}

	indexes := map[int]bool{}
	for _, d := range g.Devices {
		indexes[d.Index] = true
	}
	for i, n := range g.NICs {
		if len(n.Paths) != len(g.Devices) {
			bad(fmt.Sprintf("gpu.nics[%d].paths", i), "want one path per GPU (%d), got %d", len(g.Devices), len(n.Paths))
		}
	}
	for i, p := range g.Pairs {
		if p.A >= p.B || !indexes[p.A] || !indexes[p.B] {
			bad(fmt.Sprintf("gpu.pairs[%d]", i), "want two GPUs of gpu.devices, the lower index first, got %d and %d", p.A, p.B)
		}
	}

	for i, c := range f.Compute {
		at := fmt.Sprintf("compute[%d].", i)
		count(at+"index", &c.Index)
		for j, r := range c.Results {
			at := fmt.Sprintf("%sresults[%d].", at, j)
			if !(r.Value >= 0) {
				bad(at+"value", "want 0 or more, got %g", r.Value)
			}
			if !(r.WallMs >= 0) {
				bad(at+"wall_ms", "want 0 or more, got %g", r.WallMs)
			}
		}
	}
	if p := f.Peers; p != nil {
		for i, x := range p.Pairs {
			at := fmt.Sprintf("peers.pairs[%d].", i)
			if !(x.GBs >= 0 && x.GBs < maxGBs) || !(x.BidirGBs >= 0 && x.BidirGBs < maxGBs) || (x.Error == "" && x.GBs == 0) {
				bad(at+"gbs", "want a bandwidth above 0 and below %g GB/s where the copies did not fail, got %g and %g both ways", maxGBs, x.GBs, x.BidirGBs)
			}
			if !indexes[x.SrcGPU] || !indexes[x.DstGPU] || x.SrcGPU == x.DstGPU {
				bad(at+"src_gpu", "want two different GPUs of gpu.devices, got %d and %d", x.SrcGPU, x.DstGPU)
			}
		}
	}
	if a := f.AllReduce; a != nil {
		if a.Ranks > 1 && len(a.Sizes) == 0 && a.Error == "" && a.Hung == "" {
			bad("all_reduce", "%d ranks, and no sizes measured, no error and no hang: not an all-reduce gpurent recorded", a.Ranks)
		}
		for i, s := range a.Sizes {
			if s.Bytes <= 0 || !(s.Ms > 0) || !(s.BusGBs >= 0 && s.BusGBs < maxGBs) || !(s.AlgGBs >= 0 && s.AlgGBs < maxGBs) {
				bad(fmt.Sprintf("all_reduce.sizes[%d]", i), "want a positive size and time and bandwidths of 0 or more, got %d bytes, %g ms, %g and %g GB/s", s.Bytes, s.Ms, s.AlgGBs, s.BusGBs)
			}
		}
		if !(a.BusGBs >= 0) {
			bad("all_reduce.bus_gbs", "want 0 or more, got %g", a.BusGBs)
		}
	}
	if x := f.XidEvents; x != nil && !(x.Seconds >= 0) {
		bad("xid_events.seconds", "want 0 or more, got %g", x.Seconds)
	}

	h := f.Host
	if h.OnlineCPUs == 0 && h.AllowedCPUs == 0 && h.MemTotal == 0 && h.DataDir == "" && len(h.Errors) == 0 {
		bad("host", "no host facts at all (no online_cpus, mem_total, data_dir or errors): not facts gpurent recorded")
	}
	count("host.online_cpus", &h.OnlineCPUs)
	count("host.allowed_cpus", &h.AllowedCPUs)
	if h.CPUQuota != nil && !(*h.CPUQuota > 0) {
		bad("host.cpu_quota", "want a positive number of CPUs (absent when unlimited), got %g", *h.CPUQuota)
	}
	pct("host.steal_pct", h.StealPct)
	pct("host.busy_pct", h.BusyPct)
	nonNeg("host.load_avg_1", h.LoadAvg1)
	if h.MemAvailable > h.MemTotal {
		bad("host.mem_available", "%d bytes, more than mem_total %d", h.MemAvailable, h.MemTotal)
	}
	if h.FSFree != nil && h.FSSize != nil && *h.FSFree > *h.FSSize {
		bad("host.fs_free", "%d bytes, more than fs_size %d", *h.FSFree, *h.FSSize)
	}
	// No disk a machine rents moves a terabyte a second (the fastest
	// NVMe drives move some 14 GB/s; memory itself some hundreds): a
	// speed beyond is no measurement, and must not pass as a fast disk.
	for _, d := range []struct {
		name string
		v    *float64
	}{{"host.disk_write_mbs", h.DiskWriteMBs}, {"host.disk_read_mbs", h.DiskReadMBs}} {
		if d.v != nil && !(*d.v >= 0 && *d.v < maxDiskMBs) {
			bad(d.name, "want 0 or more and below %g MB/s, got %g", float64(maxDiskMBs), *d.v)
		}
	}
	if h.DiskTestBytes < 0 {
		bad("host.disk_test_bytes", "want 0 or more, got %d", h.DiskTestBytes)
	}
	return errors.Join(errs...)
}
