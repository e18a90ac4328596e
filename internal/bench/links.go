package bench

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpurent/gpurent/internal/compute"
	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/probe"
	"github.com/gpurent/gpurent/internal/specs"
)

// The links between a machine's GPUs, judged only where there are two or
// more (a one-GPU rental's NVLinks carry nothing of its own): each GPU's
// NVLinks against its datasheet, the peer-to-peer status of each pair, and
// the NVLink fabric an NVSwitch board needs. docs/bench.md gives each
// threshold's source.

// nvlinkGBs is one NVLink's bidirectional bandwidth by generation: 50 GB/s
// from NVLink 2 to 4 (V100 6 links 300 GB/s, A100 12 links 600 GB/s, H100
// 18 links 900 GB/s), 100 GB/s for NVLink 5 (B200, 18 links 1.8 TB/s).
func nvlinkGBs(version string) float64 {
	switch {
	case version == "5.0":
		return 100
	case version >= "2.0" && version <= "4.0":
		return 50
	}
	return 0
}

// sxm: a board-mounted part whose every NVLink is wired to its peers or
// NVSwitches on the baseboard, so a link down is a fault; a PCIe card's
// links are wired only where a bridge is fitted.
func sxm(row *specs.GPU) bool {
	return strings.HasPrefix(row.Variant, "SXM")
}

// links judges the interconnect of a multi-GPU machine.
func (j *judge) links() {
	g := j.f.GPU
	if len(g.Devices) < 2 {
		// bench --links measured them anyway: each check says why it
		// does not apply.
		j.peers()
		j.allReduce()
		return
	}
	var passed []Check
	for i := range g.Devices {
		c, ok := j.nvlink(&g.Devices[i])
		switch {
		case !ok:
		case c.Status == Pass:
			passed = append(passed, c)
		default:
			j.add(c)
		}
	}
	j.passedLinks(passed)
	j.nvlinkErrorsRose()
	j.fabric()
	j.p2p()
	j.peers()
	j.allReduce()
}

// nvlink judges one GPU's NVLinks: on an SXM part every link it has must
// be up (as many as its datasheet's NVLink bandwidth makes), on a bridged
// PCIe card every link of a fitted bridge; and their error counters.
func (j *judge) nvlink(d *probe.Device) (Check, bool) {
	if d.Lost || len(d.NVLinks) == 0 {
		return Check{}, false
	}
	row, _ := j.identify(d)
	if row == nil {
		row = &specs.GPU{}
	}
	var down []string
	active := 0
	for _, l := range d.NVLinks {
		if l.Active {
			active++
		} else {
			down = append(down, fmt.Sprint(l.Link))
		}
	}
	expect := len(d.NVLinks)
	if per := nvlinkGBs(linkVersion(d)); sxm(row) && per > 0 && row.NVLinkGBs > 0 {
		expect = max(expect, int(row.NVLinkGBs/per+0.5))
	}
	c := Check{ID: fmt.Sprintf("gpu%d.nvlink", d.Index), Status: Pass, Measured: active, Expected: expect, Unit: "links",
		Evidence: i18n.Textf("%d of %d NVLinks up%s", active, expect, linkWord(d.NVLinks))}
	switch {
	case sxm(row) && active < expect:
		c.Status = Fail
		c.Evidence = i18n.Textf("%s%s", c.Evidence, downWord(down, len(d.NVLinks), expect))
		c.Advice = i18n.Textf("NVLinks of this board are down or missing: traffic to and from this GPU crosses the remaining links (or PCIe), and every all-reduce waits for it. Run nvidia-smi nvlink --status to see it; only the provider can reset or repair the board. %s", i18n.Textf(adviceRefund))
	case !sxm(row) && active > 0 && active < expect:
		c.Status = Warn
		c.Evidence = i18n.Textf("%s%s", c.Evidence, downWord(down, len(d.NVLinks), expect))
		c.Advice = i18n.Textf("Part of this card's NVLink bridge is not up: a bridge is missing or loose, and the pair it joins talks at a fraction of the bridge's bandwidth. Ask the provider to check the bridges.")
	case active == 0:
		c.Expected = nil
		c.Evidence = i18n.Textf("none of its %d NVLinks is up: no NVLink bridge is fitted, so it reaches the other GPUs over PCIe", len(d.NVLinks))
	}
	if e := linkErrorWord(d.NVLinks, j.lim.NVLinkCRCWarn); !e.IsZero() {
		c.Evidence = i18n.Textf("%s%s", c.Evidence, i18n.Textf("; %s", e))
		if c.Status == Pass {
			c.Status = Warn
			c.Advice = i18n.Textf("An NVLink is retransmitting data that arrived corrupt (a marginal link, cable or connector): it still works, slower, and such links often go down next. Ask the provider to check it; nvidia-smi nvlink -e shows the counters.")
		}
	}
	return c, true
}

