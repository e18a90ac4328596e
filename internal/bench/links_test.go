package bench

import (
	"fmt"
	"testing"

	"github.com/gpurent/gpurent/internal/probe"
	"github.com/gpurent/gpurent/internal/specs"
)

// LinkMatrix labels pairs as nvidia-smi topo -m does: NVLinks through
// NVSwitches (the fewer of the two GPUs'), direct bridge links, and the
// PCIe path where there is no NVLink.
func TestLinkMatrix(t *testing.T) {
	for _, c := range []struct {
		name string
		m    [][]string
		want string
	}{
		{"hgx", LinkMatrix(hgx8(nil).GPU), "[[X NV18 NV18 NV18 NV18 NV18 NV18 NV18]]"},
		{"bridged", LinkMatrix(pcie4(true, "ok").GPU), "[[X NV12 SYS SYS] [NV12 X SYS SYS] [SYS SYS X NV12] [SYS SYS NV12 X]]"},
		{"pcie", LinkMatrix(pcie4(false, "ok").GPU), "[[X PIX SYS SYS] [PIX X SYS SYS] [SYS SYS X PIX] [SYS SYS PIX X]]"},
		{"one GPU", LinkMatrix(healthyH100().GPU), "[]"},
	} {
		got := fmt.Sprint(c.m)
		if c.name == "hgx" {
			got = fmt.Sprint(c.m[:1])
		}
		if got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
	f := hgx8(nil)
	f.GPU.Devices[3].NVLinks[7].Active = false
	if m := LinkMatrix(f.GPU); m[3][0] != "NV17" || m[0][3] != "NV17" || m[0][1] != "NV18" {
		t.Errorf("a link down: %v", m)
	}
}

// judgeStatus judges f as an 8×H100 SXM order and returns each check's
// status.
func judgeStatus(t *testing.T, f probe.Facts) map[string]string {
	t.Helper()
	if err := f.Validate(); err != nil {
		t.Fatalf("the facts do not validate: %v", err)
	}
	tab, err := specs.Load()
	if err != nil {
		t.Fatal(err)
	}
	r, err := Judge(f, tab, Order{GPU: "H100 SXM", GPUs: 8}, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, c := range r.Checks {
		out[c.ID] = c.Status
	}
	return out
}

// What a review found passing that should not (each a regression test):
// an all-reduce that fails partway; links whose first has no generation;
// CRC counters that wrap when added; counters reset while bench ran; a
// copy matrix cut short.
func TestLinkJudgementEdges(t *testing.T) {
	f := hgx8(nil)
	f.AllReduce.Error = "the all-reduce of 2 GiB: cuEventQuery: CUDA_ERROR_ILLEGAL_ADDRESS"
	if s := judgeStatus(t, f)["gpu.allreduce"]; s != Fail {
		t.Errorf("an all-reduce failing partway: %s, want fail", s)
	}

	f = hgx8(func(f *probe.Facts) { f.GPU.Devices[6].NVLinks = f.GPU.Devices[6].NVLinks[:12] })
	f.GPU.Devices[6].NVLinks[0].Version = ""
	if s := judgeStatus(t, f)["gpu6.nvlink"]; s != Fail {
		t.Errorf("six links missing, the first link's generation unread: %s, want fail", s)
	}

	f = hgx8(func(f *probe.Facts) {
		f.GPU.Devices[5].NVLinks[2].Errors = &probe.LinkErrors{CRCFlit: ^uint64(0), CRCData: 1}
	})
	if s := judgeStatus(t, f)["gpu5.nvlink"]; s != Warn {
		t.Errorf("CRC counters that wrap when summed: %s, want warn", s)
	}

	f = hgx8(nil)
	f.GPU.Devices[1].NVLinks[3].Errors = &probe.LinkErrors{CRCFlit: 40}
	f.NVLinkErrorsAfter = countersAfter(f)
	for i := range f.NVLinkErrorsAfter {
		if a := &f.NVLinkErrorsAfter[i]; a.GPU == 1 && a.Link == 3 {
			a.CRCFlit, a.Replay = 2, 5 // reset, then a few new
		}
	}
	if s := judgeStatus(t, f)["gpu.nvlink_errors"]; s != Pass {
		t.Errorf("counters reset while bench ran: %s, want pass with a word", s)
	}

	f = hgx8(nil)
	f.Peers.Pairs, f.Peers.Error = f.Peers.Pairs[:3], "stopped: context canceled"
	if s := judgeStatus(t, f)["gpu.p2p_bandwidth"]; s != Warn {
		t.Errorf("a copy matrix cut short: %s, want warn", s)
	}
}
