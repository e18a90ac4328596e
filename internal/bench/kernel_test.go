package bench

import (
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/kernlog"
	"github.com/gpurent/gpurent/internal/probe"
	"github.com/gpurent/gpurent/internal/specs"
)

// host.kernel says which failing disk holds the data directory, and
// lists the worst first.
func TestKernelFaultsNameTheDataDisk(t *testing.T) {
	tab, _ := specs.Load()
	var f probe.Facts
	for _, fx := range fixtures() {
		if fx.name == "disk-io-errors-on-the-data-disk" {
			f = fx.facts()
		}
	}
	r, err := Judge(f, tab, Order{}, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range r.Checks {
		if c.ID != "host.kernel" {
			continue
		}
		disk := strings.Index(c.Evidence.String(), "12 disk I/O errors on nvme0n1, the disk of /workspace, the first at 2026-11-30 10:00 UTC")
		pcie := strings.Index(c.Evidence.String(), "5 corrected PCIe bus errors on 0000:00:01.0")
		if disk < 0 || pcie < disk || c.Measured != 17 {
			t.Errorf("%+v", c)
		}
		f.Host.FSSource = "/dev/nvme1n1p1"
		r, _ = Judge(f, tab, Order{}, DefaultLimits())
		for _, c := range r.Checks {
			if c.ID == "host.kernel" && strings.Contains(c.Evidence.String(), "the disk of") {
				t.Errorf("another disk named as the data disk: %s", c.Evidence.String())
			}
		}
		return
	}
	t.Fatal("no host.kernel check")
}

// Where the kernel log cannot be read, gpu.xid says what NVML's events saw
// while bench measured, and stays a skip when they saw nothing: a quiet
// few seconds are not the machine's history.
func TestXidEventsWithoutTheKernelLog(t *testing.T) {
	tab, _ := specs.Load()
	unread := "the kernel log cannot be read: no /dev/kmsg (a container without it); the GPUs' fault history (Xid) since boot is not checked"
	for _, c := range []struct {
		ev   *probe.XidEvents
		want map[string]string // check id: its status and evidence
	}{
		{nil, map[string]string{"gpu.xid": "skip " + unread}},
		{&probe.XidEvents{Error: "no GPU reports Xid events through NVML (GPU 0: NOT_SUPPORTED)"},
			map[string]string{"gpu.xid": "skip " + unread + ", nor the bench's own time (NVML: no GPU reports Xid events through NVML (GPU 0: NOT_SUPPORTED))"}},
		{&probe.XidEvents{Seconds: 11.6, Xids: []kernlog.Xid{}},
			map[string]string{"gpu.xid": "skip " + unread + "; no Xid from NVML's events while this bench measured (12s)"}},
		// A program's MMU fault on the listed GPU passes, named; an Xid 79
		// on a GPU NVML no longer lists fails.
		{&probe.XidEvents{Seconds: 3, Xids: []kernlog.Xid{{Code: 31, Bus: "0000:18:00", At: time.Date(2026, 11, 30, 12, 0, 1, 0, time.UTC)},
			{Code: 79, Bus: "0000:2a:00", At: time.Date(2026, 11, 30, 12, 0, 2, 0, time.UTC)}}},
			map[string]string{
				"gpu0.xid": "pass 1 Xid report from NVML's events while this bench measured (3s): Xid 31 on the GPU at PCI 0000:18:00 (at 2026-11-30 12:00 UTC)",
				"gpu.xid":  "fail 1 Xid report from NVML's events while this bench measured (3s): Xid 79 on the GPU at PCI 0000:2a:00 (at 2026-11-30 12:00 UTC); on a GPU NVML does not list here",
			}},
	} {
		f := healthyH100()
		f.KernelLog = &probe.KernelLog{Error: "the kernel log cannot be read: no /dev/kmsg (a container without it)"}
		f.XidEvents = c.ev
		r, err := Judge(f, tab, Order{}, DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, ch := range r.Checks {
			if strings.HasSuffix(ch.ID, ".xid") {
				got[ch.ID] = string(ch.Status) + " " + ch.Evidence.String()
			}
		}
		if len(got) != len(c.want) {
			t.Errorf("%+v: checks %q, want %q", c.ev, got, c.want)
		}
		for id, want := range c.want {
			if !strings.HasPrefix(got[id], want) {
				t.Errorf("%+v: %s = %q, want it to begin %q", c.ev, id, got[id], want)
			}
		}
	}
}
