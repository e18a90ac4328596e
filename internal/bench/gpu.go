package bench

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/probe"
	"github.com/gpurent/gpurent/internal/sharing"
	"github.com/gpurent/gpurent/internal/specs"
)

func (j *judge) gpu() {
	g := j.f.GPU
	if !g.Available || len(g.Devices) == 0 {
		why := i18n.Plain(g.Error) // NVML's and the loader's own words
		if g.Error == "" {
			why = i18n.Textf("NVML reports no GPU")
		}
		c := Check{ID: "gpu.present", Status: Skip, Measured: 0, Expected: nil, Unit: "GPUs",
			Evidence: why, Advice: i18n.Textf("GPU checks skipped: run gpurent bench on the rented GPU machine.")}
		if j.order.GPU != "" || j.order.GPUs > 0 {
			c.Status = Fail
			c.Expected = j.expectText()
			c.Evidence = i18n.Textf("no NVIDIA GPU was found: %s", why)
			c.Advice = i18n.Textf("The machine shows no NVIDIA GPU to this process. Check that the instance has one and that the container was started with GPU access; if it has none, ask for a refund.")
		}
		j.add(c)
		j.xids() // a driver that lost its GPUs may still have said why
		return
	}
	if j.order.GPUs > 0 {
		c := Check{ID: "gpu.count", Status: Pass, Measured: len(g.Devices), Expected: j.order.GPUs, Unit: "GPUs",
			Evidence: i18n.Textf("NVML lists %d GPUs", len(g.Devices))}
		if len(g.Devices) != j.order.GPUs {
			c.Status, c.Advice = Fail, i18n.Textf("The machine does not have the number of GPUs you ordered. %s", i18n.Textf(adviceRefund))
			if vis := j.f.Sharing.CUDAVisibleDevices; vis != nil {
				c.Evidence = i18n.Textf("%s%s", c.Evidence, i18n.Textf(" (CUDA_VISIBLE_DEVICES=%q)", *vis))
			}
		}
		j.add(c)
	}
	j.cuda()
	for i := range g.Devices {
		j.device(&g.Devices[i])
	}
	j.xids()
}

func (j *judge) expectText() string {
	switch {
	case j.order.GPU != "" && j.order.GPUs > 0:
		return fmt.Sprintf("%d × %s", j.order.GPUs, j.order.GPU)
	case j.order.GPU != "":
		return j.order.GPU
	}
	return fmt.Sprintf("%d GPUs", j.order.GPUs)
}

// identify finds the datasheet row of a device: by PCI device id first (the
// name can be changed by a hooking layer; the id is the silicon's), then
// by name.
func (j *judge) identify(d *probe.Device) (row *specs.GPU, how i18n.Text) {
	dev := uint16(d.PCIDeviceID >> 16)
	if r := j.tab.ByPCI(dev); r != nil {
		return r, i18n.Textf("PCI device id %04x", dev)
	}
	if r := j.tab.ByName(d.Name); r != nil {
		return r, i18n.Textf("name %q", d.Name)
	}
	return nil, i18n.Text{}
}

func (j *judge) device(d *probe.Device) {
	p := fmt.Sprintf("gpu%d.", d.Index)
	if d.Lost {
		// Nothing else about it can be read: one check says why.
		j.add(Check{ID: p + "lost", Status: Fail, Measured: "GPU_IS_LOST", Expected: i18n.Textf("answers"),
			Evidence: i18n.Textf("NVML says this GPU has fallen off the bus (GPU_IS_LOST; Xid 79 in the kernel log): a hardware or driver fault"),
			Advice:   i18n.Textf("The GPU answers nothing until the machine is rebooted, and often not until the provider replaces it. %s", i18n.Textf(adviceRefund))})
		return
	}
	row, how := j.identify(d)

	// Identity: the card against the order, and the name against the id.
	id := Check{ID: p + "identity", Status: Pass, Measured: d.Name, Unit: "model"}
	if row != nil {
		id.Measured = row.Model
		id.Evidence = i18n.Textf("identified as %s by %s; the driver names it %q", row.Model, how, d.Name)
	} else {
		id.Evidence = i18n.Textf("%q (PCI device id %04x%s) is not in the datasheet table", d.Name, d.PCIDeviceID>>16, pciName(d))
	}
	if j.order.GPU != "" {
		id.Expected = j.order.GPU
		switch {
		case row == nil:
			id.Status, id.Advice = Warn, i18n.Textf("gpurent cannot tell which GPU this is; compare the name and PCI id with what you ordered.")
		case !slices.Contains(j.accepted, row):
			id.Status, id.Advice = Fail, i18n.Textf("You ordered %s and got %s. %s", j.order.GPU, row.Model, i18n.Textf(adviceRefund))
		}
	}
	if byName := j.tab.ByName(d.Name); row != nil && byName != nil && strings.HasPrefix(how.String(), "PCI") && byName.Model != row.Model &&
		!sameFamily(byName, row) {
		id.Status = Fail
		id.Evidence = i18n.Textf("%s%s", id.Evidence, i18n.Textf("; the name says %s but the PCI id says %s", byName.Model, row.Model))
		id.Advice = i18n.Textf("The reported name does not match the silicon: a layer between you and the driver rewrites it. %s", i18n.Textf(adviceRefund))
	}
	j.add(id)
	if row == nil {
		row = &specs.GPU{}
	}

	j.mig(p, d)
	j.memory(p, d, row)
	j.processes(p, d)
	j.utilization(p, d)
	j.virtualization(p, d)
	j.computeMode(p, d)
	j.power(p, d, row)
	j.clocks(p, d)
	j.pcie(p, d, row)
	j.ecc(p, d)
	j.retired(p, d)
	j.remapped(p, d)
}

