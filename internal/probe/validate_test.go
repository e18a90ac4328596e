package probe

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/compute"
)

// recorded is facts as gpurent records them on a machine without a GPU.
func recorded() Facts {
	steal, busy := 0.2, 1.5
	return Facts{Version: FactsVersion, CollectedAt: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC), DurationS: 3,
		GPU:  GPUFacts{Error: "NVML not found", Devices: []Device{}},
		Host: HostFacts{OnlineCPUs: 8, MemTotal: 32 << 30, MemAvailable: 30 << 30, DataDir: "/workspace", StealPct: &steal, BusyPct: &busy}}
}

// Facts that were never recorded, or cannot be true, are refused with the
// field they are in; recorded facts, and a probe that could not read a
// field (nil, or in Errors), are not (issue #35, item 9).
func TestValidate(t *testing.T) {
	if err := recorded().Validate(); err != nil {
		t.Fatalf("recorded facts: %v", err)
	}
	unread := recorded()
	unread.Host = HostFacts{Errors: map[string]string{"online_cpus": "no /sys", "memory": "no /proc/meminfo"}}
	if err := unread.Validate(); err != nil {
		t.Errorf("a host whose probes all failed, saying why: %v", err)
	}
	f := func(change func(*Facts)) Facts { x := recorded(); change(&x); return x }
	fp := func(v float64) *float64 { return &v }
	for _, tc := range []struct {
		name  string
		facts Facts
		want  string
	}{
		{"empty", Facts{Version: FactsVersion}, "host: no host facts at all"},
		{"empty names the time", Facts{Version: FactsVersion}, "collected_at: missing"},
		{"empty names the gpu", Facts{Version: FactsVersion}, "gpu: no devices and no error"},
		{"negative CPUs", f(func(x *Facts) { x.Host.OnlineCPUs = -4 }), "host.online_cpus: want 0 or more, got -4"},
		{"negative allowed CPUs", f(func(x *Facts) { x.Host.AllowedCPUs = -1 }), "host.allowed_cpus: want 0 or more, got -1"},
		{"negative steal", f(func(x *Facts) { x.Host.StealPct = fp(-5) }), "host.steal_pct: want a percentage from 0 to 100, got -5"},
		{"huge steal", f(func(x *Facts) { x.Host.StealPct = fp(1e300) }), "host.steal_pct: want a percentage from 0 to 100, got 1e+300"},
		{"busy over 100", f(func(x *Facts) { x.Host.BusyPct = fp(150) }), "host.busy_pct: want a percentage from 0 to 100, got 150"},
		{"zero quota", f(func(x *Facts) { x.Host.CPUQuota = fp(0) }), "host.cpu_quota: want a positive number of CPUs"},
		{"more available than total", f(func(x *Facts) { x.Host.MemAvailable = 64 << 30 }), "host.mem_available: 68719476736 bytes, more than mem_total 34359738368"},
		{"negative duration", f(func(x *Facts) { x.DurationS = -3 }), "duration_s: want 0 or more seconds, got -3"},
		{"negative disk speed", f(func(x *Facts) { x.Host.DiskWriteMBs = fp(-1) }), "host.disk_write_mbs: want 0 or more and below 1e+06 MB/s, got -1"},
		{"impossible disk speed", f(func(x *Facts) { x.Host.DiskWriteMBs = fp(1e308) }), "host.disk_write_mbs: want 0 or more and below 1e+06 MB/s, got 1e+308"},
		{"NaN disk speed", f(func(x *Facts) { x.Host.DiskReadMBs = fp(math.NaN()) }), "host.disk_read_mbs: want 0 or more and below 1e+06 MB/s, got NaN"},
		{"utilization over 100", f(func(x *Facts) {
			x.GPU = GPUFacts{Available: true, Devices: []Device{{UtilizationSamples: []uint32{0, 101}}}}
		}), "gpu.devices[0].utilization_samples[1]: want a percentage from 0 to 100, got 101"},
		{"negative power", f(func(x *Facts) {
			x.GPU = GPUFacts{Available: true, Devices: []Device{{PowerLimitW: fp(-700)}}}
		}), "gpu.devices[0].power_limit_w: want 0 or more, got -700"},
		{"a pair of one GPU", f(func(x *Facts) {
			x.GPU = GPUFacts{Available: true, Devices: []Device{{Index: 0}, {Index: 1}}, Pairs: []GPUPair{{A: 1, B: 1}}}
		}), "gpu.pairs[0]: want two GPUs of gpu.devices, the lower index first, got 1 and 1"},
		{"a NIC short of paths", f(func(x *Facts) {
			x.GPU = GPUFacts{Available: true, Devices: []Device{{Index: 0}, {Index: 1}}, NICs: []NIC{{Name: "mlx5_0", Paths: []string{"PIX"}}}}
		}), "gpu.nics[0].paths: want one path per GPU (2), got 1"},
		{"a copy to a GPU not there", f(func(x *Facts) {
			x.GPU = GPUFacts{Available: true, Devices: []Device{{Index: 0}, {Index: 1}}}
			x.Peers = &compute.Peers{Devices: 2, Pairs: []compute.Peer{{SrcGPU: 0, DstGPU: 7, GBs: 300}}}
		}), "peers.pairs[0].src_gpu: want two different GPUs of gpu.devices, got 0 and 7"},
		{"a link listed twice", f(func(x *Facts) {
			x.GPU = GPUFacts{Available: true, Devices: []Device{{NVLinks: []NVLink{{Link: 3, Active: true}, {Link: 3, Active: true}}}}}
		}), "gpu.devices[0].nvlinks[1].link: link 3 is listed twice"},
		{"a copy at 0 GB/s that did not fail", f(func(x *Facts) {
			x.GPU = GPUFacts{Available: true, Devices: []Device{{Index: 0}, {Index: 1}}}
			x.Peers = &compute.Peers{Devices: 2, Pairs: []compute.Peer{{SrcGPU: 0, DstGPU: 1}}}
		}), "peers.pairs[0].gbs: want a bandwidth above 0"},
		{"an all-reduce of nothing", f(func(x *Facts) { x.AllReduce = &compute.AllReduce{Ranks: 8} }), "all_reduce: 8 ranks, and no sizes measured"},
		{"negative bus bandwidth", f(func(x *Facts) {
			x.AllReduce = &compute.AllReduce{Ranks: 2, BusGBs: -1}
		}), "all_reduce.bus_gbs: want 0 or more, got -1"},
	} {
		err := tc.facts.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want %q", tc.name, err, tc.want)
		}
	}
}
