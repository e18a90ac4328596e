package bench

import (
	"math"
	"slices"
	"strings"

	"github.com/gpurent/gpurent/internal/compute"
	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/probe"
)

// soak judges one GPU's soak results into c (gpuN.soak): silent data
// corruption fails; throughput that sags warns. Power and clocks, from
// NVML's samples beside it, are soakPower's and soakClocks'.
func (j *judge) soak(res compute.Results, r compute.Result, c *Check) {
	lim := j.clim
	s := r.Soak
	if s == nil {
		c.Status, c.Measured, c.Evidence = Skip, nil, i18n.Textf("%s backend: the soak recorded no loop", res.Backend)
		return
	}
	c.Measured, c.Unit = round1(r.Value), "TFLOPS"
	c.Evidence = i18n.Textf("%s backend: %s; median %.1f TFLOPS over %d intervals", res.Backend, r.Notes, r.Value, len(s.Intervals))
	if s.Stopped != "" {
		c.Evidence = i18n.Textf("%s%s", c.Evidence, i18n.Textf("; stopped early: %s", s.Stopped))
	}
	first, last := fifths(s.Intervals, func(i compute.SoakInterval) float64 { return i.TFLOPS })
	var wrong, consistent []i18n.Text
	for _, l := range []*compute.Soak{s, s.FP32} {
		if l == nil {
			continue
		}
		if l.Mismatches > 0 {
			w := i18n.Textf("%s: %d of %d results differed from the first", l.GEMM, l.Mismatches, l.Iterations)
			if m := l.FirstMismatch; m != nil {
				w = i18n.Textf("%s%s", w, i18n.Textf(", first at iteration %d: wrong elements %d, the first at index %d, off by up to %g", m.Iteration, m.Elements, m.Element, m.MaxDiff))
			}
			wrong = append(wrong, w)
		}
		if l.ReferenceBad > 0 {
			consistent = append(consistent, i18n.Textf("%s: %d of %d elements of the first result disagree with the CPU's FP64 (worst %.4f relative, tolerance %.4f)",
				l.GEMM, l.ReferenceBad, l.ReferenceChecked, l.ReferenceMaxErr, l.Tolerance))
		}
	}
	switch {
	case len(wrong) > 0:
		c.Status = Fail
		c.Evidence = i18n.Textf("%s%s", c.Evidence, i18n.Textf("; %s", i18n.Join(wrong, "; ")))
		c.Advice = i18n.Textf("This GPU computes different answers to the same GEMM under load (silent data corruption): training on it can go wrong without an error. %s", i18n.Textf(adviceRefund))
	case len(consistent) > 0:
		c.Status = Fail
		c.Evidence = i18n.Textf("%s%s", c.Evidence, i18n.Textf("; %s", i18n.Join(consistent, "; ")))
		c.Advice = i18n.Textf("This GPU's GEMM results are wrong, consistently: the card, its driver or cuBLASLt computes wrong answers. %s", i18n.Textf(adviceRefund))
	case first > 0 && last/first < lim.SoakSagWarn:
		c.Status = Warn
		c.Evidence = i18n.Textf("%s%s", c.Evidence, i18n.Textf("; throughput fell from %.1f to %.1f TFLOPS (first fifth to last, %.0f%%)", first, last, 100*last/first))
		c.Advice = i18n.Textf("The GPU slows down under sustained load: it is throttling (heat or power). Long runs will take longer than short benchmarks promise.")
	default:
		c.Status = Pass
		c.Evidence = i18n.Textf("%s%s", c.Evidence, i18n.Textf("; %d results matched the first; the CPU's FP64 tile agreed within %.4f", s.Iterations-1, s.ReferenceMaxErr))
		if f := s.FP32; f != nil {
			c.Evidence = i18n.Textf("%s%s", c.Evidence, i18n.Textf("; FP32: %d results matched the first, the tile within %.6f", f.Iterations-1, f.ReferenceMaxErr))
		}
		if first > 0 {
			c.Evidence = i18n.Textf("%s%s", c.Evidence, i18n.Textf("; throughput held (last fifth %.0f%% of the first)", 100*last/first))
		}
	}
}

// soakPower judges the power drawn under the soak against the enforced
// limit: the 90th percentile of the samples after the first fifth (the
// card ramps up at the start).
func (j *judge) soakPower(p string, s *compute.Soak, dev *probe.Device) {
	c := Check{ID: p + "soak_power", Unit: "W", Status: Pass}
	var w []float64
	for _, x := range s.Samples[len(s.Samples)/5:] {
		if x.PowerW != nil {
			w = append(w, *x.PowerW)
		}
	}
	if len(w) == 0 || dev == nil || dev.PowerLimitW == nil || *dev.PowerLimitW <= 0 {
		c.Status, c.Evidence = Skip, i18n.Textf("NVML gave no power readings or no enforced limit during the soak")
		j.add(c)
		return
	}
	slices.Sort(w)
	p90 := w[int(math.Ceil(0.9*float64(len(w))))-1]
	limit := *dev.PowerLimitW
	c.Measured, c.Expected = round1(p90), round1(limit)
	c.Evidence = i18n.Textf("%.0f W drawn (90th percentile of %d samples after the first fifth), %.0f%% of the %.0f W enforced limit; the highest %.0f W", p90, len(w), 100*p90/limit, limit, w[len(w)-1])
	if p90 < j.clim.SoakPowerWarn*limit {
		c.Status = Warn
		c.Advice = i18n.Textf("Under a full GEMM the card stays well below its power limit: it is capped or throttled elsewhere (clocks locked low, a power brake, cooling), and delivers less than the model should.")
	}
	j.add(c)
}