// passedLinks adds the GPUs whose links passed as one check where they
// all say the same (eight lines of "18 of 18" say less than one), else
// each on its own.
func (j *judge) passedLinks(cs []Check) {
	if len(cs) < 2 {
		for _, c := range cs {
			j.add(c)
		}
		return
	}
	var names []string
	active, expect := 0, 0
	for _, c := range cs {
		if c.Evidence.String() != cs[0].Evidence.String() {
			for _, c := range cs {
				j.add(c)
			}
			return
		}
		names = append(names, strings.TrimSuffix(c.ID, ".nvlink"))
		e, _ := c.Expected.(int)
		active, expect = active+c.Measured.(int), expect+e
	}
	c := Check{ID: "gpu.nvlink", Status: Pass, Measured: active, Unit: "links",
		Evidence: i18n.Textf("%s, each: %s", strings.Join(names, ", "), cs[0].Evidence)}
	if expect > 0 {
		c.Expected = expect
	}
	j.add(c)
}

// linkVersion is the NVLink generation of the device's links: the first
// that NVML named ("" where none did).
func linkVersion(d *probe.Device) string {
	for _, l := range d.NVLinks {
		if l.Version != "" {
			return l.Version
		}
	}
	return ""
}

// linkWord names the links' generation and what they end at.
func linkWord(ls []probe.NVLink) i18n.Text {
	remotes := map[string]int{}
	for _, l := range ls {
		if l.Active && l.Remote != "" {
			remotes[l.Remote]++
		}
	}
	var ends []i18n.Text
	for _, r := range []string{"switch", "gpu", "ibmnpu", "unknown"} {
		if n := remotes[r]; n > 0 {
			name := map[string]i18n.Text{"switch": i18n.Textf("an NVSwitch"), "gpu": i18n.Textf("a GPU"), "ibmnpu": i18n.Textf("a CPU"),
				"unknown": i18n.Textf("an unknown device")}[r]
			// Indexed: a message of its own, apart from "%d to %s" days.
			ends = append(ends, i18n.Textf("%[1]d to %[2]s", n, name))
		}
	}
	var version, to i18n.Text
	for _, l := range ls {
		if l.Version != "" {
			version = i18n.Textf(", NVLink %s", l.Version)
			break
		}
	}
	if len(ends) > 0 {
		to = i18n.Textf(" (%s)", i18n.Join(ends, ", "))
	}
	return i18n.Textf("%s%s", version, to)
}

// downWord names the links that are down, and those the GPU should have
// and does not report at all.
func downWord(down []string, have, expect int) i18n.Text {
	var parts []i18n.Text
	if len(down) > 0 {
		parts = append(parts, i18n.Textf("down: link %s", strings.Join(down, ", ")))
	}
	if have < expect {
		parts = append(parts, i18n.Textf("NVML reports %d links where its datasheet's bandwidth makes %d", have, expect))
	}
	return i18n.Textf("; %s", i18n.Join(parts, "; "))
}

// linkErrorWord sums the links' error counters; a link whose CRC errors
// reach limit is named.
func linkErrorWord(ls []probe.NVLink, limit uint64) i18n.Text {
	var total probe.LinkErrors
	var bad []i18n.Text
	for _, l := range ls {
		if l.Errors == nil {
			continue
		}
		e := *l.Errors
		total = total.Plus(e)
		if e.CRC() >= limit {
			bad = append(bad, i18n.Textf("link %d has %d CRC errors", l.Link, e.CRC()))
		}
	}
	if len(bad) == 0 {
		return i18n.Text{}
	}
	return i18n.Textf("%s (all links since the driver loaded: %d CRC flit, %d CRC data, %d replays, %d recoveries)",
		i18n.Join(bad, ", "), total.CRCFlit, total.CRCData, total.Replay, total.Recovery)
}

