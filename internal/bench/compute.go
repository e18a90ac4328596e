package bench

import (
	"fmt"

	"github.com/gpurent/gpurent/internal/compute"
	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/probe"
	"github.com/gpurent/gpurent/internal/specs"
)

// ComputeLimits are the thresholds of the compute probes, each with why.
type ComputeLimits struct {
	// FP32Warn: share of the FP32 peak below which the FMA probe warns.
	// Healthy cards measured 56–98% with FMA-chain kernels
	// (bench_anchors.md §6b: L40 56%, H200 64%, A100 98%).
	FP32Warn float64
	// MemWarn, MemFail: copy bandwidth over the datasheet's. Healthy cards
	// measured 57–100% (§6c: H200 read 57%, L40 98%).
	MemWarn, MemFail float64
	// LinkWarn, LinkFail: pinned host-device copies over the link's
	// theoretical rate. Healthy links measured 56–84% (§6d: H100 H2D 35 of
	// 63 GB/s, Gen4 cards 24–27 of 31.5).
	LinkWarn, LinkFail float64
	// AllocWarn, AllocFail: memory allocated and touched over NVML's total.
	// The probe leaves a 2% margin; an MPS pinned-memory limit or HAMi's
	// cap shows as far less (§3b).
	AllocWarn, AllocFail float64
	// TensorFloor: mma.sync fraction of the dense peak below which the
	// probe warns even though the expected fraction for the architecture
	// has not been calibrated; register-only mma.sync loops have reached
	// the datasheet rate on Hopper (mmapeak, §2d).
	TensorFloor float64
	// ResidueMax: bytes of fresh GPU memory, read before anything wrote
	// it, that may be other than zero: none. CUDA documents that
	// cuMemAlloc does not clear memory, and a driver that scrubs between
	// processes hands out zeros (issue #39 reports an H200 on driver
	// 580.159.04 reading back as zeros 16 GiB another process had filled
	// with 0xCD), so one byte that is not zero is data someone else left.
	ResidueMax float64
	// MemtestMax: words the memory test may find wrong: none. A pattern
	// read back different from what was written is a memory fault,
	// whatever ECC has logged yet.
	MemtestMax float64
	// SoakPowerWarn: the share of the enforced power limit a card must
	// draw under the soak's full GEMM (the 90th percentile of its
	// samples). DCGM's targeted-power test fails a card that cannot hold
	// its target power under a GEMM; 0.75 leaves room for smaller GEMMs
	// and cooler cards, and it is a warning until gpurent has measured a
	// real card's figure (no GPU has run the soak yet).
	SoakPowerWarn float64
	// SoakSagWarn: the last fifth of the soak's GEMM throughput over the
	// first below which it warns: the homogeneity rule's 10%, well above
	// one GEMM's run-to-run noise; not yet calibrated on a real card.
	SoakSagWarn float64
	// SoakClockWarn, SoakClockFloor: the SM clock's last fifth over its
	// first, and over NVML's maximum for this card, below which it warns
	// (a clock that fell, or one held far below what the card can do);
	// the clock event reasons say why.
	SoakClockWarn, SoakClockFloor float64
	// SoakSlowerWarn: a GPU whose soak throughput is below this share of
	// the fastest GPU's is named (gpu-fryer's homogeneity rule: 10%).
	SoakSlowerWarn float64
}

// DefaultComputeLimits are the limits bench uses.
func DefaultComputeLimits() ComputeLimits {
	return ComputeLimits{FP32Warn: 0.5, MemWarn: 0.5, MemFail: 0.25, LinkWarn: 0.45, LinkFail: 0.25, AllocWarn: 0.9, AllocFail: 0.8, TensorFloor: 0.25, ResidueMax: 0,
		MemtestMax: 0, SoakPowerWarn: 0.75, SoakSagWarn: 0.9, SoakClockWarn: 0.85, SoakClockFloor: 0.5, SoakSlowerWarn: 0.9}
}

