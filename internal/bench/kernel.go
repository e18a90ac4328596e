package bench

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/kernlog"
	"github.com/gpurent/gpurent/internal/probe"
	"github.com/gpurent/gpurent/internal/units"
)

// The kernel log since the machine booted, on a fresh rental the previous
// tenant's time too: what the hardware reported there is the machine's
// history, which NVML's counters and /proc only partly keep.

// xids judges the NVIDIA driver's Xid reports since the machine booted:
// one check per GPU, and gpu.xid for reports on a GPU NVML does not list
// (or for a kernel log that could not be read).
func (j *judge) xids() {
	k := j.f.KernelLog
	if k == nil {
		return // facts recorded before gpurent read the log
	}
	if k.Error != "" {
		if len(j.f.GPU.Devices) == 0 {
			return // no GPU, no history to miss (host.kernel says why)
		}
		j.eventXids(k.Error)
		return
	}
	j.xidsBy(k.Xids, func(id string, evs []kernlog.Xid) Check { return j.xidCheck(id, k, evs) })
}

// xidsBy adds one check per GPU of the Xids on it, and gpu.xid for those
// on a GPU NVML does not list.
func (j *judge) xidsBy(xids []kernlog.Xid, check func(id string, evs []kernlog.Xid) Check) {
	matched := make([]bool, len(xids))
	for _, d := range j.f.GPU.Devices {
		var evs []kernlog.Xid
		for i, e := range xids {
			if kernlog.SameGPU(d.BusID, e.Bus) {
				evs, matched[i] = append(evs, e), true
			}
		}
		j.add(check(fmt.Sprintf("gpu%d.xid", d.Index), evs))
	}
	var others []kernlog.Xid
	for i, e := range xids {
		if !matched[i] {
			others = append(others, e)
		}
	}
	if len(others) > 0 {
		c := check("gpu.xid", others)
		c.Evidence = i18n.Textf("%s%s", c.Evidence, i18n.Textf("; on a GPU NVML does not list here (hidden from this container, or fallen off the bus)"))
		j.add(c)
	}
}

// eventXids judges the Xids NVML's events delivered while bench measured,
// where the kernel log (why: its error) cannot be read: a GPU that
// faulted under the probes fails, but a quiet one is not passed, since
// the history since boot stays unseen.
func (j *judge) eventXids(why string) {
	unseen := i18n.Textf("%s; the GPUs' fault history (Xid) since boot is not checked", why)
	ev := j.f.XidEvents
	switch {
	case ev == nil:
		j.add(Check{ID: "gpu.xid", Status: Skip, Unit: "Xids", Evidence: unseen})
		return
	case ev.Error != "":
		j.add(Check{ID: "gpu.xid", Status: Skip, Unit: "Xids", Evidence: i18n.Textf("%s, nor the bench's own time (NVML: %s)", unseen, ev.Error)})
		return
	}
	during := i18n.Textf("from NVML's events while this bench measured (%s)", units.FormatDuration(time.Duration(ev.Seconds*float64(time.Second)).Round(time.Second)))
	if len(ev.Xids) == 0 {
		j.add(Check{ID: "gpu.xid", Status: Skip, Measured: 0, Unit: "Xids", Evidence: i18n.Textf("%s; no Xid %s", unseen, during)})
		return
	}
	j.xidsBy(ev.Xids, func(id string, evs []kernlog.Xid) Check {
		if len(evs) == 0 {
			return Check{ID: id, Status: Skip, Measured: 0, Unit: "Xids", Evidence: i18n.Textf("%s; no Xid on this GPU %s", unseen, during)}
		}
		return j.xidReport(id, evs, during, i18n.Textf("while bench measured it"), true)
	})
}

// logSince is how far back the kernel log reaches, in words.
func (j *judge) logSince(k *probe.KernelLog) i18n.Text {
	if k.Lost {
		return i18n.Textf("since %s (the kernel log's older records are overwritten)", j.when(k.Since))
	}
	if !k.Boot.IsZero() {
		return i18n.Textf("since the machine booted (%s)", j.when(k.Boot))
	}
	return i18n.Textf("since the machine booted")
}

func (j *judge) xidCheck(id string, k *probe.KernelLog, evs []kernlog.Xid) Check {
	since := j.logSince(k)
	if len(evs) == 0 {
		return Check{ID: id, Status: Pass, Measured: 0, Unit: "Xids", Evidence: i18n.Textf("no Xid in the kernel log %s", since)}
	}
	if len(evs) == kernlog.MaxXids {
		since = i18n.Textf("%s (the newest %d)", since, kernlog.MaxXids)
	}
	return j.xidReport(id, evs, i18n.Textf("in the kernel log %s", since), i18n.Textf("since the machine booted"), false)
}

