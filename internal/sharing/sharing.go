// Package sharing judges the signs that someone else shares this machine's
// GPUs: API-hooking layers, MPS and sharing limits, and per GPU a MIG
// slice, a vGPU, a shared compute mode and other tenants' processes. Bench
// reports them among its checks and audit beside the host's other
// exposures; neither feature imports the other for them.
package sharing

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/gpurent/gpurent/internal/check"
	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/probe"
)

// Advice shared by several checks, here and in bench.
const (
	AdviceRefund = "Stop here: keep this report (gpurent bench -o json > report.json) and ask the provider for another machine or a refund within the first billing increment."
	AdviceShared = "The GPU is shared with someone else: ask for a dedicated card, or release the instance before the first billing increment ends."
)

// Checks judges every sign of sharing in f, with no GPU ordered.
func Checks(f probe.Facts) []check.Check {
	out := Host(f.Sharing)
	for i := range f.GPU.Devices {
		d := &f.GPU.Devices[i]
		p := fmt.Sprintf("gpu%d.", d.Index)
		out = append(out, MIG(p, d, ""), Processes(p, d), Virtualization(p, d), ComputeMode(p, d))
	}
	return out
}

// Host judges the machine-wide signs: an interposer library, MPS or
// sharing limits in the environment, and what the machine is (container,
// VM, bare metal).
func Host(s probe.SharingFacts) []check.Check {
	var out []check.Check
	c := check.Check{ID: "sharing.interposer", Status: check.Pass, Expected: i18n.Textf("none"), Unit: ""}
	var found []string
	if s.LDPreload != "" {
		found = append(found, "LD_PRELOAD="+s.LDPreload)
	}
	for _, l := range s.LDSoPreload {
		found = append(found, "/etc/ld.so.preload: "+l)
	}
	for _, m := range s.MappedInterposers {
		found = append(found, "mapped: "+m)
	}
	c.Measured = strings.Join(found, "; ")
	vgpu := strings.Contains(c.Measured.(string), "libvgpu")
	switch {
	case vgpu:
		c.Status = check.Fail
		c.Evidence = i18n.Textf("libvgpu.so (HAMi-core) is preloaded: it hooks the CUDA driver API to cap this process's memory and SM share; %s", c.Measured.(string))
		c.Advice = i18n.Textf("The GPU is split between containers by an API-hooking layer. %s", i18n.Textf(AdviceShared))
	case len(found) > 0:
		c.Status = check.Warn
		c.Evidence = i18n.Textf("libraries are preloaded into every process: %s", c.Measured.(string))
		c.Advice = i18n.Textf("A preloaded library can intercept CUDA calls; check what it is before trusting measurements.")
	case s.MapsUnread:
		c.Evidence = i18n.Textf("no LD_PRELOAD or /etc/ld.so.preload; the libraries mapped into this process were not seen (/proc/self/maps not read)")
	default:
		c.Evidence = i18n.Textf("no LD_PRELOAD, /etc/ld.so.preload or CUDA-hooking library")
	}
	out = append(out, c)

	m := check.Check{ID: "sharing.mps_and_limits", Status: check.Pass, Expected: i18n.Textf("none")}
	var traces []string
	if s.MPSPipeDirectory != "" {
		traces = append(traces, "MPS pipe directory "+s.MPSPipeDirectory+" exists")
	}
	keys := make([]string, 0, len(s.CUDAEnv))
	for k := range s.CUDAEnv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		traces = append(traces, k+"="+s.CUDAEnv[k])
	}
	m.Measured = strings.Join(traces, "; ")
	if len(traces) > 0 {
		m.Status = check.Fail
		m.Evidence = i18n.Plain(strings.Join(traces, "; "))
		m.Advice = i18n.Textf("The environment attaches this machine to a shared GPU (MPS) or caps its share of one. %s", i18n.Textf(AdviceShared))
	} else {
		m.Evidence = i18n.Textf("no MPS pipe directory and no CUDA sharing or limit variables")
	}
	out = append(out, m)

	e := check.Check{ID: "sharing.environment", Status: check.Pass, Measured: s.Container, Unit: ""}
	var env []string
	if s.Container != "" {
		env = append(env, "container: "+s.Container+" ("+s.ContainerEvidence+")")
	}
	if s.Hypervisor {
		env = append(env, "virtual machine (CPU hypervisor flag)")
	}
	if s.DMIProduct != "" {
		env = append(env, "DMI product: "+strings.TrimSpace(s.DMIVendor+" "+s.DMIProduct))
	}
	if s.CUDAVisibleDevices != nil {
		env = append(env, fmt.Sprintf("CUDA_VISIBLE_DEVICES=%q", *s.CUDAVisibleDevices))
	}
	e.Evidence = i18n.Plain(strings.Join(env, "; "))
	switch {
	case len(env) > 0:
	case s.HypervisorUnknown != "":
		// Bare metal only where a VM would have shown the flag.
		why := i18n.Data(s.HypervisorUnknown)
		if arch, ok := strings.CutSuffix(s.HypervisorUnknown, " CPUs have no hypervisor flag"); ok {
			why = i18n.Textf("%s CPUs have no hypervisor flag", arch)
		}
		e.Evidence = i18n.Textf("no container detected; whether this is a virtual machine is not known: %s, and no DMI product name was readable", why)
	default:
		e.Evidence = i18n.Textf("bare metal, no container detected")
	}
	return append(out, e)
}

