package bench

import (
	"fmt"

	"github.com/gpurent/gpurent/internal/compute"
	"github.com/gpurent/gpurent/internal/i18n"
)

// gpuValue is one GPU's figure on one probe.
type gpuValue struct {
	index int
	value float64
}

// slower is a GPU below the best, with the share of the best's speed it
// reached.
type slower struct {
	gpuValue
	speed float64
}

func (s slower) Text(unit string) i18n.Text {
	return i18n.Textf("gpu%d %.1f %s (%.0f%% slower)", s.index, s.value, unit, 100*(1-s.speed))
}

// slowerThanBest returns the best of gs and each GPU whose figure is
// below share of the best's (above best/share where lower is better, as
// for a launch's time).
func slowerThanBest(gs []gpuValue, lowerBetter bool, share float64) (gpuValue, []slower) {
	best := gs[0]
	for _, g := range gs[1:] {
		if (lowerBetter && g.value < best.value) || (!lowerBetter && g.value > best.value) {
			best = g
		}
	}
	var out []slower
	for _, g := range gs {
		speed := g.value / best.value
		if lowerBetter {
			speed = best.value / g.value
		}
		if speed < share {
			out = append(out, slower{g, speed})
		}
	}
	return best, out
}

// homogeneity compares the per-GPU probes across the GPUs of one model in
// this machine (full mode measures them all at once) and names each GPU
// more than 10% slower than the best on any of them: one card among eight
// that is capped, throttled or on a worse link paces data-parallel
// training. With fewer than two comparable GPUs there is no check, so a
// one-GPU run is unchanged. MIG instances are not compared.
func (j *judge) homogeneity() {
	probes := []struct {
		name        string
		lowerBetter bool
	}{{compute.ProbeFP32, false}, {compute.ProbeGEMMBF16, false}, {compute.ProbeCopy, false}, {compute.ProbeSustain, true}}
	models := map[string][]int{} // model name: indexes of j.f.Compute
	var order []string
	for i, res := range j.f.Compute {
		if res.CPU || !res.Available {
			continue
		}
		model := res.Device
		for _, d := range j.f.GPU.Devices {
			if d.Index == res.Index {
				if d.MIGEnabled != nil && *d.MIGEnabled {
					model = ""
				} else if d.Name != "" {
					model = d.Name
				}
			}
		}
		if model == "" {
			continue
		}
		if _, ok := models[model]; !ok {
			order = append(order, model)
		}
		models[model] = append(models[model], i)
	}
	for k, model := range order {
		var compared, slow []i18n.Text
		slowGPUs := map[int]bool{}
		n := 0
		for _, p := range probes {
			var gs []gpuValue
			unit := ""
			for _, i := range models[model] {
				res := j.f.Compute[i]
				if r := res.Find(p.name); r != nil && r.Error == "" && r.Value > 0 {
					gs = append(gs, gpuValue{res.Index, r.Value})
					unit = r.Unit
				}
			}
			if len(gs) < 2 {
				continue
			}
			n = max(n, len(gs))
			best, s := slowerThanBest(gs, p.lowerBetter, j.clim.SoakSlowerWarn)
			compared = append(compared, i18n.Textf("%s best gpu%d %.1f %s", p.name, best.index, best.value, unit))
			for _, x := range s {
				slow = append(slow, i18n.Textf("%s: %s", p.name, x.Text(unit)))
				slowGPUs[x.index] = true
			}
		}
		if len(compared) == 0 {
			continue
		}
		id := "gpu.homogeneity"
		if len(order) > 1 { // a machine of mixed models: one check a model
			id = fmt.Sprintf("gpu.homogeneity%d", k+1)
		}
		c := Check{ID: id, Status: Pass, Measured: len(slowGPUs), Expected: 0, Unit: "GPUs slower",
			Evidence: i18n.Textf("%d %s GPUs compared: %s", n, model, i18n.Join(compared, "; "))}
		if len(slow) > 0 {
			c.Status = Warn
			c.Evidence = i18n.Textf("%s%s", c.Evidence, i18n.Textf("; more than 10%% slower than the best: %s", i18n.Join(slow, "; ")))
			c.Advice = i18n.Textf("A GPU of this machine measures clearly below its peers of the same model: it is capped, throttled or on a worse link. Data-parallel training runs at the pace of the slowest GPU; ask for the machine to be checked or replaced.")
		}
		j.add(c)
	}
}
