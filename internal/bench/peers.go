package bench

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpurent/gpurent/internal/compute"
	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/probe"
)

// The GPU-to-GPU copy matrix, judged against what joins each pair: its
// NVLinks (per direction, half a link's bidirectional bandwidth) or the
// narrower of the two GPUs' PCIe links. Healthy copy engines reach 84% of
// NVLink 4 (380 of 450 GB/s on HGX H100, NVIDIA/nccl#1264) and 68-83% of
// PCIe Gen4 x16 (21.8-26.4 GB/s between A6000s, NVIDIA/nvbandwidth#50).

// hungAdvice is what to do about a P2P path that hangs.
const hungAdvice = "Copies between these GPUs never finished: the direct path between them hangs, as it does where PCIe ACS or an IOMMU sits between GPUs that the driver believes can reach each other. NCCL hangs the same way. On a bare-metal host, disable ACS (and the IOMMU, or set it to passthrough) for the GPUs; otherwise set NCCL_P2P_DISABLE=1 for every job here, at the cost of staging through host memory. Tell the provider."

// setupAdvice is for a driver or NCCL that stopped answering before any
// data moved between GPUs: not a P2P path, but the driver itself.
const setupAdvice = "The CUDA driver or NCCL stopped answering while setting up, before any data moved between the GPUs: a GPU or the driver is in trouble (see gpuN.xid and nvidia-smi; on an NVSwitch board, nvidia-fabricmanager). " + adviceRefund

// setupStep says whether what hung was setting up (loading, opening,
// enabling, creating) rather than moving data.
func setupStep(what string) bool {
	for _, w := range []string{"loading", "opening", "enabling", "creating"} {
		if strings.HasPrefix(what, w) {
			return true
		}
	}
	return false
}

// peerTheory is a pair's per-direction bandwidth in GB/s and what it is:
// NVLinks between them, or PCIe.
func (j *judge) peerTheory(a, b *probe.Device) (float64, i18n.Text) {
	if nv := nvlinksBetween(a, b); nv > 0 {
		return float64(nv) * nvlinkGBs(linkVersion(a)) / 2, i18n.Textf("its %d NVLinks'", nv)
	}
	la, lb := linkGBs(a), linkGBs(b)
	if la <= 0 || lb <= 0 {
		return 0, i18n.Text{}
	}
	return min(la, lb), i18n.Textf("the PCIe link's")
}

// peers judges the copy matrix: a pair that hung fails; one that reaches
// less than PeerWarn of its links' bandwidth warns, naming the slowest.
func (j *judge) peers() {
	p := j.f.Peers
	if p == nil {
		return
	}
	c := Check{ID: "gpu.p2p_bandwidth", Unit: "GB/s"}
	if p.Hung != "" {
		c.Status, c.Measured, c.Unit = Fail, "hung", ""
		c.Evidence = i18n.Textf("copies %s did not finish in %g s", p.Hung, p.Timeout)
		for _, x := range p.Pairs {
			if x.TimedOut {
				c.Evidence = i18n.Textf("copies from gpu%d to gpu%d did not finish in %g s", x.SrcGPU, x.DstGPU, p.Timeout)
			}
		}
		if p.Error != "" {
			c.Evidence = i18n.Plain(p.Error)
		}
		c.Evidence = i18n.Textf("%s%s", c.Evidence, i18n.Textf("; no later pair was measured"))
		c.Advice = i18n.Textf(hungAdvice)
		if setupStep(p.Hung) {
			c.Advice = i18n.Textf(setupAdvice)
		}
		j.add(c)
		return
	}
	if len(p.Pairs) == 0 {
		c.Status, c.Evidence = Skip, i18n.Textf("not measured: %s", p.Error)
		if p.Error == "" {
			c.Evidence = i18n.Textf("%d GPU visible to CUDA: no pair to copy between", p.Devices)
		}
		j.add(c)
		return
	}
	devs := map[int]*probe.Device{}
	for i := range j.f.GPU.Devices {
		devs[j.f.GPU.Devices[i].Index] = &j.f.GPU.Devices[i]
	}
	var slow, failed []i18n.Text
	worst, worstShare, measured, unjudged := compute.Peer{}, 2.0, 0, 0
	for _, x := range p.Pairs {
		name := fmt.Sprintf("gpu%d→gpu%d", x.SrcGPU, x.DstGPU)
		if x.Error != "" {
			failed = append(failed, i18n.Plain(name+": "+x.Error))
			continue
		}
		measured++
		a, b := devs[x.SrcGPU], devs[x.DstGPU]
		if a == nil || b == nil {
			continue
		}
		theory, over := j.peerTheory(a, b)
		if theory <= 0 {
			unjudged++
			continue
		}
		share := x.GBs / theory
		if share < worstShare {
			worst, worstShare = x, share
		}
		if share < j.lim.PeerWarn {
			slow = append(slow, i18n.Textf("%s %.1f GB/s (%.0f%% of %s %.0f)", name, x.GBs, 100*share, over, theory))
		}
	}
	c.Status, c.Measured = Pass, round1(minGBs(p.Pairs))

	c.Evidence = i18n.Textf("%d GPU pairs, each way: %s", measured, spread(p.Pairs))
	if worstShare <= 1.5 {
		a, b := devs[worst.SrcGPU], devs[worst.DstGPU]
		theory, over := j.peerTheory(a, b)
		c.Evidence = i18n.Textf("%s%s", c.Evidence, i18n.Textf("; the slowest, gpu%d→gpu%d, %.0f%% of %s %.0f GB/s", worst.SrcGPU, worst.DstGPU, 100*worstShare, over, theory))
	}
	switch {
	case len(failed) > 0:
		c.Status = Fail
		c.Evidence = i18n.Textf("copies failed: %s; %s", listSome(failed, 2), c.Evidence)
		if p.Error != "" {
			c.Evidence = i18n.Textf("%s%s", c.Evidence, i18n.Textf("; %s", p.Error))
		}
		c.Advice = i18n.Textf("Copies between some GPUs fail: the GPUs cannot exchange data (NCCL fails the same way). %s", i18n.Textf(adviceRefund))
	case p.Error != "":
		c.Status = Warn
		c.Evidence = i18n.Textf("incomplete (%s): %s", p.Error, c.Evidence)
		c.Advice = i18n.Textf("The copy matrix stopped before every pair was measured; run bench again.")
	case len(slow) > 0:
		c.Status = Warn
		c.Evidence = i18n.Textf("slow: %s; %s", listSome(slow, 3), c.Evidence)
		c.Advice = i18n.Textf("Some GPU pairs copy at under half the bandwidth of what joins them: a link down or degraded, a PCIe switch running narrow, or traffic routed through the CPU (ACS). Data-parallel training runs at the pace of the slowest pair. Compare with the link matrix above; the provider can check the board.")
	}
	if unjudged > 0 {
		c.Evidence = i18n.Textf("%s%s", c.Evidence, i18n.Textf("; %d pairs not judged: the bandwidth of what joins them is unknown", unjudged))
	}
	j.add(c)
}

