package bench

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/probe"
)

// What an order can promise joins its GPUs (Order.Interconnect), the
// words of the catalog's interconnect field.
const (
	InterconnectNVLink = "nvlink"
	InterconnectPCIe   = "pcie"
	// InterconnectAny checks nothing: --expect-interconnect any sets
	// aside what an --offer promises.
	InterconnectAny = "any"
)

// interconnect judges the order's promise about what joins its GPUs
// against the NVLinks NVML sees. Per-GPU link health is gpuN.nvlink's;
// this is the contract: an offer sold as NVLink whose GPUs have none (a
// PCIe box, bridges left out, links hidden from the VM) is not the
// machine that was ordered. The rule is that every GPU has NVLink to at
// least one other, not to all: PCIe cards are bridged in pairs, and
// V100 boards join their eight GPUs as a cube mesh, not all to all.
func (j *judge) interconnect() {
	promise := j.order.Interconnect
	if promise == "" || promise == InterconnectAny {
		return
	}
	promised := i18n.Textf("the order promised %s between its GPUs", interconnectName(promise))
	if j.order.InterconnectSource != "" {
		promised = i18n.Textf("the order promised %s between its GPUs (%s)", interconnectName(promise), j.order.InterconnectSource)
	}
	var devs []*probe.Device
	for i := range j.f.GPU.Devices {
		if d := &j.f.GPU.Devices[i]; !d.Lost {
			devs = append(devs, d)
		}
	}
	c := Check{ID: "gpu.interconnect", Status: Pass, Unit: "GPUs"}
	if len(devs) < 2 {
		if j.order.GPUs > 0 || len(devs) == 0 {
			return // gpu.count or gpu.present says what is missing, or one GPU was ordered
		}
		c.Status, c.Measured = Fail, len(devs)
		c.Evidence = i18n.Textf("%s, but this machine shows %d", promised, len(devs))
		c.Advice = i18n.Textf("An interconnect joins two or more GPUs: this is not the machine ordered. %s", i18n.Textf(adviceRefund))
		j.add(c)
		return
	}
	// alone: GPUs with no NVLink up at all; unsure: GPUs whose links are
	// up but lead nowhere NVML names (no remote type, or a peer this
	// machine does not show), or whose links NVML could not read.
	var alone, unsure []string
	joinedPairs := 0
	for _, a := range devs {
		peers := 0
		for _, b := range devs {
			if b != a && nvlinksBetween(a, b) > 0 {
				peers++
				if a.Index < b.Index {
					joinedPairs++
				}
			}
		}
		switch {
		case peers > 0:
		case a.Errors["nvlink"] != "":
			unsure = append(unsure, fmt.Sprintf("gpu%d (%s)", a.Index, a.Errors["nvlink"]))
		case slices.ContainsFunc(a.NVLinks, func(l probe.NVLink) bool { return l.Active }):
			unsure = append(unsure, fmt.Sprintf("gpu%d", a.Index))
		default:
			alone = append(alone, fmt.Sprintf("gpu%d", a.Index))
		}
	}
	pairs := len(devs) * (len(devs) - 1) / 2
	c.Measured, c.Expected = len(devs)-len(alone)-len(unsure), len(devs)
	joined := i18n.Textf("%d of %d pairs are joined by NVLink", joinedPairs, pairs)
	switch {
	case promise == InterconnectPCIe:
		c.Expected = nil
		c.Evidence = i18n.Textf("%s: no NVLink is due; %s", promised, joined)
	case len(alone) > 0:
		c.Status = Fail
		c.Evidence = i18n.Textf("%s; %s have no NVLink to any other GPU (%s)", promised, strings.Join(alone, ", "), joined)
		if len(alone) == 1 {
			c.Evidence = i18n.Textf("%s; %s has no NVLink to any other GPU (%s)", promised, alone[0], joined)
		}
		c.Advice = i18n.Textf("This is not the machine ordered: without NVLink, traffic between these GPUs crosses PCIe at a small fraction of NVLink's bandwidth, and every all-reduce waits for it. %s", i18n.Textf(adviceRefund))
	case len(unsure) > 0:
		c.Status = Warn
		c.Evidence = i18n.Textf("%s; NVML does not say where the NVLinks of %s lead (no far end reported, or a peer not shown here): %s", promised, strings.Join(unsure, ", "), joined)
		c.Advice = i18n.Textf("The promise could not be checked: this driver's NVML does not report NVLinks. nvidia-smi topo -m shows what joins the GPUs (NV# is NVLink).")
	default:
		c.Evidence = i18n.Textf("every GPU has NVLink to another (%s), as %s", joined, promised)
	}
	j.add(c)
}

func interconnectName(s string) string {
	switch s {
	case InterconnectNVLink:
		return "NVLink"
	case InterconnectPCIe:
		return "PCIe"
	}
	return s
}
