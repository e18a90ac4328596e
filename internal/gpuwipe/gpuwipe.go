// Package gpuwipe is wipe --gpu: which GPUs' free memory can be scrubbed
// (NVML: who holds memory there), and the scrub itself (the cuda
// backend), into the wipe report's GPU entries. It is apart from
// internal/wipe, which deletes files and loads no GPU library.
package gpuwipe

import (
	"context"
	"fmt"

	"github.com/gpurent/gpurent/internal/compute"
	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/probe"
	"github.com/gpurent/gpurent/internal/report"
	"github.com/gpurent/gpurent/internal/wipe"
)

// Plan lists the GPUs wipe --gpu scrubs, from NVML: each one's memory
// and the processes holding some of it (theirs until they exit), or that
// NVML could not say. Without NVML it is empty, with a warning: then no
// one can say who holds memory, and a GPU CUDA shows is scrubbed only
// with --gpu-force.
func Plan(ctx context.Context) ([]wipe.GPU, i18n.Text) {
	f := probe.GPU(ctx, probe.GPUOptions{})
	if !f.Available {
		return nil, i18n.Textf("--gpu: NVML cannot list this machine's GPUs (%s), so which processes hold GPU memory is unknown: a GPU CUDA shows is scrubbed only with --gpu-force", f.Error)
	}
	var gs []wipe.GPU
	for _, d := range f.Devices {
		g := wipe.GPU{Index: d.Index, Name: d.Name, BusID: d.BusID, Status: wipe.GPUPlanned, MIG: d.MIGEnabled != nil && *d.MIGEnabled}
		if d.MemoryFree != nil {
			g.FreeBytes = *d.MemoryFree
		}
		if d.MemoryTotal != nil {
			g.TotalBytes = *d.MemoryTotal
		}
		for _, p := range d.Processes {
			held := fmt.Sprintf("pid %d", p.PID)
			if p.UsedMemory != nil {
				held += " (" + report.Bytes(int64(*p.UsedMemory)) + ")"
			}
			g.HeldBy = append(g.HeldBy, held)
		}
		for _, key := range []string{"processes_compute", "processes_mps"} {
			if why, ok := d.Errors[key]; ok {
				g.HeldBy = append(g.HeldBy, "unknown: NVML could not list the "+key[len("processes_"):]+" processes ("+why+")")
			}
		}
		gs = append(gs, g)
	}
	return gs, i18n.Text{}
}

// Scrub scrubs the free memory of every GPU CUDA shows this process,
// each matched to its NVML entry by PCI address, and saves the report's
// GPUs after each. Who holds memory is asked of NVML again now, after
// the prompt and the files: a job started meanwhile counts. A GPU where
// processes hold memory, or NVML cannot say, is left alone unless
// forced: the scrub takes every free byte for a few seconds, and a job
// still running there would fail to allocate and could crash. The scrub
// itself refuses, unforced, a GPU whose memory is taken beyond a
// context's share, whoever took it. A GPU NVML lists that CUDA does not
// show (CUDA_VISIBLE_DEVICES) is a failure: its memory was not reached.
// MIG instances are not scrubbed: CUDA shows each at its card's PCI
// address, so they cannot be told apart here.
func Scrub(ctx context.Context, planned []wipe.GPU, force bool, save func([]wipe.GPU)) []wipe.GPU {
	gs, _ := Plan(ctx)
	if len(gs) == 0 && len(planned) > 0 { // NVML answered the plan, not now
		gs = append([]wipe.GPU(nil), planned...)
		for i := range gs {
			gs[i].HeldBy = append(gs[i].HeldBy, "unknown: NVML did not answer at the scrub")
		}
	}
	for i := range gs {
		gs[i].Status, gs[i].Error = wipe.GPUNotRun, i18n.Textf("")
	}
	buses, err := compute.CUDA{}.Devices()
	if err != nil {
		for i := range gs {
			gs[i].Status, gs[i].Error = wipe.GPUFailed, i18n.Textf("%v", err)
		}
		save(gs)
		return gs
	}
	for cudaIndex, bus := range buses {
		at := -1
		for i := range gs {
			if compute.SameBusID(gs[i].BusID, bus) {
				at = i
			}
		}
		if at < 0 {
			gs = append(gs, wipe.GPU{Index: -1, BusID: bus, HeldBy: []string{"unknown: NVML does not list this GPU"}})
			at = len(gs) - 1
		}
		g := &gs[at]
		if ctx.Err() != nil {
			g.Status, g.Error = wipe.GPUNotRun, i18n.Textf("the wipe was interrupted before this GPU")
			continue
		}
		scrubOne(ctx, g, cudaIndex, force)
		save(gs)
	}
	for i := range gs {
		if gs[i].Status == wipe.GPUNotRun && gs[i].Error.IsZero() {
			gs[i].Status, gs[i].Error = wipe.GPUFailed, i18n.Textf("CUDA does not show this GPU to this process (CUDA_VISIBLE_DEVICES?), so its memory was not reached")
		}
	}
	save(gs)
	return gs
}

