package bench

import (
	"fmt"
	"strings"

	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/probe"
)

// What an order can promise joins its GPUs (Order.Interconnect), the
// words of the catalog's interconnect field.
const (
	InterconnectNVLink = "nvlink"
	InterconnectPCIe   = "pcie"
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
	if promise == "" {
		return
	}
	promised := "the order promised " + interconnectName(promise) + " between its GPUs"
	if j.order.InterconnectSource != "" {
		promised += " (" + j.order.InterconnectSource + ")"
	}
	var devs []*probe.Device
	for i := range j.f.GPU.Devices {
		if d := &j.f.GPU.Devices[i]; !d.Lost {
			devs = append(devs, d)
		}
	}
	c := Check{ID: "gpu.interconnect", Status: Pass, Unit: "GPUs"}
	if len(devs) < 2 {
		if j.order.GPUs > 0 {
			return // gpu.count says what is missing, or one GPU was ordered
		}
		c.Status, c.Measured = Fail, len(devs)
		c.Evidence = i18n.Textf("%s, but this machine shows %d", promised, len(devs))
		c.Advice = i18n.Textf("An interconnect joins two or more GPUs: this is not the machine ordered. %s", i18n.Textf(adviceRefund))
		j.add(c)
		return
	}
	var alone, unread []string
	joinedPairs := 0
	for _, a := range devs {
		if e := a.Errors["nvlink"]; e != "" {
			unread = append(unread, fmt.Sprintf("gpu%d (%s)", a.Index, e))
		}
		peers := 0
		for _, b := range devs {
			if b != a && nvlinksBetween(a, b) > 0 {
				peers++
				if a.Index < b.Index {
					joinedPairs++
				}
			}
		}
		if peers == 0 {
			alone = append(alone, fmt.Sprintf("gpu%d", a.Index))
		}
	}
	pairs := len(devs) * (len(devs) - 1) / 2
	c.Measured, c.Expected = len(devs)-len(alone), len(devs)
	joined := fmt.Sprintf("%d of %d pairs are joined by NVLink", joinedPairs, pairs)
	switch {
	case promise == InterconnectPCIe:
		c.Expected = nil
		c.Evidence = i18n.Textf("%s: no NVLink is due; %s", promised, joined)
	case len(alone) == 0:
		c.Evidence = i18n.Textf("every GPU has NVLink to another (%s), as %s", joined, promised)
	case len(unread) > 0:
		c.Status = Warn
		c.Evidence = i18n.Textf("%s; NVML could not read the NVLinks of %s, so %s show none", promised, strings.Join(unread, ", "), strings.Join(alone, ", "))
		c.Advice = i18n.Textf("The promise could not be checked: this driver's NVML does not report NVLinks. nvidia-smi topo -m shows what joins the GPUs (NV# is NVLink).")
	default:
		c.Status = Fail
		c.Evidence = i18n.Textf("%s; %s %s no NVLink to any other GPU (%s)", promised, strings.Join(alone, ", "), hasWord(len(alone)), joined)
		c.Advice = i18n.Textf("This is not the machine ordered: without NVLink, traffic between these GPUs crosses PCIe at a small fraction of NVLink's bandwidth, and every all-reduce waits for it. %s", i18n.Textf(adviceRefund))
	}
	j.add(c)
}

func hasWord(n int) string {
	if n == 1 {
		return "has"
	}
	return "have"
}

func interconnectName(s string) string {
	if s == InterconnectNVLink {
		return "NVLink"
	}
	if s == InterconnectPCIe {
		return "PCIe"
	}
	return s
}