// sameFamily: NVML names rarely carry the form factor ("NVIDIA H100 80GB
// HBM3" is the SXM5 part), so a name matching a sibling row is no conflict.
func sameFamily(a, b *specs.GPU) bool {
	wa, wb := specs.Words(a.Model), specs.Words(b.Model)
	return len(wa) > 0 && len(wb) > 0 && wa[0] == wb[0]
}

func pciName(d *probe.Device) string {
	if n := specs.KnownPCIName(uint16(d.PCIDeviceID >> 16)); n != "" {
		return ", pci.ids: " + n
	}
	return ""
}

func (j *judge) mig(p string, d *probe.Device) { j.add(sharing.MIG(p, d, j.order.GPU)) }

func (j *judge) memory(p string, d *probe.Device, row *specs.GPU) {
	c := Check{ID: p + "memory", Unit: "GiB", Expected: nil}
	if d.MemoryTotal == nil {
		c.Status, c.Evidence = Skip, i18n.Textf("memory not readable: %s", d.Errors["memory"])
		j.add(c)
		return
	}
	total := gib(*d.MemoryTotal)
	c.Measured = total
	if row.MemoryGB == 0 {
		c.Status, c.Evidence = Skip, i18n.Textf("%.1f GiB reported; no datasheet size to compare", total)
		j.add(c)
		return
	}
	c.Expected = row.MemoryGB
	ratio := total / row.MemoryGB
	c.Evidence = i18n.Textf("NVML reports %.2f GiB; the %s datasheet says %g GB (%.1f%%)", total, row.Model, row.MemoryGB, ratio*100)
	c.Status = Pass
	if ratio < j.lim.MemoryLabelMin {
		c.Status = Fail
		c.Advice = i18n.Textf("The GPU shows less memory than its datasheet: a sharing layer limits it, or it is a smaller card. %s", i18n.Textf(adviceRefund))
	}
	j.add(c)

	if d.MemoryUsed != nil {
		u := Check{ID: p + "memory_used", Unit: "GiB", Measured: gib(*d.MemoryUsed), Expected: 0, Status: Pass}
		u.Evidence = i18n.Textf("%.2f GiB in use before gpurent touched the GPU", gib(*d.MemoryUsed))
		var share float64 // a total of 0 (failed above) has no share to judge
		if *d.MemoryTotal > 0 {
			share = float64(*d.MemoryUsed) / float64(*d.MemoryTotal)
			u.Evidence = i18n.Textf("%.2f GiB (%.1f%%) in use before gpurent touched the GPU", gib(*d.MemoryUsed), share*100)
		}
		if share > j.lim.MemoryUsedMax {
			u.Status, u.Advice = Fail, i18n.Textf("Someone else's data is on this GPU (or your own earlier job is still running). If it is not yours: %s", i18n.Textf(adviceShared))
		}
		j.add(u)
	}
}

func (j *judge) processes(p string, d *probe.Device) { j.add(sharing.Processes(p, d)) }