func minGBs(ps []compute.Peer) float64 {
	m := 0.0
	for _, x := range ps {
		if x.Error == "" && (m == 0 || x.GBs < m) {
			m = x.GBs
		}
	}
	return m
}

// spread is the range of the pairs' bandwidth, one way and both ways.
func spread(ps []compute.Peer) i18n.Text {
	var one, both []float64
	for _, x := range ps {
		if x.Error == "" {
			one = append(one, x.GBs)
		}
		if x.BidirGBs > 0 {
			both = append(both, x.BidirGBs)
		}
	}
	s := rangeGBs(one)
	if len(both) > 0 {
		s = i18n.Textf("%s, both ways at once %s", s, rangeGBs(both))
	}
	return s
}

func rangeGBs(xs []float64) i18n.Text {
	if len(xs) == 0 {
		return i18n.Plain("-")
	}
	lo, hi := slices.Min(xs), slices.Max(xs)
	if hi-lo < 0.05*hi {
		return i18n.Plain(fmt.Sprintf("%.1f GB/s", lo+(hi-lo)/2))
	}
	return i18n.Textf("%.1f to %.1f GB/s", lo, hi)
}

// nvlinkErrorsRose warns for each GPU whose NVLink error counters rose
// while bench measured: a link that corrupts data under load.
func (j *judge) nvlinkErrorsRose() {
	after := j.f.NVLinkErrorsAfter
	if len(after) == 0 {
		return
	}
	before := map[[2]int]probe.LinkErrors{}
	for _, d := range j.f.GPU.Devices {
		for _, l := range d.NVLinks {
			if l.Errors != nil {
				before[[2]int{d.Index, l.Link}] = *l.Errors
			}
		}
	}
	var rose, reset []i18n.Text
	for _, a := range after {
		b, ok := before[[2]int{a.GPU, a.Link}]
		if !ok {
			continue
		}
		up, down := b.Rose(a.LinkErrors)
		switch {
		case down:
			reset = append(reset, i18n.Textf("gpu%d link %d", a.GPU, a.Link))
		case up:
			rose = append(rose, i18n.Textf("gpu%d link %d: +%d CRC, +%d replays, +%d recoveries", a.GPU, a.Link,
				a.CRC()-b.CRC(), a.Replay-b.Replay, a.Recovery-b.Recovery))
		}
	}
	c := Check{ID: "gpu.nvlink_errors", Status: Pass, Measured: len(rose), Expected: 0, Unit: "links",
		Evidence: i18n.Textf("no NVLink error counter rose while bench ran (%d links read before and after)", len(after))}
	if len(reset) > 0 {
		c.Evidence = i18n.Textf("%s%s", c.Evidence, i18n.Textf("; counters were reset while bench ran, so these say nothing: %s", listSome(reset, 4)))
	}
	if len(rose) > 0 {
		c.Status = Warn
		c.Evidence = i18n.Textf("NVLink errors rose while bench ran: %s", i18n.Join(rose, "; "))
		c.Advice = i18n.Textf("An NVLink retransmitted data under load: it works, slower, and links that do this often go down next. Ask the provider to check it; nvidia-smi nvlink -e shows the counters.")
	}
	j.add(c)
}
