package bench

import (
	"fmt"
	"testing"
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
