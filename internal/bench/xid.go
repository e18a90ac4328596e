package bench

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gpurent/gpurent/internal/probe"
	"github.com/gpurent/gpurent/internal/report"
	"github.com/gpurent/gpurent/internal/units"
	"github.com/gpurent/gpurent/internal/xid"
)

// xids judges the NVIDIA driver's Xid reports since the machine booted:
// one check per GPU, and gpu.xid for reports on a GPU NVML does not list
// (or for a kernel log that could not be read). A fault logged before the
// rental began is the card's history, which NVML's counters only partly
// keep.
func (j *judge) xids() {
	k := j.f.GPU.KernelLog
	if k == nil {
		return // facts recorded before gpurent read the log
	}
	if k.Error != "" {
		if len(j.f.GPU.Devices) == 0 {
			return // no GPU, no history to miss
		}
		j.add(Check{ID: "gpu.xid", Status: Skip, Unit: "Xids", Evidence: k.Error + "; the GPUs' fault history (Xid) is not checked"})
		return
	}
	matched := make([]bool, len(k.Events))
	for _, d := range j.f.GPU.Devices {
		var evs []xid.Event
		for i, e := range k.Events {
			if xid.SameGPU(d.BusID, e.Bus) {
				evs, matched[i] = append(evs, e), true
			}
		}
		j.add(j.xidCheck(fmt.Sprintf("gpu%d.xid", d.Index), k, evs))
	}
	var others []xid.Event
	for i, e := range k.Events {
		if !matched[i] {
			others = append(others, e)
		}
	}
	if len(others) > 0 {
		c := j.xidCheck("gpu.xid", k, others)
		c.Evidence += "; on a GPU NVML does not list here (hidden from this container, or fallen off the bus)"
		j.add(c)
	}
}

func (j *judge) xidCheck(id string, k *probe.KernelLog, evs []xid.Event) Check {
	since := "since the machine booted"
	if k.Lost {
		since = "since " + j.when(k.Since) + " (the kernel log's older records are overwritten)"
	} else if !k.Boot.IsZero() {
		since += " (" + j.when(k.Boot) + ")"
	}
	c := Check{ID: id, Status: Pass, Measured: len(evs), Unit: "Xids"}
	if len(evs) == 0 {
		c.Evidence = "no Xid in the kernel log " + since
		return c
	}
	// One line per code, the latest report of each, the worst first.
	type group struct {
		info xid.Info
		n    int
		last xid.Event
	}
	var gs []*group
	for _, e := range evs {
		i := slices.IndexFunc(gs, func(g *group) bool { return g.info.Code == e.Code })
		if i < 0 {
			gs = append(gs, &group{info: xid.Lookup(e.Code)})
			i = len(gs) - 1
		}
		gs[i].n++
		gs[i].last = e
	}
	slices.SortStableFunc(gs, func(a, b *group) int { return int(b.info.Severity) - int(a.info.Severity) })
	parts := make([]string, 0, len(gs))
	for _, g := range gs {
		times := ""
		if g.n > 1 {
			times = fmt.Sprintf("×%d, the last ", g.n)
		}
		parts = append(parts, fmt.Sprintf("%s (%sat %s)", g.last, times, j.when(g.last.At)))
	}
	c.Evidence = fmt.Sprintf("%s in the kernel log %s: %s", report.Count(len(evs), "Xid report"), since, strings.Join(parts, "; "))
	worst := gs[0].info
	switch worst.Severity {
	case xid.Hardware:
		c.Status = Fail
		stands := "Unless the provider has reset the GPU since, it is not fit to train on."
		if worst.Action == xid.RestartMachine || worst.Action == xid.RestartVM {
			stands = "The machine has not been rebooted since, so the fault stands."
		}
		c.Advice = fmt.Sprintf("The NVIDIA driver reported a fault of this GPU since the machine booted (Xid %d): %s. %s %s", worst.Code, worst.Words, stands, adviceRefund)
	case xid.Notable:
		c.Status = Warn
		c.Advice = fmt.Sprintf("Xid %d: %s.", worst.Code, worst.Words)
	default:
		c.Evidence += " (" + worst.Words + ")"
	}
	return c
}

// when is a time in the log as a person reads it beside the bench's own:
// "2026-11-30 10:02 UTC, 2h0m before this bench".
func (j *judge) when(t time.Time) string {
	s := t.UTC().Format("2006-01-02 15:04 UTC")
	if ago := j.f.CollectedAt.Sub(t); ago >= 0 && !j.f.CollectedAt.IsZero() {
		unit := time.Minute
		if ago >= 48*time.Hour {
			unit = time.Hour
		}
		s += ", " + units.FormatDuration(ago.Truncate(unit)) + " before this bench"
	}
	return s
}
