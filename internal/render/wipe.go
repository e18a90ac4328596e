//go:build unix

package render

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/report"
	"github.com/gpurent/gpurent/internal/wipe"
)

// WipePlan is wipe's plan: each item, how it is removed, and what is kept
// and why.
func WipePlan(w io.Writer, tr *i18n.Printer, p *wipe.Plan) {
	if len(p.Items) == 0 {
		fmt.Fprintln(w, tr.T("nothing to remove"))
	} else {
		tab := report.NewTab(tr.T("KIND"), tr.T("WHAT"), tr.T("PATH"), tr.T("SIZE"), tr.T("FILES"), tr.T("HOW"))
		for _, it := range p.Items {
			how := tr.T("unlink")
			switch {
			case it.Image != "":
				how = "docker image rm"
			case it.Symlink:
				how = tr.Tf("remove the link only (-> %s)", it.Target)
			case it.MountPoint && it.Overwrite:
				how = tr.Tf("overwrite, then unlink the contents; the mount point stays (%s)", it.FSType)
			case it.MountPoint:
				how = tr.Tf("unlink the contents; the mount point stays (%s)", it.FSType)
			case it.Overwrite:
				how = tr.Tf("overwrite, then unlink (%s)", it.FSType)
			case it.FSType != "":
				how = tr.Tf("unlink (%s)", it.FSType)
			}
			if it.Overwrite && it.Linked > 0 {
				how += tr.Tf("; %s with other hard links: unlinked only", Count(tr, it.Linked, "file"))
			}
			if len(it.Keep) > 0 {
				how += tr.Tf("; %s inside kept (see kept:)", Count(tr, len(it.Keep), "path"))
			}
			path := it.Path
			if path == "" {
				path = it.Image
			}
			tab.Row(kindName(tr, it.Kind), tr.Lookup(it.What), path, report.Bytes(it.Bytes), fmt.Sprint(it.Files), how)
		}
		_ = tab.Write(w)
		tr.Fprintf(w, "\ntotal: %s, %s\n", Count(tr, len(p.Items), "item"), report.Bytes(p.Bytes))
	}
	linked := 0
	for _, it := range p.Items {
		if it.Overwrite {
			linked += it.Linked
		}
	}
	if linked > 0 {
		tr.Fprintf(w, "note: unlinked only, not overwritten: %s with other hard links (a local git clone's objects, a package store); overwriting would destroy the data under the other names, outside this plan, and that data stays there\n", Count(tr, linked, "file"))
	}
	for _, k := range p.Kept {
		tr.Fprintf(w, "kept: %s\n", report.Safe(tr.Text(k)))
	}
	for _, s := range p.Warnings {
		tr.Fprintf(w, "note: %s\n", report.Safe(tr.Text(s)))
	}
}

// kinds are a wipe item's kinds (render/words.go).
var kinds = words(i18n.Key(wipe.Data), i18n.Key(wipe.Checkpoints), i18n.Key(wipe.Cache), i18n.Key(wipe.Credential),
	i18n.Key(wipe.History), i18n.Key(wipe.Temp), i18n.Key(wipe.Docker))

func kindName(tr *i18n.Printer, kind string) string { return kinds.say(tr, kind) }

// WipeOutcome says what a wipe removed, what failed or did not run, and
// where its report is.
func WipeOutcome(w io.Writer, tr *i18n.Printer, r *wipe.Report, path string) {
	removed := 0
	for _, it := range r.Items {
		switch it.Status {
		case wipe.Removed:
			removed++
		case wipe.Failed:
			tr.Fprintf(w, "failed: %s: %s\n", report.Safe(WipeTarget(it)), report.Safe(it.Error))
		case wipe.NotRun:
			tr.Fprintf(w, "not run: %s\n", report.Safe(WipeTarget(it)))
		}
	}
	notOver := 0
	for _, it := range r.Items {
		notOver += it.NotOverwritten
		for _, k := range it.Kept {
			if !slices.Contains(it.Keep, k) { // the plan named those already
				tr.Fprintf(w, "kept: %s (a file system mounted inside %s since the plan: not entered)\n", report.Safe(k), report.Safe(it.Path))
			}
		}
	}
	if notOver > 0 {
		tr.Fprintf(w, "not overwritten: %s with other hard links, unlinked only (their data stays under the other names)\n", Count(tr, notOver, "file"))
	}
	tr.Fprintf(w, "removed %d of %s, %s freed; report: %s\n", removed, Count(tr, len(r.Items), "item"), report.Bytes(r.Freed), path)
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
func WipeGPUs(w io.Writer, tr *i18n.Printer, gs []wipe.GPU) {
	for _, g := range gs {
		name := fmt.Sprintf("gpu%d", g.Index)
		if g.Name != "" {
			name += " (" + report.Safe(g.Name) + ")"
		}
		switch g.Status {
		case wipe.GPUPlanned:
			tr.Fprintf(w, "GPU memory: %s: %s free, to be filled with zeros and read back (skipped where fresh memory reads as zeros, as the driver then clears it, or where processes hold memory, unless --gpu-force)\n", name, report.Bytes(int64(g.FreeBytes)))
		case wipe.GPUScrubbed:
			tr.Fprintf(w, "GPU memory: %s: %s of %s free filled with zeros and read back: %s not zero\n", name, report.Bytes(int64(g.ScrubbedBytes)), report.Bytes(int64(g.FreeBytes)), report.Bytes(int64(g.NonzeroBytes)))
		case wipe.GPUDriverClears:
			tr.Fprintf(w, "GPU memory: %s: not scrubbed: fresh memory sampled as zeros, as from a driver that clears memory between processes (%s); --gpu-force scrubs anyway\n", name, report.Safe(tr.Text(g.Residue)))
		case wipe.GPUInUse:
			tr.Fprintf(w, "GPU memory: %s: not scrubbed: %s\n", name, report.Safe(tr.Text(g.Error)))
		case wipe.GPUFailed:
			tr.Fprintf(w, "GPU memory: %s: failed: %s\n", name, report.Safe(tr.Text(g.Error)))
		case wipe.GPUNotRun:
			tr.Fprintf(w, "GPU memory: %s: not run: %s\n", name, report.Safe(tr.Text(g.Error)))
		}
		if g.MIG && g.Status == wipe.GPUPlanned {
			tr.Fprintf(w, "GPU memory: %s: MIG is on: its instances are not scrubbed\n", name)
		}
		if len(g.HeldBy) > 0 && (g.Status == wipe.GPUPlanned || g.Status == wipe.GPUInUse) {
			tr.Fprintf(w, "GPU memory: %s: held by running processes, not reached until they exit: %s\n", name, report.Safe(strings.Join(g.HeldBy, ", ")))
		}
		if g.Status == wipe.GPUScrubbed && g.TotalBytes > g.ScrubbedBytes {
			tr.Fprintf(w, "GPU memory: %s: %s of its %s not reached: the driver's and running processes' (theirs until they exit)\n", name, report.Bytes(int64(g.TotalBytes-g.ScrubbedBytes)), report.Bytes(int64(g.TotalBytes)))
		}
	}
}
