package bench

import (
	"fmt"
	"strings"

	"github.com/gpurent/gpurent/internal/compute"
	"github.com/gpurent/gpurent/internal/i18n"
)

// allReduce judges NCCL's all-reduce over every GPU. A ring all-reduce's
// bus bandwidth is bounded by its slowest link, and healthy NCCL comes
// close to what the copy engines reach on it: 365-370 GB/s on an 8×H100
// (NVIDIA/nccl#1455, nccl-tests#212) beside 380 GB/s copies (nccl#1264);
// NVLink SHARP lifts it to about 480 (nccl-tests#212). Far below the
// slowest pair's copies, NCCL is taking another path: P2P disabled for it
// (NCCL_P2P_DISABLE), or shared memory through the host.
func (j *judge) allReduce() {
	a := j.f.AllReduce
	if a == nil {
		return
	}
	c := Check{ID: "gpu.allreduce", Unit: "GB/s"}
	lib, nccl := "", "NCCL"
	if a.Version != "" {
		lib, nccl = " (NCCL "+a.Version+")", "NCCL "+a.Version
	}
	switch {
	case a.Hung != "":
		c.Status, c.Measured, c.Unit = Fail, "hung", ""
		c.Evidence = i18n.Textf("%s never finished %s; the communicators were aborted", nccl, a.Hung)
		if a.Error != "" {
			c.Evidence = i18n.Textf("%s%s", c.Evidence, i18n.Textf(": %s", a.Error))
		}
		c.Advice = i18n.Textf(hungAdvice)
		if setupStep(a.Hung) {
			c.Advice = i18n.Textf(setupAdvice)
		}
	case a.Error != "" && strings.Contains(a.Error, "computed wrong"):
		c.Status, c.Measured, c.Unit = Fail, "wrong", ""
		c.Evidence = i18n.Textf("%s: %s", nccl, a.Error)
		c.Advice = i18n.Textf("An all-reduce over these GPUs gives wrong sums: training on them would silently diverge. %s", i18n.Textf(adviceRefund))
	case a.Error != "" && len(a.Sizes) == 0:
		c.Status, c.Evidence = Skip, i18n.Plain(a.Error)
		if !strings.HasPrefix(a.Error, "not run") {
			c.Evidence = i18n.Textf("not measured: %s", a.Error)
		}
	case a.Ranks < 2:
		c.Status, c.Evidence = Skip, i18n.Textf("one GPU visible to CUDA: no all-reduce between GPUs")
		if len(a.Sizes) > 0 {
			last := a.Sizes[len(a.Sizes)-1]
			checked := ""
			if a.Checked {
				checked = ", its sum checked"
			}
			c.Evidence = i18n.Textf("%s%s", c.Evidence, i18n.Textf("; %s ran one rank%s (%s in %.3f ms)", nccl, checked, sizeName(last.Bytes), last.Ms))
		}
	case a.Error != "":
		c.Status, c.Measured = Fail, round1(bestBus(a.Sizes))
		c.Evidence = i18n.Textf("%s over %d GPUs failed partway: %s; before that %s", nccl, a.Ranks, a.Error, sizesWord(a.Sizes))
		c.Advice = i18n.Textf("An all-reduce failed on these GPUs after smaller ones worked: a GPU or a link faults under load. Run with NCCL_DEBUG=WARN to see where. %s", i18n.Textf(adviceRefund))
	default:
		best := bestBus(a.Sizes)
		c.Status, c.Measured = Pass, round1(best)
		c.Evidence = i18n.Textf("bus bandwidth over %d GPUs%s, %s", a.Ranks, lib, sizesWord(a.Sizes))
		if p := j.f.Peers; p != nil && len(p.Pairs) > 0 && p.Hung == "" {
			slowest := minGBs(p.Pairs)
			c.Expected = fmt.Sprintf("≥ %.0f", j.lim.AllReduceWarn*slowest)
			c.Evidence = i18n.Textf("%s%s", c.Evidence, i18n.Textf("; the slowest pair copies at %.1f GB/s", slowest))
			if best < j.lim.AllReduceWarn*slowest {
				c.Status = Warn
				c.Advice = i18n.Textf("NCCL moves data far slower than the GPUs copy between themselves: it is not using the direct path (NCCL_P2P_DISABLE or NCCL_SHM_DISABLE set, a container without --ipc=host, or P2P it does not trust). Run with NCCL_DEBUG=INFO to see the transport it picks.")
			}
		}
		if len(a.Env) > 0 {
			c.Evidence = i18n.Textf("%s%s", c.Evidence, i18n.Textf("; set: %s", strings.Join(a.Env, " ")))
		}
	}
	j.add(c)
}

// sizesWord lists the bus bandwidth by size.
func sizesWord(ss []compute.AllReduceSize) string {
	var parts []string
	for _, s := range ss {
		parts = append(parts, fmt.Sprintf("%s %.1f", sizeName(s.Bytes), s.BusGBs))
	}
	return strings.Join(parts, ", ") + " GB/s"
}

func sizeName(b int64) string {
	if b >= 1<<30 {
		return fmt.Sprintf("%d GiB", b>>30)
	}
	return fmt.Sprintf("%d MiB", b>>20)
}

// bestBus is the highest bus bandwidth of the sweep (the facts' own
// figure is not trusted: it is recomputed from the sizes).
func bestBus(ss []compute.AllReduceSize) float64 {
	best := 0.0
	for _, s := range ss {
		best = max(best, s.BusGBs)
	}
	return best
}