// scrubOne scrubs one GPU, CUDA's device cudaIndex, into g.
func scrubOne(ctx context.Context, g *wipe.GPU, cudaIndex int, force bool) {
	switch {
	case g.MIG:
		g.Status, g.Error = wipe.GPUFailed, i18n.Textf("MIG is on: wipe --gpu does not scrub MIG instances (CUDA shows them all at the card's address, so they cannot be told apart); reset the card's MIG mode, which clears it, or release the machine as it is")
		return
	case len(g.HeldBy) > 0 && !force:
		g.Status, g.Error = wipe.GPUInUse, i18n.Textf("processes hold memory on this GPU, or NVML cannot say, and the scrub would take every free byte from under them for a few seconds (an out-of-memory crash for a job still running): stop them and run wipe --gpu again, or give --gpu-force")
		return
	}
	s := compute.CUDA{}.Scrub(ctx, cudaIndex, force)
	g.Residue, g.Error = s.Residue.Notes, i18n.Plain(s.Error) // CUDA's words
	if s.Residue.Error != "" {
		g.Residue = i18n.Textf("residue not read: %s", s.Residue.Error)
	}
	if s.TotalBytes > 0 {
		g.FreeBytes, g.TotalBytes = s.FreeBytes, s.TotalBytes
	}
	g.ScrubbedBytes, g.NonzeroBytes = s.ScrubbedBytes, s.NonzeroBytes
	unreached := g.FreeBytes - min(g.FreeBytes, s.ScrubbedBytes)
	switch {
	case s.Error != "":
		g.Status = wipe.GPUFailed
	case s.InUse:
		g.Status, g.Error = wipe.GPUInUse, i18n.Textf("%s of its %s is taken, more than a context's own share, though NVML names no process: a job may be running there; give --gpu-force to scrub the rest anyway",
			report.Bytes(int64(s.TotalBytes-s.FreeBytes)), report.Bytes(int64(s.TotalBytes)))
	case s.Skipped:
		g.Status = wipe.GPUDriverClears
	case s.NonzeroBytes > 0:
		g.Status, g.Error = wipe.GPUFailed, i18n.Textf("%s read back not zero after the fill", report.Bytes(int64(s.NonzeroBytes)))
	case unreached > max(64<<20, g.FreeBytes/500):
		g.Status, g.Error = wipe.GPUFailed, i18n.Textf("only %s of the %s free could be allocated and scrubbed (another process took memory meanwhile?)", report.Bytes(int64(s.ScrubbedBytes)), report.Bytes(int64(g.FreeBytes)))
	default:
		g.Status = wipe.GPUScrubbed
	}
}

// NotRun is the GPUs of the plan, none reached: the wipe stopped first.
func NotRun(planned []wipe.GPU) []wipe.GPU {
	gs := append([]wipe.GPU(nil), planned...)
	for i := range gs {
		gs[i].Status, gs[i].Error = wipe.GPUNotRun, i18n.Textf("the wipe stopped before the GPUs")
	}
	return gs
}

// Failed counts the GPUs whose memory was not scrubbed as asked.
func Failed(gs []wipe.GPU) int {
	n := 0
	for _, g := range gs {
		if g.Status == wipe.GPUFailed || g.Status == wipe.GPUInUse || g.Status == wipe.GPUNotRun {
			n++
		}
	}
	return n
}