// soakClocks judges the SM clock over the soak: a fall from the first
// fifth to the last, or a clock far below the card's maximum, with the
// clock event reasons NVML gave then.
func (j *judge) soakClocks(p string, s *compute.Soak, dev *probe.Device) {
	c := Check{ID: p + "soak_clocks", Unit: "MHz", Status: Pass}
	var xs []compute.SoakSample
	for _, x := range s.Samples {
		if x.SMClockMHz != nil {
			xs = append(xs, x)
		}
	}
	if len(xs) < 5 {
		c.Status, c.Evidence = Skip, i18n.Textf("NVML gave %d SM clock readings during the soak; 5 are needed", len(xs))
		j.add(c)
		return
	}
	first, last := fifths(xs, func(x compute.SoakSample) float64 { return float64(*x.SMClockMHz) })
	var events uint64
	for _, x := range xs[len(xs)-len(xs)/5:] {
		if x.ClockEvents != nil {
			events |= *x.ClockEvents
		}
	}
	c.Measured = round1(last)
	c.Evidence = i18n.Textf("SM clock %.0f MHz in the first fifth, %.0f MHz in the last", first, last)
	if dev != nil && dev.ClockSMMaxMHz != nil && *dev.ClockSMMaxMHz > 0 {
		c.Expected = *dev.ClockSMMaxMHz
		c.Evidence = i18n.Textf("%s%s", c.Evidence, i18n.Textf(" (the card's maximum is %d MHz)", *dev.ClockSMMaxMHz))
	}
	var temps []int
	for _, x := range s.Samples {
		if x.TempC != nil {
			temps = append(temps, *x.TempC)
		}
	}
	if len(temps) > 0 {
		c.Evidence = i18n.Textf("%s%s", c.Evidence, i18n.Textf("; temperature %d to %d C, at most %d C", temps[0], temps[len(temps)-1], slices.Max(temps)))
	}
	why := probe.HeldBack(events)
	if len(why) > 0 {
		c.Evidence = i18n.Textf("%s%s", c.Evidence, i18n.Textf("; clock events in the last fifth: %s", strings.Join(why, ", ")))
	}
	floor := 0.0
	if dev != nil && dev.ClockSMMaxMHz != nil {
		floor = j.clim.SoakClockFloor * float64(*dev.ClockSMMaxMHz)
	}
	switch {
	case first > 0 && last/first < j.clim.SoakClockWarn:
		c.Status = Warn
		c.Advice = i18n.Textf("The SM clock fell by %.0f%% under sustained load%s: the card throttles, and long runs go slower than short ones.", 100*(1-last/first), reasonNote(why))
	case last < floor:
		c.Status = Warn
		c.Advice = i18n.Textf("Under load the SM clock stays below half the card's maximum%s.", reasonNote(why))
	}
	j.add(c)
}

func reasonNote(why []string) i18n.Text {
	if len(why) == 0 {
		return i18n.Text{}
	}
	return i18n.Textf(" (NVML gives %s)", strings.Join(why, ", "))
}

// fifths is the median of the first fifth of xs and of the last (each at
// least one element); zeros when xs is empty.
func fifths[T any](xs []T, v func(T) float64) (first, last float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	k := max(1, len(xs)/5)
	med := func(part []T) float64 {
		vs := make([]float64, len(part))
		for i, x := range part {
			vs[i] = v(x)
		}
		return compute.Summarize(vs).Median
	}
	return med(xs[:k]), med(xs[len(xs)-k:])
}

// soakHomogeneity names each GPU whose soak throughput is below
// SoakSlowerWarn of the fastest's: on one node the same model under the
// same load should deliver the same.
func (j *judge) soakHomogeneity() {
	var gs []gpuValue
	for _, res := range j.f.Compute {
		if r := res.Find(compute.ProbeSoak); r != nil && r.Error == "" && r.Value > 0 {
			gs = append(gs, gpuValue{res.Index, r.Value})
		}
	}
	if len(gs) < 2 {
		return
	}
	best, slow := slowerThanBest(gs, false, j.clim.SoakSlowerWarn)
	c := Check{ID: "gpu.soak_homogeneity", Status: Pass, Unit: "TFLOPS", Measured: round1(best.value)}
	c.Evidence = i18n.Textf("%d GPUs soaked at once; the fastest, gpu%d, %.1f TFLOPS", len(gs), best.index, best.value)
	if len(slow) > 0 {
		var names []i18n.Text
		for _, s := range slow {
			names = append(names, s.Text("TFLOPS"))
		}
		c.Status = Warn
		c.Evidence = i18n.Textf("%s%s", c.Evidence, i18n.Textf("; slower by more than 10%%: %s", i18n.Join(names, ", ")))
		c.Advice = i18n.Textf("One GPU of this machine delivers clearly less than its peers under the same load: it throttles, is capped, or sits on a worse link or cooling. Data-parallel training runs at the pace of the slowest GPU.")
	}
	j.add(c)
}
