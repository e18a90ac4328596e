package supervise

import (
	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/procfs"
	"github.com/gpurent/gpurent/internal/report"
)

// oomWatch remembers the memory cgroup's OOM kill count when a command
// starts, to tell after it failed whether the kernel killed it, or one of
// its processes (a DataLoader worker), for memory. The command runs in
// gpurent's cgroup, so a count that grew while it ran points at it.
type oomWatch struct {
	root   string
	before int64
	ok     bool
}

func startOOMWatch(root string) oomWatch {
	n, _, ok := procfs.OOMKills(root)
	return oomWatch{root: root, before: n, ok: ok}
}

// explain says that the OOM killer struck while the command ran, and
// what the container may use; "" when the count did not grow.
func (w oomWatch) explain() i18n.Text {
	if !w.ok {
		return i18n.Text{}
	}
	n, where, ok := procfs.OOMKills(w.root)
	if !ok || n <= w.before {
		return i18n.Text{}
	}
	var limit i18n.Text
	if lim, ok := procfs.MemoryLimit(w.root); ok {
		limit = i18n.Textf("; this container may use %s", report.Bytes(lim))
	}
	return i18n.Textf("the kernel's out-of-memory killer ended it (oom_kill %d -> %d in %s): host RAM ran out, not GPU memory%s. Fewer DataLoader workers, a smaller batch or prefetch, or a machine with more RAM helps",
		w.before, n, where, limit)
}