// calibration is the share of the dense peak a healthy card of an
// architecture reaches with gpurent's mma.sync kernels (the tensor_*
// probes; cuBLASLt's GEMMs are judged against the peak alone). It is
// filled only from runs of scripts/gpu-check.sh on real cards, each
// labelled with the card and date; an architecture without an entry is
// reported, not judged. Hopper's mma.sync issues at about 61% of the peak
// its wgmma instructions reach (cuBLASLt's BF16 GEMM: 78% on the same card).
func calibration(arch, probe string) (fraction float64, label string, ok bool) {
	switch {
	case arch == "hopper" && (probe == compute.ProbeBF16 || probe == compute.ProbeFP16 || probe == compute.ProbeTF32):
		// NVIDIA H200 (SXM, 700 W), driver 580.159.04, 2026-12-04: BF16 603.1,
		// FP16 603.3 of 989.5 TFLOPS, TF32 301.7 of 494.5 (61.0% each; quick
		// mode 598.0, 601.3, 301.6); docs/BENCHMARKS.md.
		return 0.61, "an H200 SXM measured 61% with these kernels on 2026-12-04", true
	}
	return 0, "", false
}

func (j *judge) compute() {
	for _, res := range j.f.Compute {
		p := fmt.Sprintf("gpu%d.", res.Index)
		if res.CPU {
			p = "host."
		}
		if !res.Available {
			j.add(Check{ID: p + "compute", Status: Skip, Evidence: i18n.Textf("%s backend did not run: %s", res.Backend, res.Error)})
			continue
		}
		var dev *probe.Device
		var row *specs.GPU
		for i := range j.f.GPU.Devices {
			if j.f.GPU.Devices[i].Index == res.Index {
				dev = &j.f.GPU.Devices[i]
				row, _ = j.identify(dev)
			}
		}
		for _, r := range res.Results {
			j.computeResult(p, res, r, dev, row)
		}
	}
}

