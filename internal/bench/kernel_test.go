package bench

import (
	"strings"
	"testing"

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
		disk := strings.Index(c.Evidence, "12 disk I/O errors on nvme0n1, the disk of /workspace, the first at 2026-11-30 10:00 UTC")
		pcie := strings.Index(c.Evidence, "5 corrected PCIe bus errors on 0000:00:01.0")
		if disk < 0 || pcie < disk || c.Measured != 17 {
			t.Errorf("%+v", c)
		}
		f.Host.FSSource = "/dev/nvme1n1p1"
		r, _ = Judge(f, tab, Order{}, DefaultLimits())
		for _, c := range r.Checks {
			if c.ID == "host.kernel" && strings.Contains(c.Evidence, "the disk of") {
				t.Errorf("another disk named as the data disk: %s", c.Evidence)
			}
		}
		return
	}
	t.Fatal("no host.kernel check")
}