func (j *judge) utilization(p string, d *probe.Device) {
	c := Check{ID: p + "utilization", Unit: "%", Expected: 0}
	s := d.UtilizationSamples
	if len(s) == 0 {
		c.Status, c.Evidence = Skip, i18n.Textf("no utilization samples: %s", d.Errors["utilization"])
		j.add(c)
		return
	}
	var sum, mx float64
	for _, v := range s {
		sum += float64(v)
		mx = max(mx, float64(v))
	}
	mean := sum / float64(len(s))
	c.Measured = round1(mean)
	c.Evidence = i18n.Textf("%d samples while gpurent ran nothing on the GPU: mean %.1f%%, max %.0f%%", len(s), mean, mx)
	switch {
	case mean >= j.lim.UtilMeanFail || mx >= j.lim.UtilMaxFail:
		c.Status, c.Advice = Fail, i18n.Textf("The GPU is busy with someone else's work. %s", i18n.Textf(adviceShared))
	case mean >= j.lim.UtilMeanWarn:
		c.Status, c.Advice = Warn, i18n.Textf("Something used the GPU while gpurent was idle; run gpurent bench --duration 30s to see whether it persists.")
	default:
		c.Status = Pass
	}
	j.add(c)
}

func (j *judge) virtualization(p string, d *probe.Device) { j.add(sharing.Virtualization(p, d)) }

func (j *judge) computeMode(p string, d *probe.Device) { j.add(sharing.ComputeMode(p, d)) }

func (j *judge) power(p string, d *probe.Device, row *specs.GPU) {
	c := Check{ID: p + "power_limit", Unit: "W"}
	if d.PowerLimitW == nil {
		c.Status, c.Evidence = Skip, i18n.Textf("power limit not readable: %s", d.Errors["power_limit"])
		j.add(c)
		return
	}
	ref, refName, byTDP := row.TDPW, i18n.Textf("the datasheet TDP"), true
	if d.PowerLimitDefaultW != nil && *d.PowerLimitDefaultW > 0 {
		ref, refName, byTDP = *d.PowerLimitDefaultW, i18n.Textf("the board's default limit"), false
	}
	c.Measured = round1(*d.PowerLimitW)
	if ref == 0 {
		c.Status, c.Evidence = Skip, i18n.Textf("enforced limit %.0f W; nothing to compare it with", *d.PowerLimitW)
		j.add(c)
		return
	}
	c.Expected = ref
	ratio := *d.PowerLimitW / ref
	c.Evidence = i18n.Textf("enforced power limit %.0f W, %.0f%% of %s (%.0f W)", *d.PowerLimitW, ratio*100, refName, ref)
	if row.TDPW > 0 && !byTDP {
		c.Evidence = i18n.Textf("%s%s", c.Evidence, i18n.Textf("; datasheet TDP %.0f W", row.TDPW))
	}
	switch {
	case ratio < j.lim.PowerFail:
		c.Status, c.Advice = Fail, i18n.Textf("The card is power-capped well below its rating, so it runs slower than the card you pay for. %s", i18n.Textf(adviceRefund))
	case ratio < j.lim.PowerWarn:
		c.Status, c.Advice = Warn, i18n.Textf("The card is power-capped a little below its default; expect a few percent less throughput.")
	default:
		c.Status = Pass
	}
	j.add(c)
}

// hardSlowdowns are clock event bits that mean the hardware is being held
// back: SwPowerCap 0x4, HwSlowdown 0x8, SwThermal 0x20, HwThermal 0x40,
// HwPowerBrake 0x80 (abi_reference.md §1.8).
const hardSlowdowns = 0x8 | 0x40 | 0x80

func (j *judge) clocks(p string, d *probe.Device) {
	c := Check{ID: p + "throttle", Unit: "reasons", Expected: i18n.Textf("none but gpu_idle")}
	if d.ClockEventReasons == nil {
		c.Status, c.Evidence = Skip, i18n.Textf("clock event reasons not readable: %s", d.Errors["clock_events"])
		j.add(c)
		return
	}
	bits := *d.ClockEventReasons
	names := probe.ClockEventNames(bits &^ 0x1)
	c.Measured = strings.Join(names, ",")
	c.Evidence = i18n.Textf("clock event reasons 0x%x (%s)", bits, strings.Join(probe.ClockEventNames(bits), ", "))
	if d.TemperatureC != nil {
		c.Evidence = i18n.Textf("%s%s", c.Evidence, i18n.Textf("; %d °C", *d.TemperatureC))
	}
	switch {
	case bits&hardSlowdowns != 0:
		c.Status, c.Advice = Fail, i18n.Textf("The hardware is slowing the GPU down (thermal, power brake or hardware slowdown) even before your job: it will not reach its rated speed. %s", i18n.Textf(adviceRefund))
	case bits&(0x4|0x20) != 0:
		c.Status, c.Advice = Warn, i18n.Textf("The driver is capping clocks for power or temperature at idle; watch the clocks under load.")
	case d.TemperatureC != nil && *d.TemperatureC >= j.lim.IdleTempWarn:
		c.Status, c.Advice = Warn, i18n.Textf("The GPU is hot while idle: poor cooling or a hidden load; it may throttle under your job.")
	default:
		c.Status = Pass
	}
	j.add(c)
}

