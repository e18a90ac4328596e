//go:build unix

package main

import (
	"context"
	"fmt"

	"github.com/gpurent/gpurent/internal/compute"
	"github.com/gpurent/gpurent/internal/probe"
	"github.com/gpurent/gpurent/internal/report"
	"github.com/gpurent/gpurent/internal/wipe"
)

// gpuPlan lists the GPUs wipe --gpu scrubs, from NVML: each one's free
// memory and the processes holding memory there (theirs until they
// exit). No GPU is a plan with nothing in it, and a warning.
func gpuPlan(ctx context.Context) ([]wipe.GPU, string) {
	f := probe.GPU(ctx, probe.GPUOptions{})
	if !f.Available {
		return nil, "--gpu: no GPU memory to scrub: " + f.Error
	}
	var gs []wipe.GPU
	for _, d := range f.Devices {
		g := wipe.GPU{Index: d.Index, Name: d.Name, BusID: d.BusID, Status: wipe.GPUPlanned}
		if d.MemoryFree != nil {
			g.FreeBytes = *d.MemoryFree
		}
		for _, p := range d.Processes {
			held := fmt.Sprintf("pid %d", p.PID)
			if p.UsedMemory != nil {
				held += " (" + report.Bytes(int64(*p.UsedMemory)) + ")"
			}
			g.HeldBy = append(g.HeldBy, held)
		}
		gs = append(gs, g)
	}
	return gs, ""
}

// scrubGPUs scrubs the free memory of every GPU CUDA shows this process,
// each matched to its planned NVML entry by PCI address. A GPU NVML
// lists that CUDA does not show (CUDA_VISIBLE_DEVICES) is a failure: its
// memory was not reached. A GPU where processes hold memory is left alone
// unless forced: the scrub takes every free byte for a few seconds, and a
// job still running there would fail to allocate and could crash.
func scrubGPUs(ctx context.Context, gs []wipe.GPU, force bool) []wipe.GPU {
	buses, err := compute.CUDA{}.Devices()
	if err != nil {
		for i := range gs {
			gs[i].Status, gs[i].Error = wipe.GPUFailed, err.Error()
		}
		return gs
	}
	for i := range gs {
		gs[i].Status, gs[i].Error = wipe.GPUFailed, "CUDA does not show this GPU to this process (CUDA_VISIBLE_DEVICES?), so its memory was not reached"
	}
	for cudaIndex, bus := range buses {
		if ctx.Err() != nil {
			break
		}
		at := -1
		for i := range gs {
			if compute.SameBusID(gs[i].BusID, bus) {
				at = i
			}
		}
		if at < 0 {
			gs = append(gs, wipe.GPU{Index: -1, BusID: bus})
			at = len(gs) - 1
		}
		g := &gs[at]
		if len(g.HeldBy) > 0 && !force {
			g.Status, g.Error = wipe.GPUInUse, "processes hold memory on this GPU, and the scrub would take every free byte from under them for a few seconds (an out-of-memory crash for a job still running): stop them and run wipe --gpu again, or give --gpu-force"
			continue
		}
		s := compute.CUDA{}.Scrub(ctx, cudaIndex, force)
		g.Residue, g.Error = s.Residue.Notes, s.Error
		if s.Residue.Error != "" {
			g.Residue = "residue not read: " + s.Residue.Error
		}
		if s.FreeBytes > 0 {
			g.FreeBytes = s.FreeBytes
		}
		g.ScrubbedBytes, g.NonzeroBytes = s.ScrubbedBytes, s.NonzeroBytes
		switch {
		case s.Error != "":
			g.Status = wipe.GPUFailed
		case s.Skipped:
			g.Status = wipe.GPUDriverClears
		case s.NonzeroBytes > 0:
			g.Status, g.Error = wipe.GPUFailed, fmt.Sprintf("%s read back not zero after the fill", report.Bytes(int64(s.NonzeroBytes)))
		default:
			g.Status = wipe.GPUScrubbed
		}
	}
	return gs
}

// gpusFailed counts the GPUs whose memory was not scrubbed as asked.
func gpusFailed(gs []wipe.GPU) int {
	n := 0
	for _, g := range gs {
		if g.Status == wipe.GPUFailed || g.Status == wipe.GPUInUse {
			n++
		}
	}
	return n
}
