//go:build unix

package render

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/gpurent/gpurent/internal/report"
	"github.com/gpurent/gpurent/internal/wipe"
)

// WipePlan is wipe's plan: each item, how it is removed, and what is kept
// and why.
func WipePlan(w io.Writer, p *wipe.Plan) {
	if len(p.Items) == 0 {
		fmt.Fprintln(w, "nothing to remove")
	} else {
		tab := report.NewTab("KIND", "WHAT", "PATH", "SIZE", "FILES", "HOW")
		for _, it := range p.Items {
			how := "unlink"
			switch {
			case it.Image != "":
				how = "docker image rm"
			case it.Symlink:
				how = "remove the link only (-> " + it.Target + ")"
			case it.MountPoint && it.Overwrite:
				how = "overwrite, then unlink the contents; the mount point stays (" + it.FSType + ")"
			case it.MountPoint:
				how = "unlink the contents; the mount point stays (" + it.FSType + ")"
			case it.Overwrite:
				how = "overwrite, then unlink (" + it.FSType + ")"
			case it.FSType != "":
				how = "unlink (" + it.FSType + ")"
			}
			if it.Overwrite && it.Linked > 0 {
				how += "; " + report.Count(it.Linked, "file") + " with other hard links: unlinked only"
			}
			if len(it.Keep) > 0 {
				how += "; " + report.Count(len(it.Keep), "path") + " inside kept (see kept:)"
			}
			path := it.Path
			if path == "" {
				path = it.Image
			}
			tab.Row(it.Kind, it.What, path, report.Bytes(it.Bytes), fmt.Sprint(it.Files), how)
		}
		_ = tab.Write(w)
		fmt.Fprintf(w, "\ntotal: %s, %s\n", report.Count(len(p.Items), "item"), report.Bytes(p.Bytes))
	}
	linked := 0
	for _, it := range p.Items {
		if it.Overwrite {
			linked += it.Linked
		}
	}
	if linked > 0 {
		fmt.Fprintf(w, "note: unlinked only, not overwritten: %s with other hard links (a local git clone's objects, a package store); overwriting would destroy the data under the other names, outside this plan, and that data stays there\n", report.Count(linked, "file"))
	}
	for _, k := range p.Kept {
		fmt.Fprintln(w, "kept:", report.Safe(k))
	}
	for _, s := range p.Warnings {
		fmt.Fprintln(w, "note:", report.Safe(s))
	}
}

// WipeOutcome says what a wipe removed, what failed or did not run, and
// where its report is.
func WipeOutcome(w io.Writer, r *wipe.Report, path string) {
	removed := 0
	for _, it := range r.Items {
		switch it.Status {
		case wipe.Removed:
			removed++
		case wipe.Failed:
			fmt.Fprintf(w, "failed: %s: %s\n", report.Safe(WipeTarget(it)), report.Safe(it.Error))
		case wipe.NotRun:
			fmt.Fprintf(w, "not run: %s\n", report.Safe(WipeTarget(it)))
		}
	}
	notOver := 0
	for _, it := range r.Items {
		notOver += it.NotOverwritten
		for _, k := range it.Kept {
			if !slices.Contains(it.Keep, k) { // the plan named those already
				fmt.Fprintf(w, "kept: %s (a file system mounted inside %s since the plan: not entered)\n", report.Safe(k), report.Safe(it.Path))
			}
		}
	}
	if notOver > 0 {
		fmt.Fprintf(w, "not overwritten: %s with other hard links, unlinked only (their data stays under the other names)\n", report.Count(notOver, "file"))
	}
	fmt.Fprintf(w, "removed %d of %s, %s freed; report: %s\n", removed, report.Count(len(r.Items), "item"), report.Bytes(r.Freed), path)
}

// WipeTarget names what an item removed: its path, or the Docker image.
func WipeTarget(r wipe.Result) string {
	if r.Path != "" {
		return r.Path
	}
	return r.Image
}

// WipeGPUs says what wipe --gpu did, or would do, to each GPU's free
// memory, and what it cannot reach.
func WipeGPUs(w io.Writer, gs []wipe.GPU) {
	for _, g := range gs {
		name := fmt.Sprintf("gpu%d", g.Index)
		if g.Name != "" {
			name += " (" + report.Safe(g.Name) + ")"
		}
		switch g.Status {
		case wipe.GPUPlanned:
			fmt.Fprintf(w, "GPU memory: %s: %s free, to be filled with zeros and read back (skipped where fresh memory reads as zeros, as the driver then clears it, or where processes hold memory, unless --gpu-force)\n", name, report.Bytes(int64(g.FreeBytes)))
		case wipe.GPUScrubbed:
			fmt.Fprintf(w, "GPU memory: %s: %s of %s free filled with zeros and read back: %s not zero\n", name, report.Bytes(int64(g.ScrubbedBytes)), report.Bytes(int64(g.FreeBytes)), report.Bytes(int64(g.NonzeroBytes)))
		case wipe.GPUDriverClears:
			fmt.Fprintf(w, "GPU memory: %s: not scrubbed: fresh memory sampled as zeros, as from a driver that clears memory between processes (%s); --gpu-force scrubs anyway\n", name, report.Safe(g.Residue))
		case wipe.GPUInUse:
			fmt.Fprintf(w, "GPU memory: %s: not scrubbed: %s\n", name, report.Safe(g.Error))
		case wipe.GPUFailed:
			fmt.Fprintf(w, "GPU memory: %s: failed: %s\n", name, report.Safe(g.Error))
		case wipe.GPUNotRun:
			fmt.Fprintf(w, "GPU memory: %s: not run: %s\n", name, report.Safe(g.Error))
		}
		if g.MIG && g.Status == wipe.GPUPlanned {
			fmt.Fprintf(w, "GPU memory: %s: MIG is on: its instances are not scrubbed\n", name)
		}
		if len(g.HeldBy) > 0 && (g.Status == wipe.GPUPlanned || g.Status == wipe.GPUInUse) {
			fmt.Fprintf(w, "GPU memory: %s: held by running processes, not reached until they exit: %s\n", name, report.Safe(strings.Join(g.HeldBy, ", ")))
		}
		if g.Status == wipe.GPUScrubbed && g.TotalBytes > g.ScrubbedBytes {
			fmt.Fprintf(w, "GPU memory: %s: %s of its %s not reached: the driver's and running processes' (theirs until they exit)\n", name, report.Bytes(int64(g.TotalBytes-g.ScrubbedBytes)), report.Bytes(int64(g.TotalBytes)))
		}
	}
}
