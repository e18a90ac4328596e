package bench

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/gpurent/gpurent/internal/check"
	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/sharing"
)

func (j *judge) sharing() {
	for _, c := range sharing.Host(j.f.Sharing) {
		j.add(c)
	}
}

func (j *judge) host() {
	h := j.f.Host
	cpu := Check{ID: "host.cpu", Status: Pass, Unit: "CPUs"}
	cpu.Evidence = i18n.Textf("%s, %d CPUs online", h.CPUModel, h.OnlineCPUs)
	// What the container may use: /sys lists the host's CPUs, while its
	// cpuset (the affinity) and its cgroup quota say how many it gets.
	usable := float64(h.OnlineCPUs)
	if h.AllowedCPUs > 0 && (h.AllowedCPUs < h.OnlineCPUs || h.OnlineCPUs == 0) {
		usable = float64(h.AllowedCPUs)
		cpu.Evidence = i18n.Textf("%s%s", cpu.Evidence, i18n.Textf(", %d of them allowed to this process (its cpuset)", h.AllowedCPUs))
	}
	if h.CPUQuota != nil {
		cpu.Evidence = i18n.Textf("%s%s", cpu.Evidence, i18n.Textf(", cgroup quota %.1f CPUs", *h.CPUQuota))
		if usable == 0 || *h.CPUQuota < usable {
			usable = *h.CPUQuota
		}
	}
	cpu.Measured = round1(usable)
	if !(usable > 0) {
		// Unknown is not zero: a count that could not be read (or one
		// below zero, which no machine has) is no evidence of CPUs.
		cpu.Status, cpu.Measured, cpu.Evidence = Skip, nil, i18n.Textf("CPUs not counted: %s", cmp.Or(h.Errors["online_cpus"], "none listed online"))
	}
	if h.OnlineCPUs > 0 && usable < float64(h.OnlineCPUs)-0.01 {
		cpu.Status, cpu.Expected = Warn, h.OnlineCPUs
		cpu.Advice = i18n.Textf("The container may use fewer CPUs than it sees: set data-loader workers to the CPUs it may use, not to the CPU count.")
	}
	if want := j.order.CPUs; want > 0 {
		cpu.Expected = want
		if usable > 0 && usable < float64(want)-0.01 {
			cpu.Status = Fail
			cpu.Advice = i18n.Textf("You ordered %d CPUs and this container may use %g: data loading and preprocessing get less than was paid for. %s", want, round1(usable), i18n.Textf(adviceRefund))
		}
	}
	j.add(cpu)

	st := Check{ID: "host.steal", Unit: "%", Expected: fmt.Sprintf("< %g", j.lim.StealWarn)}
	switch {
	case h.StealPct == nil:
		st.Status, st.Evidence = Skip, i18n.Textf("CPU steal not sampled: %s", h.Errors["steal"])
	default:
		st.Measured = round1(*h.StealPct)
		st.Evidence = i18n.Textf("%.1f%% of CPU time stolen by the hypervisor over %.0f s", *h.StealPct, j.f.DurationS)
		switch {
		case *h.StealPct >= j.lim.StealFail:
			st.Status, st.Advice = Fail, i18n.Textf("The host's CPUs are oversold: other guests take a large share of yours, and your data loading will starve the GPU. Ask for another host.")
		case *h.StealPct >= j.lim.StealWarn:
			st.Status, st.Advice = Warn, i18n.Textf("Other guests take some of your CPU time; watch data-loading throughput.")
		default:
			st.Status = Pass
		}
	}
	j.add(st)

	if h.BusyPct != nil {
		b := Check{ID: "host.load", Unit: "%", Measured: round1(*h.BusyPct), Expected: fmt.Sprintf("< %g", j.lim.BusyWarn), Status: Pass}
		b.Evidence = i18n.Textf("%.1f%% of all CPU time was busy while gpurent slept", *h.BusyPct)
		if *h.BusyPct >= j.lim.BusyWarn {
			b.Status, b.Advice = Warn, i18n.Textf("Other processes are using the CPUs; check that they are yours (top).")
		}
		j.add(b)
	}

	// In a container /proc/meminfo shows the host's RAM; the memory
	// cgroup's limit is what the training may use before the OOM killer.
	total, avail := h.MemTotal, h.MemAvailable
	mem := Check{ID: "host.memory", Unit: "GiB", Status: Pass}
	mem.Evidence = i18n.Textf("%.1f GiB RAM, %.1f GiB available", gib(total), gib(avail))
	if h.MemLimit != nil && *h.MemLimit < total {
		total, avail = *h.MemLimit, min(avail, *h.MemLimit)
		mem.Evidence = i18n.Textf("this container may use %.1f GiB (its memory cgroup's limit) of the host's %.1f GiB RAM, %.1f GiB of which is available",
			gib(total), gib(h.MemTotal), gib(h.MemAvailable))
	}
	mem.Measured = gib(total)
	var vram uint64
	for _, d := range j.f.GPU.Devices {
		if d.MemoryTotal != nil {
			vram += *d.MemoryTotal
		}
	}
	if vram > 0 {
		want := j.lim.RAMPerVRAM * float64(vram)
		mem.Expected = round1(want / (1 << 30))
		mem.Evidence = i18n.Textf("%s%s", mem.Evidence, i18n.Textf("; GPU memory %.1f GiB in all", gib(vram)))
		if float64(total) < want {
			mem.Status, mem.Advice = Warn, i18n.Textf("Less RAM than GPU memory: loading a model or dataset that fills the GPU will not fit in RAM first.")
		}
	}
	if total > 0 && avail*10 < total {
		mem.Status, mem.Advice = Warn, i18n.Textf("Less than 10%% of RAM is available: something else holds it.")
	}
	if total == 0 {
		mem.Status, mem.Measured, mem.Advice, mem.Evidence = Skip, nil, i18n.Textf(""), i18n.Textf("RAM not read: %s", cmp.Or(h.Errors["memory"], "/proc/meminfo gave no MemTotal"))
	}
	if want := j.order.RAM; want > 0 {
		mem.Expected = round1(want / (1 << 30))
		switch {
		case total == 0:
		case float64(total) < j.lim.RAMOrderMin*want:
			mem.Status = Fail
			mem.Advice = i18n.Textf("You ordered %.0f GB of RAM and this machine gives %.1f GiB (%.0f GB): a dataset or model that fits the order will not fit here. %s",
				want/1e9, gib(total), float64(total)/1e9, i18n.Textf(adviceRefund))
		}
	}
	j.add(mem)

	d := Check{ID: "host.disk", Unit: "MB/s", Status: Pass}
	d.Evidence = i18n.Textf("%s on %s (%s)", h.DataDir, h.FSType, h.FSSource)
	if h.FSType == "" {
		d.Evidence = i18n.Textf("%s on a file system not known: %s", h.DataDir, cmp.Or(h.Errors["filesystem"], "no mount of it in /proc/self/mountinfo"))
	}
	if h.DiskWriteMBs != nil && h.DiskReadMBs != nil {
		d.Measured = round1(*h.DiskWriteMBs)
		d.Expected = fmt.Sprintf(">= %g", j.lim.DiskWriteWarnMBs)
		d.Evidence = i18n.Textf("%s%s", d.Evidence, i18n.Textf("; write %.0f MB/s, read %.0f MB/s (%d MB, %s)", *h.DiskWriteMBs, *h.DiskReadMBs, h.DiskTestBytes/1e6, h.DiskTestMethod))
		if *h.DiskWriteMBs < j.lim.DiskWriteWarnMBs {
			d.Status, d.Advice = Warn, i18n.Textf("The data disk is slow: checkpoints will take long to write; keep them small or stream them off the box.")
		}
	} else if e := h.Errors["disk"]; e != "" {
		if rest, ok := strings.CutPrefix(e, "not run: "); ok {
			d.Evidence = i18n.Textf("%s%s", d.Evidence, i18n.Textf("; disk test not run: %s", rest))
		} else {
			d.Evidence = i18n.Textf("%s%s", d.Evidence, i18n.Textf("; disk test failed: %s", e))
		}
		d.Status = Skip
	} else {
		d.Evidence = i18n.Textf("%s%s", d.Evidence, i18n.Textf("; throughput not measured"))
		d.Status = Skip
	}
	if h.FSNetwork {
		d.Status = Warn
		d.Advice = i18n.Textf("The data directory is on a network file system, not a local disk: reads and checkpoint writes cross the network.")
	}
	if h.FSFree != nil {
		d.Evidence = i18n.Textf("%s%s", d.Evidence, i18n.Textf("; %.1f GB free", float64(*h.FSFree)/1e9))
		if *h.FSFree < j.lim.DiskFreeWarn {
			d.Status = Warn
			d.Advice = i18n.Textf("Little free space in the data directory: a model and two checkpoints may not fit.")
		}
	}
	j.add(d)

	shm := Check{ID: "host.shm", Unit: "MiB", Status: Pass, Expected: fmt.Sprintf("> %d", j.lim.ShmWarn>>20)}
	switch {
	case h.ShmSize == nil:
		shm.Status, shm.Evidence = Skip, i18n.Textf("/dev/shm not read: %s", h.Errors["shm"])
	default:
		shm.Measured = round1(float64(*h.ShmSize) / (1 << 20))
		shm.Evidence = i18n.Textf("/dev/shm holds %.0f MiB", float64(*h.ShmSize)/(1<<20))
		if *h.ShmSize <= j.lim.ShmWarn {
			shm.Status = Warn
			shm.Evidence = i18n.Textf("%s%s", shm.Evidence, i18n.Textf(" (Docker gives a container 64 MiB unless told otherwise)"))
			shm.Advice = i18n.Textf("DataLoader workers hand batches over through /dev/shm, and NCCL uses it too: at this size they die with \"Bus error\" or \"unexpected bus error encountered in worker\". Ask for a container with --shm-size 16g or --ipc=host; until then num_workers=0 avoids it, slowly.")
		}
	}
	j.add(shm)

	if want := j.order.Disk; want > 0 {
		ds := Check{ID: "host.disk_size", Unit: "GB", Status: Pass, Expected: round1(want / 1e9)}
		if h.FSSize == nil {
			ds.Status, ds.Evidence = Skip, i18n.Textf("the file system's size was not read: %s", h.Errors["fs_free"])
		} else {
			size := float64(*h.FSSize)
			ds.Measured = round1(size / 1e9)
			ds.Evidence = i18n.Textf("%s is on a file system of %.1f GB (%s)", h.DataDir, size/1e9, h.FSSource)
			if size < j.lim.DiskOrderMin*want {
				ds.Status = Fail
				ds.Advice = i18n.Textf("You ordered a %.0f GB disk and the one under %s holds %.1f GB: check that --data-dir is on the disk the offer named; if it is, the disk is smaller than was paid for. %s", want/1e9, h.DataDir, size/1e9, i18n.Textf(adviceRefund))
			}
		}
		j.add(ds)
	}
	j.kernelFaults()
}

// Verdict is the worst status among checks: fail over warn over pass; skips
// do not count.
func Verdict(checks []Check) string { return check.Verdict(checks) }