func (j *judge) computeResult(p string, res compute.Results, r compute.Result, dev *probe.Device, row *specs.GPU) {
	lim := j.clim
	c := Check{ID: p + r.Probe, Measured: round1(r.Value), Unit: r.Unit, Status: Pass}
	c.Evidence = i18n.Textf("%s backend: %.1f %s", res.Backend, r.Value, r.Unit)
	if r.Timing.N > 0 {
		c.Evidence = i18n.Textf("%s%s", c.Evidence, i18n.Textf(" (median of %d, spread %.1f%%)", r.Timing.N, r.Timing.Spread*100))
	}
	if !r.Notes.IsZero() {
		c.Evidence = i18n.Textf("%s%s", c.Evidence, i18n.Textf("; %s", r.Notes))
	}
	if r.Error != "" {
		c.Status, c.Measured, c.Evidence = Skip, nil, i18n.Textf("%s backend: %s", res.Backend, r.Error)
		j.add(c)
		return
	}
	if res.CPU {
		c.Evidence = i18n.Textf("host (cpu backend, never compared with GPU datasheets): %s", c.Evidence)
		j.add(c)
		return
	}
	if row == nil {
		row = &specs.GPU{}
	}
	frac := func(peak float64) (float64, bool) {
		if peak <= 0 {
			return 0, false
		}
		f := r.Value / peak
		c.Expected = peak
		c.Evidence = i18n.Textf("%s%s", c.Evidence, i18n.Textf("; %.0f%% of the %s datasheet's %g %s", f*100, row.Model, peak, r.Unit))
		return f, true
	}
	switch r.Probe {
	case compute.ProbeFP32:
		if f, ok := frac(row.FP32TFLOPS); !ok {
			c.Status = Skip
		} else if f < lim.FP32Warn {
			c.Status, c.Advice = Warn, i18n.Textf("FP32 throughput is below what healthy cards reach: the card may be power-capped, throttled or shared.")
		}
	case compute.ProbeBF16, compute.ProbeFP16, compute.ProbeTF32, compute.ProbeFP8, compute.ProbeGEMMBF16, compute.ProbeGEMMTF32, compute.ProbeGEMMFP32:
		f, ok := frac(row.Peak(r.Precision))
		arch := ""
		if dev != nil {
			arch = dev.Architecture
		}
		want, label, calibrated := calibration(arch, r.Probe)
		switch {
		case !ok:
			c.Status = Skip
		case calibrated && f < want*0.9:
			c.Status, c.Advice = Warn, i18n.Textf("Below the %.0f%% a healthy card reached (%s).", want*100, label)
		case f < lim.TensorFloor:
			c.Status, c.Advice = Warn, i18n.Textf("Far below the datasheet: the card may be throttled, shared, or not the model it claims.")
		case !calibrated && (r.Probe == compute.ProbeBF16 || r.Probe == compute.ProbeFP16 || r.Probe == compute.ProbeTF32 || r.Probe == compute.ProbeFP8):
			c.Status = Skip
			c.Evidence = i18n.Textf("%s%s", c.Evidence, i18n.Textf("; the expected fraction for mma.sync on %s is not calibrated yet, so it is reported, not judged", orUnknown(arch)))
		}
	case compute.ProbeCopy, compute.ProbeDtoD:
		if f, ok := frac(row.MemoryBWGBs); !ok {
			c.Status = Skip
		} else if f < lim.MemFail {
			c.Status, c.Advice = Fail, i18n.Textf("Memory bandwidth is a fraction of the datasheet's: the GPU is shared or not the model it claims. %s", i18n.Textf(adviceRefund))
		} else if f < lim.MemWarn {
			c.Status, c.Advice = Warn, i18n.Textf("Memory bandwidth is below what healthy cards reach.")
		}
	case compute.ProbeH2D, compute.ProbeD2H:
		link := linkGBs(dev)
		if link <= 0 {
			c.Status = Skip
			break
		}
		f := r.Value / link
		c.Expected = round1(link)
		c.Evidence = i18n.Textf("%s%s", c.Evidence, i18n.Textf("; %.0f%% of the Gen%d x%d link's %.1f GB/s", f*100, *dev.PCIeGenMax, *dev.PCIeWidthMax, link))
		switch {
		case f > linkBeyond:
			// More than the link can carry is no fault of the copy: the
			// path is not that PCIe link (a Grace Hopper's NVLink-C2C
			// joins CPU and GPU at 900 GB/s both ways, NVIDIA's "Grace CPU
			// Superchip Architecture In Depth"), so the link says nothing
			// of it.
			c.Expected = nil
			c.Evidence = i18n.Textf("%s%s", c.Evidence, i18n.Textf(": more than that link carries, so these copies do not cross it (a GH200's CPU and GPU share NVLink-C2C)"))
		case f < lim.LinkFail:
			c.Status, c.Advice = Fail, i18n.Textf("Host-device copies run far below the PCIe link: data loading will starve the GPU. %s", i18n.Textf(adviceRefund))
		case f < lim.LinkWarn:
			c.Status, c.Advice = Warn, i18n.Textf("Host-device copies are slower than healthy links manage.")
		}
	case compute.ProbeAlloc:
		if dev == nil || dev.MemoryTotal == nil || *dev.MemoryTotal == 0 {
			c.Status = Skip
			break
		}
		total := float64(*dev.MemoryTotal) / (1 << 30)
		f := r.Value / total
		c.Expected = round1(total)
		c.Evidence = i18n.Textf("%s%s", c.Evidence, i18n.Textf("; %.0f%% of the %.1f GiB NVML reports", f*100, total))
		switch {
		case f < lim.AllocFail:
			c.Status, c.Advice = Fail, i18n.Textf("Much less memory can be allocated than the GPU has: an MPS or API-hooking limit caps your share. %s", i18n.Textf(adviceShared))
		case f < lim.AllocWarn:
			c.Status, c.Advice = Warn, i18n.Textf("Somewhat less memory can be allocated than the GPU has: someone else may hold some.")
		}
	case compute.ProbeResidue:
		c.Measured, c.Expected = int64(r.Value), int64(lim.ResidueMax)
		c.Evidence = i18n.Textf("%s backend: %s", res.Backend, r.Notes)
		if r.Value > lim.ResidueMax {
			c.Status, c.Advice = Fail, i18n.Textf("Fresh GPU memory holds data another process wrote: this driver or virtual GPU does not clear memory between tenants (or, under MPS, between its clients), so the last tenant's data can be read here and yours by the next. Keep the evidence (gpurent bench --record facts.json keeps what was read) and ask the provider for a machine that clears it; before release, overwrite the free GPU memory yourself.")
		} else {
			c.Evidence = i18n.Textf("%s%s", c.Evidence, i18n.Textf(": every read returned zeros, as from a driver that clears memory between processes"))
		}
	case compute.ProbeMemtest:
		c.Measured, c.Expected = int64(r.Value), int64(lim.MemtestMax)
		c.Evidence = i18n.Textf("%s backend: %s", res.Backend, r.Notes)
		if r.Value > lim.MemtestMax {
			c.Status, c.Advice = Fail, i18n.Textf("GPU memory does not keep what was written to it: a hardware fault that will corrupt your training without an error. %s", i18n.Textf(adviceRefund))
		}
	case compute.ProbeSoak:
		j.soak(res, r, &c)
	case compute.ProbeSustain:
		c.Unit = ""
		if cn := r.Contention; cn != nil {
			c.Measured = cn.Verdict
			c.Expected = compute.Clean
			c.Evidence = i18n.Textf("%d launches: p50 %.3f ms, p99 %.3f ms, CV %.3f, %.1f%% slow, last/first fifth %.2f", cn.Launches, cn.P50Ms, cn.P99Ms, cn.CV, cn.SlowShare*100, cn.Sag)
			if cn.Period > 0 {
				c.Evidence = i18n.Textf("%s%s", c.Evidence, i18n.Textf(", slow launches every %d", cn.Period))
			}
			switch cn.Verdict {
			case compute.Contended:
				c.Status, c.Advice = Fail, i18n.Textf("A share of launches waits for someone else's work: the GPU is time-sliced or shared through MPS. %s", i18n.Textf(adviceShared))
			case compute.Throttling:
				c.Status, c.Advice = Warn, i18n.Textf("The kernel slows down as the run goes on: power or thermal throttling. Watch clocks under your load.")
			case compute.Noisy:
				c.Status, c.Advice = Warn, i18n.Textf("Launch times vary without a clear pattern; rerun with gpurent bench --full to see whether it persists.")
			}
		}
	}
	// On a MIG-enabled card the probes ran on one instance, a fraction of
	// the SMs, memory and copy engines: measured against the whole card
	// they would fail for what gpuN.mig already says. The sustained probe
	// still judges the instance itself (time slicing inside it), the
	// residue probe and the memory test the instance's memory.
	if dev != nil && dev.MIGEnabled != nil && *dev.MIGEnabled && r.Probe != compute.ProbeSustain && r.Probe != compute.ProbeResidue && r.Probe != compute.ProbeMemtest && c.Status != Skip {
		c.Status, c.Advice = Skip, i18n.Textf("")
		c.Evidence = i18n.Textf("%s%s", c.Evidence, i18n.Textf("; MIG is on, so this measures one instance: reported, not judged against the whole card (see %smig)", p))
	}
	j.add(c)
	if r.Probe == compute.ProbeSoak && r.Soak != nil && c.Status != Skip {
		j.soakPower(p, r.Soak, dev)
		j.soakClocks(p, r.Soak, dev)
	}
}

func orUnknown(s string) string {
	if s == "" {
		return "this architecture"
	}
	return s
}

// linkBeyond is the share of the PCIe link's theoretical rate above which
// host-device copies did not cross that link: no PCIe copy reaches the
// raw rate, as encoding and packet headers take their share first.
const linkBeyond = 1.05

// linkGBs is the PCIe link's theoretical rate in GB/s: transfer rate ×
// lanes × encoding (8b/10b to Gen2, 128b/130b from Gen3) / 8 bits.
func linkGBs(d *probe.Device) float64 {
	if d == nil || d.PCIeGenMax == nil || d.PCIeWidthMax == nil {
		return 0
	}
	enc := 128.0 / 130
	if *d.PCIeGenMax <= 2 {
		enc = 0.8
	}
	return pcieRate(*d.PCIeGenMax) * float64(*d.PCIeWidthMax) * enc / 8
}