// MIG judges whether d is a MIG slice rather than the whole card; ordered
// is the GPU model ordered ("" when none was), which makes a slice a failure.
func MIG(p string, d *probe.Device, ordered string) check.Check {
	c := check.Check{ID: p + "mig", Unit: "", Expected: false}
	switch {
	case d.MIGEnabled == nil:
		c.Status, c.Evidence = check.Skip, i18n.Textf("MIG mode not readable: %s", d.Errors["mig"])
	case !*d.MIGEnabled:
		c.Status, c.Measured, c.Evidence = check.Pass, false, i18n.Textf("MIG is off: the whole card is yours")
	default:
		var names []string
		for _, m := range d.MIGDevices {
			s := m.Name
			if m.MemoryTotal != nil {
				s += fmt.Sprintf(" (%.1f GiB)", gib(*m.MemoryTotal))
			}
			names = append(names, s)
		}
		c.Measured = true
		c.Evidence = i18n.Textf("MIG is on; instances visible: %s", strings.Join(names, ", "))
		if len(names) == 0 {
			c.Evidence = i18n.Textf("MIG is on")
		}
		c.Status = check.Warn
		c.Advice = i18n.Textf("This is a MIG slice of the card, not the whole card: its memory and SMs are a fraction of the datasheet's.")
		if ordered != "" {
			c.Status = check.Fail
			c.Advice = i18n.Textf("You ordered a whole %s and got a MIG slice of it. %s", ordered, i18n.Textf(AdviceRefund))
		}
	}
	return c
}

// Processes judges the other processes that hold d.
func Processes(p string, d *probe.Device) check.Check {
	c := check.Check{ID: p + "processes", Unit: "processes", Expected: 0, Measured: len(d.Processes), Status: check.Pass}
	if len(d.Processes) == 0 {
		if e := d.Errors["processes_compute"]; e != "" {
			c.Status, c.Measured, c.Evidence = check.Skip, nil, i18n.Textf("process list not readable: %s", e)
		} else {
			c.Evidence = i18n.Textf("no compute or MPS process holds this GPU")
		}
		return c
	}
	var parts []i18n.Text
	mps := false
	for _, pr := range d.Processes {
		s := i18n.Plain(fmt.Sprintf("%s pid %d", pr.Kind, pr.PID))
		if pr.UsedMemory != nil {
			s = i18n.Textf("%s pid %d holding %.2f GiB", pr.Kind, pr.PID, gib(*pr.UsedMemory))
		}
		parts = append(parts, s)
		mps = mps || pr.Kind == "mps"
	}
	c.Evidence = i18n.Textf("%s (host PIDs: NVML does not see container namespaces)", i18n.Join(parts, "; "))
	c.Status, c.Advice = check.Fail, i18n.Textf("Other processes are running on this GPU before your job started. %s", i18n.Textf(AdviceShared))
	if mps {
		c.Advice = i18n.Textf("An MPS server shares this GPU between clients. %s", i18n.Textf(AdviceShared))
	}
	return c
}

// Virtualization judges whether d is a vGPU or a hosted one.
func Virtualization(p string, d *probe.Device) check.Check {
	c := check.Check{ID: p + "virtualization", Measured: d.Virtualization, Expected: i18n.Textf("none or passthrough"), Status: check.Pass}
	switch d.Virtualization {
	case "":
		c.Status, c.Evidence = check.Skip, i18n.Textf("virtualization mode not readable: %s", d.Errors["virtualization"])
	case "none":
		c.Evidence = i18n.Textf("bare metal or container: the driver sees the physical GPU")
	case "passthrough":
		c.Evidence = i18n.Textf("a VM with the whole GPU passed through")
	case "vgpu":
		c.Status, c.Evidence = check.Fail, i18n.Textf("a vGPU guest: the physical GPU is time-sliced between virtual machines by the host")
		c.Advice = i18n.Textf("This is a virtual GPU, shared with other VMs by the host's scheduler. %s", i18n.Textf(AdviceShared))
	default:
		c.Status, c.Evidence = check.Warn, i18n.Textf("the driver runs in host mode (%s)", d.Virtualization)
		// host_vgpu and host_vsga: this machine is the hypervisor that
		// carves the GPU into virtual GPUs (or shared graphics) for VMs.
		c.Advice = i18n.Textf("This machine hosts virtual GPUs: other virtual machines may be using this GPU at the same time. Ask whether any are, or for a dedicated card.")
	}
	return c
}

// ComputeMode judges whether d admits one process only (an MPS set-up)
// or none.
func ComputeMode(p string, d *probe.Device) check.Check {
	c := check.Check{ID: p + "compute_mode", Measured: d.ComputeMode, Expected: "default", Status: check.Pass}
	switch d.ComputeMode {
	case "":
		c.Status, c.Evidence = check.Skip, i18n.Textf("compute mode not readable: %s", d.Errors["compute_mode"])
	case "default":
		c.Evidence = i18n.Textf("any number of processes may use the GPU")
	case "prohibited":
		c.Status, c.Evidence = check.Fail, i18n.Textf("compute is prohibited on this GPU")
		c.Advice = i18n.Textf("No process can run CUDA work on this GPU. %s", i18n.Textf(AdviceRefund))
	default:
		c.Status, c.Evidence = check.Warn, i18n.Textf("compute mode %s (MPS set-ups use exclusive_process)", d.ComputeMode)
		c.Advice = i18n.Textf("Only one process may use the GPU; if an MPS server is that process, the GPU is shared.")
	}
	return c
}

func gib(b uint64) float64 { return math.Round(float64(b)/(1<<30)*100) / 100 }
