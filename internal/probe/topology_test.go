package probe

import (
	"context"
	"fmt"
	"testing"
	"unsafe"

	"github.com/gpurent/gpurent/internal/dl"
)

// simTopology builds the simulated NVML with n devices (the default H100,
// each at its own bus) and the links spec describes (fakenvml.c's
// fake_topo), and reads it through the binding.
func simTopology(t *testing.T, n int, spec string, flags ...string) (GPUFacts, simNVMLStats) {
	t.Helper()
	path, stats := simNVML(t, func(c *simNVMLConfig) {
		c.Count = int64(n)
		for i := 1; i < n; i++ {
			c.Dev[i] = c.Dev[0]
			c.Dev[i].Bus = int64((0x3b + 0x23*i) & 0xff)
			c.Dev[i].BusID = [32]byte{}
			copy(c.Dev[i].BusID[:], fmt.Sprintf("00000000:%02X:00.0", c.Dev[i].Bus))
		}
	}, flags...)
	lib, err := dl.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer lib.Close()
	s := append([]byte(spec), 0)
	lib.Call("fake_topo", uintptr(unsafe.Pointer(&s[0])))
	g := GPU(context.Background(), GPUOptions{Library: path})
	if !g.Available || len(g.Devices) != n {
		t.Fatalf("%+v", g)
	}
	return g, stats()
}

// An HGX board: 18 NVLink 4 links a GPU, all to NVSwitches, one down and
// one with CRC errors; every pair's path and P2P status; the fabric
// registered. Nothing is refused, and a one-GPU machine has no pairs.
func TestNVMLTopologyNVSwitch(t *testing.T) {
	g, st := simTopology(t, 8, "nvswitch down=3:7 crc=5:2:4")
	if st.BadCalls != 0 {
		t.Errorf("%d calls refused", st.BadCalls)
	}
	if len(g.Pairs) != 28 {
		t.Fatalf("%d pairs, want 28", len(g.Pairs))
	}
	for _, p := range g.Pairs {
		want := "node"
		if p.A/4 != p.B/4 {
			want = "system"
		}
		if p.Path != want || p.P2P["read"] != "ok" || p.P2P["write"] != "ok" || p.P2P["atomics"] != "ok" || p.P2P["nvlink"] != "ok" || p.Errors != nil {
			t.Errorf("pair %+v, want path %s and p2p ok", p, want)
		}
	}
	for _, d := range g.Devices {
		if len(d.NVLinks) != 18 || d.Fabric == nil || *d.Fabric != (Fabric{State: "completed", Status: "success"}) {
			t.Fatalf("gpu%d: %d links, fabric %+v", d.Index, len(d.NVLinks), d.Fabric)
		}
		for _, l := range d.NVLinks {
			down := d.Index == 3 && l.Link == 7
			if l.Active == down || l.Version != "4.0" {
				t.Errorf("gpu%d link %d: %+v", d.Index, l.Link, l)
			}
			if !down && (l.Remote != "switch" || l.RemoteBusID == "" || l.Errors == nil) {
				t.Errorf("gpu%d link %d: %+v", d.Index, l.Link, l)
			}
			if crc := d.Index == 5 && l.Link == 2; l.Errors != nil && (l.Errors.CRCFlit == 4) != crc {
				t.Errorf("gpu%d link %d errors %+v", d.Index, l.Link, *l.Errors)
			}
		}
		if want := 18 - btoi(d.Index == 3); d.NVLinksActive == nil || *d.NVLinksActive != want {
			t.Errorf("gpu%d: nvlinks_active %v, want %d", d.Index, d.NVLinksActive, want)
		}
	}
	// A 535 driver's fabric call, the first form, says the same.
	g, st = simTopology(t, 2, "nvswitch fabric=2", "-DDRIVER_535_EARLY")
	if f := g.Devices[1].Fabric; st.BadCalls != 0 || f == nil || *f != (Fabric{State: "in_progress"}) {
		t.Errorf("535: fabric %+v, %d calls refused", f, st.BadCalls)
	}
	one, _ := simTopology(t, 1, "nvswitch")
	if one.Pairs != nil || len(one.Devices[0].NVLinks) != 18 {
		t.Errorf("one GPU: pairs %v, %d links", one.Pairs, len(one.Devices[0].NVLinks))
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// PCIe cards joined in pairs by NVLink bridges, with P2P disabled by a
// registry key; and PCIe cards with no NVLink at all.
func TestNVMLTopologyBridgedAndPCIe(t *testing.T) {
	g, st := simTopology(t, 4, "bridged p2p=4")
	if st.BadCalls != 0 {
		t.Errorf("%d calls refused", st.BadCalls)
	}
	for _, d := range g.Devices {
		peer := g.Devices[d.Index^1].BusID
		for _, l := range d.NVLinks {
			if l.Remote != "gpu" || l.RemoteBusID != peer {
				t.Errorf("gpu%d link %d: %+v, want gpu at %s", d.Index, l.Link, l, peer)
			}
		}
		if d.Fabric != nil {
			t.Errorf("gpu%d: fabric %+v on a board without NVSwitch", d.Index, d.Fabric)
		}
	}
	for _, p := range g.Pairs {
		wantNV, wantPath := "not supported", "node"
		if p.A/2 == p.B/2 {
			wantNV, wantPath = "ok", "single"
		} else if p.A/2 != p.B/2 && (p.A < 2) != (p.B < 2) {
			wantPath = "system"
		}
		if p.P2P["read"] != "disabled by regkey" || p.P2P["nvlink"] != wantNV || p.Path != wantPath {
			t.Errorf("pair %+v: want read disabled by regkey, nvlink %s, path %s", p, wantNV, wantPath)
		}
	}
	g, _ = simTopology(t, 2, "pcie")
	for _, d := range g.Devices {
		if d.NVLinks != nil || d.NVLinksActive != nil {
			t.Errorf("gpu%d: %+v on a card with no NVLink", d.Index, d.NVLinks)
		}
	}
	if len(g.Pairs) != 1 || g.Pairs[0].Path != "single" || g.Pairs[0].P2P["nvlink"] != "not supported" {
		t.Errorf("pairs %+v", g.Pairs)
	}
}