// pcieRate is the transfer rate per lane in GT/s of PCIe generations 1-6.
func pcieRate(gen int) float64 {
	switch gen {
	case 1:
		return 2.5
	case 2:
		return 5
	case 3:
		return 8
	case 4:
		return 16
	case 5:
		return 32
	case 6:
		return 64
	}
	return 0
}

func (j *judge) pcie(p string, d *probe.Device, row *specs.GPU) {
	c := Check{ID: p + "pcie", Unit: "link"}
	if d.PCIeGenMax == nil || d.PCIeWidthMax == nil {
		c.Status, c.Evidence = Skip, i18n.Textf("PCIe link not readable: %s", d.Errors["pcie_gen_max"])
		j.add(c)
		return
	}
	gen, width := *d.PCIeGenMax, *d.PCIeWidthMax
	c.Measured = fmt.Sprintf("Gen%d x%d", gen, width)
	wantGen, wantWidth := row.PCIeGen, row.PCIeLanes
	if d.PCIeGenGPUMax != nil && *d.PCIeGenGPUMax > 0 {
		wantGen = *d.PCIeGenGPUMax
	}
	if wantGen == 0 || wantWidth == 0 {
		c.Status, c.Evidence = Skip, i18n.Textf("best link Gen%d x%d; no datasheet link to compare", gen, width)
		j.add(c)
		return
	}
	c.Expected = fmt.Sprintf("Gen%d x%d", wantGen, wantWidth)
	if pcieRate(gen) == 0 || pcieRate(wantGen) == 0 || width <= 0 || wantWidth <= 0 {
		// A generation after 6 (or a garbled one) has no known rate: no
		// ratio, rather than a fail or a pass made of a zero.
		c.Status, c.Evidence = Skip, i18n.Textf("best link Gen%d x%d, the card's Gen%d x%d: a link gpurent has no rate for", gen, width, wantGen, wantWidth)
		j.add(c)
		return
	}
	ratio := pcieRate(gen) * float64(width) / (pcieRate(wantGen) * float64(wantWidth))
	c.Evidence = i18n.Textf("best link of GPU and slot Gen%d x%d = %.0f%% of the card's Gen%d x%d", gen, width, ratio*100, wantGen, wantWidth)
	if d.PCIeGenCurr != nil && d.PCIeWidthCurr != nil {
		c.Evidence = i18n.Textf("%s%s", c.Evidence, i18n.Textf(" (now Gen%d x%d; an idle link trains down)", *d.PCIeGenCurr, *d.PCIeWidthCurr))
	}
	switch {
	case ratio < j.lim.PCIeFail:
		c.Status, c.Advice = Fail, i18n.Textf("The slot gives the GPU less than half its PCIe bandwidth: data loading and host-device copies will be slow. %s", i18n.Textf(adviceRefund))
	case ratio < 1:
		c.Status, c.Advice = Warn, i18n.Textf("The PCIe link is narrower or older than the card supports; host-device copies will be slower.")
	default:
		c.Status = Pass
	}
	j.add(c)
}