// fabric judges an NVSwitch board's fabric: until nvidia-fabricmanager has
// registered every GPU, CUDA cannot start on them (error 802, "system not
// yet initialized") and NCCL has no NVLink.
func (j *judge) fabric() {
	var waiting, failed, ok []string
	for _, d := range j.f.GPU.Devices {
		f := d.Fabric
		switch {
		case f == nil || f.State == "not_supported":
		case f.State == "completed" && f.Status == "success":
			ok = append(ok, fmt.Sprintf("gpu%d", d.Index))
		case f.State == "completed":
			failed = append(failed, fmt.Sprintf("gpu%d (%s)", d.Index, f.Status))
		default:
			waiting = append(waiting, fmt.Sprintf("gpu%d (%s)", d.Index, strings.ReplaceAll(f.State, "_", " ")))
		}
	}
	if len(waiting)+len(failed)+len(ok) == 0 {
		return
	}
	c := Check{ID: "gpu.fabric", Status: Pass, Measured: len(ok), Expected: len(ok) + len(waiting) + len(failed), Unit: "GPUs",
		Evidence: i18n.Textf("%d GPUs registered with the NVLink fabric", len(ok))}
	if len(waiting)+len(failed) > 0 {
		c.Status = Fail
		var parts []i18n.Text
		if len(waiting) > 0 {
			parts = append(parts, i18n.Textf("not registered: %s", strings.Join(waiting, ", ")))
		}
		if len(failed) > 0 {
			parts = append(parts, i18n.Textf("registration failed: %s", strings.Join(failed, ", ")))
		}
		c.Evidence = i18n.Join(parts, "; ")
		c.Advice = i18n.Textf("The NVLink fabric of this NVSwitch board is not up: nvidia-fabricmanager is not running, or failed (systemctl status nvidia-fabricmanager; it must match the driver version). Until it is, CUDA programs fail with error 802 (system not yet initialized) and the GPUs cannot use NVLink. Only the provider can start it on the host. %s", i18n.Textf(adviceRefund))
	}
	j.add(c)
}

// p2pHostCauses are NVML's peer-to-peer statuses that the host's setup
// causes, not the cards: a chipset or PCIe topology that blocks it (ACS
// or an IOMMU between the GPUs), or a driver key that turned it off.
var p2pHostCauses = []string{"chipset not supported", "ioh topology not supported", "disabled by regkey"}

// p2p judges peer-to-peer access between each pair: copies and NCCL
// between GPUs without it go through host memory.
func (j *judge) p2p() {
	var host, card []string
	pairs := 0
	for _, p := range j.f.GPU.Pairs {
		if p.P2P == nil {
			continue
		}
		pairs++
		name := fmt.Sprintf("gpu%d-gpu%d", p.A, p.B)
		why := ""
		for _, k := range []string{"read", "write"} {
			if s := p.P2P[k]; s != "" && s != "ok" {
				why = s
			}
		}
		switch {
		case why == "":
		case slices.Contains(p2pHostCauses, why):
			host = append(host, name+" ("+why+")")
		default:
			card = append(card, name+" ("+why+")")
		}
	}
	if pairs == 0 {
		return
	}
	c := Check{ID: "gpu.p2p", Status: Pass, Measured: pairs - len(host) - len(card), Expected: pairs, Unit: "pairs",
		Evidence: i18n.Textf("peer-to-peer read and write ok between all %d pairs", pairs)}
	switch {
	case len(host) > 0:
		c.Status = Warn
		c.Evidence = i18n.Textf("peer-to-peer is off between %s", listSome(i18n.Plains(host), 4))
		c.Advice = i18n.Textf("The host blocks direct GPU-to-GPU copies (PCIe ACS or an IOMMU between the GPUs, or a driver setting): NCCL and CUDA copy through host memory, at a fraction of the speed. A bare-metal host can disable ACS and the IOMMU for the GPUs; on a VM only the provider can. Where NCCL hangs on such a machine, NCCL_P2P_DISABLE=1 is the workaround.")
	case len(card) > 0:
		c.Evidence = i18n.Textf("these cards do not support peer-to-peer (%s): copies between them go through host memory, as NCCL arranges by itself", listSome(i18n.Plains(card), 2))
	}
	j.add(c)
}