// xidReport judges a GPU's Xid reports, found where source says ("in the
// kernel log since ..."); when names the span in the advice, and live says
// that it is the bench's own time.
func (j *judge) xidReport(id string, evs []kernlog.Xid, source, when i18n.Text, live bool) Check {
	c := Check{ID: id, Status: Pass, Measured: len(evs), Unit: "Xids"}
	// One line per code, the latest report of each, the worst first.
	type group struct {
		info kernlog.XidInfo
		n    int
		last kernlog.Xid
	}
	var gs []*group
	for _, e := range evs {
		i := slices.IndexFunc(gs, func(g *group) bool { return g.info.Code == e.Code })
		if i < 0 {
			gs = append(gs, &group{info: kernlog.LookupXid(e.Code)})
			i = len(gs) - 1
		}
		gs[i].n++
		gs[i].last = e
	}
	slices.SortStableFunc(gs, func(a, b *group) int { return int(b.info.Severity) - int(a.info.Severity) })
	parts := make([]i18n.Text, 0, len(gs))
	for _, g := range gs {
		at := i18n.Textf("at %s", j.when(g.last.At))
		if g.n > 1 {
			at = i18n.Textf("×%d, the last at %s", g.n, j.when(g.last.At))
		}
		parts = append(parts, i18n.Textf("%s (%s)", g.last, at))
	}
	c.Evidence = i18n.Textf("%s %s: %s", i18n.Plural(len(evs), "%d Xid report", "%d Xid reports"), source, i18n.Join(parts, "; "))
	worst := gs[0].info
	switch worst.Severity {
	case kernlog.Hardware:
		c.Status = Fail
		stands := i18n.Textf("Unless the provider has reset the GPU since, it is not fit to train on.")
		switch {
		case live:
			stands = i18n.Textf("It faulted under the bench's own load: it is not fit to train on.")
		case worst.Action == kernlog.RestartMachine || worst.Action == kernlog.RestartVM:
			stands = i18n.Textf("The machine has not been rebooted since, so the fault stands.")
		}
		c.Advice = i18n.Textf("The NVIDIA driver reported a fault of this GPU %s (Xid %d): %s. %s %s", when, worst.Code, worst.Words, stands, i18n.Textf(adviceRefund))
	case kernlog.Notable:
		c.Status = Warn
		c.Advice = i18n.Textf("Xid %d: %s.", worst.Code, worst.Words)
	default:
		c.Evidence = i18n.Textf("%s%s", c.Evidence, i18n.Textf(" (%s)", worst.Words))
	}
	return c
}

// when is a time in the log as a person reads it beside the bench's own:
// "2026-11-30 10:02 UTC, 2h before this bench".
func (j *judge) when(t time.Time) i18n.Text {
	s := t.UTC().Format("2006-01-02 15:04 UTC")
	if ago := j.f.CollectedAt.Sub(t); ago >= 0 && !j.f.CollectedAt.IsZero() {
		unit := time.Minute
		if ago >= 48*time.Hour {
			unit = time.Hour
		}
		return i18n.Textf("%s, %s before this bench", s, units.FormatDuration(ago.Truncate(unit)))
	}
	return i18n.Plain(s)
}

// kernelFaults judges the hardware errors the kernel reported since the
// machine booted (host.kernel): a disk failing writes, RAM with
// uncorrectable errors, a PCIe link losing data fail the machine.
func (j *judge) kernelFaults() {
	k := j.f.KernelLog
	if k == nil {
		return // facts recorded before gpurent read the log
	}
	c := Check{ID: "host.kernel", Status: Pass, Unit: "errors"}
	if k.Error != "" {
		c.Status, c.Evidence = Skip, i18n.Textf("%s; the machine's hardware errors are not checked", k.Error)
		j.add(c)
		return
	}
	since := j.logSince(k)
	if len(k.Faults) == 0 {
		c.Measured, c.Evidence = 0, i18n.Textf("no hardware error in the kernel log %s", since)
		j.add(c)
		return
	}
	fs := slices.Clone(k.Faults)
	slices.SortStableFunc(fs, func(a, b kernlog.Fault) int { return int(b.Severity()) - int(a.Severity()) })
	n := 0
	parts := make([]i18n.Text, 0, len(fs))
	for _, f := range fs {
		n += f.Count
		part := f.Text()
		if (f.Kind == kernlog.Disk || f.Kind == kernlog.Filesystem) && kernlog.SameDisk(f.Device, j.f.Host.FSSource) {
			part = i18n.Textf("%s, the disk of %s", part, j.f.Host.DataDir)
		}
		if f.Count > 1 {
			part = i18n.Textf("%s, the first at %s, the last at %s", part, j.when(f.First), j.when(f.Last))
		} else {
			part = i18n.Textf("%s, at %s", part, j.when(f.Last))
		}
		parts = append(parts, i18n.Textf("%s: %s", part, strconv.Quote(f.Message)))
	}
	c.Measured = n
	c.Evidence = i18n.Textf("the kernel log %s: %s", since, i18n.Join(parts, "; "))
	worst := fs[0]
	switch worst.Severity() {
	case kernlog.Hardware:
		c.Status, c.Advice = Fail, i18n.Textf("The machine's hardware failed since it booted: %s. %s", worst.Words(), i18n.Textf(adviceRefund))
	case kernlog.Notable:
		c.Status, c.Advice = Warn, i18n.Textf("%s.", i18n.Sentence(worst.Words()))
	default:
		c.Evidence = i18n.Textf("%s%s", c.Evidence, i18n.Textf(" (%s)", worst.Words()))
	}
	j.add(c)
}