func (j *judge) ecc(p string, d *probe.Device) {
	c := Check{ID: p + "ecc", Unit: "errors", Expected: 0}
	switch {
	case d.ECCEnabled == nil:
		c.Status, c.Evidence = Skip, i18n.Textf("ECC not readable (GeForce cards have none): %s", d.Errors["ecc_mode"])
	case !*d.ECCEnabled:
		c.Status, c.Measured, c.Evidence = Warn, nil, i18n.Textf("ECC is off")
		c.Advice = i18n.Textf("Memory errors will go undetected; data-center cards normally run with ECC on.")
	default:
		c.Status, c.Measured = Pass, uint64(0)
		c.Evidence = i18n.Textf("ECC is on")
		if d.ECCUncorrectedVolatile != nil {
			c.Measured = *d.ECCUncorrectedVolatile
			c.Evidence = i18n.Textf("%s%s", c.Evidence, i18n.Textf("; %d uncorrected errors since the driver loaded", *d.ECCUncorrectedVolatile))
			if *d.ECCUncorrectedVolatile > 0 {
				c.Status, c.Advice = Fail, i18n.Textf("The GPU memory has uncorrectable errors: results may be corrupted. %s", i18n.Textf(adviceRefund))
			}
		}
		if d.ECCUncorrectedAggregate != nil {
			c.Evidence = i18n.Textf("%s%s", c.Evidence, i18n.Textf("; %d in its lifetime", *d.ECCUncorrectedAggregate))
		}
	}
	j.add(c)
}

func (j *judge) retired(p string, d *probe.Device) {
	c := Check{ID: p + "retired_pages", Unit: "pages", Expected: i18n.Textf("< %d, none pending", j.lim.RetiredPagesWarn)}
	if d.RetiredPagesPending == nil && d.RetiredPagesSBE == nil && d.RetiredPagesDBE == nil {
		c.Status, c.Evidence = Skip, i18n.Textf("page retirement not reported (Ampere and newer remap rows instead)")
		j.add(c)
		return
	}
	var total uint32
	if d.RetiredPagesSBE != nil {
		total += *d.RetiredPagesSBE
	}
	if d.RetiredPagesDBE != nil {
		total += *d.RetiredPagesDBE
	}
	pending := d.RetiredPagesPending != nil && *d.RetiredPagesPending
	c.Measured = total
	c.Evidence = i18n.Textf("%d retired pages, pending: %v", total, pending)
	switch {
	case pending:
		c.Status, c.Advice = Fail, i18n.Textf("Memory pages are waiting to be retired: the GPU needs a reset and has had memory errors. %s", i18n.Textf(adviceRefund))
	case total >= j.lim.RetiredPagesFail:
		c.Status, c.Advice = Fail, i18n.Textf("The GPU has retired as many pages as DCGM allows: its memory is failing. %s", i18n.Textf(adviceRefund))
	case total >= j.lim.RetiredPagesWarn:
		c.Status, c.Advice = Warn, i18n.Textf("The GPU has retired many memory pages; watch for memory errors.")
	default:
		c.Status = Pass
	}
	j.add(c)
}

func (j *judge) remapped(p string, d *probe.Device) {
	c := Check{ID: p + "remapped_rows", Unit: "rows", Expected: i18n.Textf("none pending or failed")}
	if d.RemapPending == nil {
		c.Status, c.Evidence = Skip, i18n.Textf("row remapping not reported (before Ampere, or MIG on): %s", d.Errors["remapped_rows"])
		j.add(c)
		return
	}
	unc := uint32(0)
	if d.RemappedRowsUncorrectable != nil {
		unc = *d.RemappedRowsUncorrectable
	}
	c.Measured = unc
	c.Evidence = i18n.Textf("%d uncorrectable remaps, pending: %v, failed: %v", unc, *d.RemapPending, d.RemapFailed != nil && *d.RemapFailed)
	switch {
	case *d.RemapPending:
		c.Status, c.Advice = Fail, i18n.Textf("A row remap is pending: the GPU needs a reset after memory errors. %s", i18n.Textf(adviceRefund))
	case d.RemapFailed != nil && *d.RemapFailed:
		c.Status, c.Advice = Fail, i18n.Textf("A row remap failed: the GPU memory is faulty. %s", i18n.Textf(adviceRefund))
	case unc >= j.lim.RemapUncorrectableFail:
		c.Status, c.Advice = Fail, i18n.Textf("The GPU has remapped as many rows as DCGM allows: its memory is failing. %s", i18n.Textf(adviceRefund))
	default:
		c.Status = Pass
	}
	j.add(c)
}

// round1 rounds to one decimal (half up, as it always has) in float64: a
// conversion to int64 would turn a huge value (a steal of 1e300 %) into a
// negative one. From 1e15 on a float64 has no tenths to round.
func round1(v float64) float64 {
	if !(math.Abs(v) < 1e15) {
		return v
	}
	if r := math.Trunc(v*10 + 0.5); r != 0 {
		return r / 10
	}
	return 0 // never -0
}