// listSome lists the first n of xs and counts the rest.
func listSome(xs []i18n.Text, n int) i18n.Text {
	if len(xs) <= n {
		return i18n.Join(xs, ", ")
	}
	return i18n.Textf("%s and %d more pairs", i18n.Join(xs[:n], ", "), len(xs)-n)
}

// pathLabels are nvidia-smi topo -m's words for NVML's topology levels.
var pathLabels = map[string]string{"internal": "BRD", "single": "PIX", "multiple": "PXB", "hostbridge": "PHB", "node": "NODE", "system": "SYS"}

// LinkLegend says what LinkMatrix's labels mean.
const LinkLegend = "NV#: # NVLinks (direct, or each GPU's through NVSwitch); PIX: one PCIe switch; PXB: several; PHB: a PCIe host bridge; NODE: host bridges of one NUMA node; SYS: across sockets"

// LinkMatrix labels what joins each pair of GPUs, as nvidia-smi topo -m
// does: rows and columns by GPU index, "X" on the diagonal, nil with
// fewer than two GPUs.
func LinkMatrix(g probe.GPUFacts) [][]string {
	n := len(g.Devices)
	if n < 2 || len(g.Pairs) == 0 {
		return nil
	}
	m, pos := gpuGrid(g.Devices)
	for _, p := range g.Pairs {
		a, aok := pos[p.A]
		b, bok := pos[p.B]
		if !aok || !bok {
			continue
		}
		label := pathLabels[p.Path]
		if nv := nvlinksBetween(&g.Devices[a], &g.Devices[b]); nv > 0 {
			label = fmt.Sprintf("NV%d", nv)
		}
		if label == "" {
			label = "?"
		}
		m[a][b], m[b][a] = label, label
	}
	return m
}

// gpuGrid is an empty square of the devices, "X" on the diagonal and "-"
// elsewhere, and each device's row by its index.
func gpuGrid(devs []probe.Device) ([][]string, map[int]int) {
	m := make([][]string, len(devs))
	pos := map[int]int{}
	for i, d := range devs {
		pos[d.Index] = i
		m[i] = make([]string, len(devs))
		for k := range m[i] {
			m[i][k] = "-"
		}
		m[i][i] = "X"
	}
	return m, pos
}

// CopyMatrix is the GPU-to-GPU copy bandwidth in GB/s, row to column
// ("hung" or "failed" where a pair was), nil where none was measured.
func CopyMatrix(f probe.Facts) [][]string {
	if f.Peers == nil || len(f.Peers.Pairs) == 0 {
		return nil
	}
	m, pos := gpuGrid(f.GPU.Devices)
	for _, x := range f.Peers.Pairs {
		a, aok := pos[x.SrcGPU]
		b, bok := pos[x.DstGPU]
		switch {
		case !aok || !bok:
		case x.TimedOut:
			m[a][b] = "hung"
		case x.Error != "":
			m[a][b] = "failed"
		default:
			m[a][b] = fmt.Sprintf("%.1f", x.GBs)
		}
	}
	return m
}

// nvlinksBetween counts the active NVLinks that join a and b: direct
// links either way, or the fewer of their links to an NVSwitch.
func nvlinksBetween(a, b *probe.Device) int {
	direct, sa, sb := 0, 0, 0
	for _, l := range a.NVLinks {
		if l.Active && l.Remote == "switch" {
			sa++
		} else if l.Active && compute.SameBusID(l.RemoteBusID, b.BusID) {
			direct++
		}
	}
	for _, l := range b.NVLinks {
		if l.Active && l.Remote == "switch" {
			sb++
		}
	}
	if direct > 0 {
		return direct
	}
	return min(sa, sb)
}
