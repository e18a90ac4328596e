package probe

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeSysfs builds a sysfs tree under a temporary root: devices at their
// PCI paths, bus/pci/devices links to them, class/<class>/<name>/device
// links for the NICs.
func fakeSysfs(t *testing.T, devices map[string]string, classes map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for fn, path := range devices { // fn: "0000:3b:00.0", path: "pci0000:00/0000:00:01.0/.../0000:3b:00.0 numa"
		p, numa, _ := strings.Cut(path, " ")
		dir := filepath.Join(root, "devices", p)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, "numa_node"), []byte(numa+"\n"), 0o644)
		os.MkdirAll(filepath.Join(root, "bus/pci/devices"), 0o755)
		if err := os.Symlink(dir, filepath.Join(root, "bus/pci/devices", fn)); err != nil {
			t.Fatal(err)
		}
	}
	for name, target := range classes { // name: "infiniband/mlx5_0", target: a path under devices
		dir := filepath.Join(root, "class", name)
		os.MkdirAll(dir, 0o755)
		if err := os.Symlink(filepath.Join(root, "devices", target), filepath.Join(dir, "device")); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// Two GPUs behind one switch with an RDMA NIC, a third on the same socket's
// other root port, a fourth across sockets; the NIC's RDMA and network
// names are one adapter; a virtio NIC is found at its PCI function.
func TestNICs(t *testing.T) {
	sw := "pci0000:00/0000:00:01.0/0000:01:00.0"
	root := fakeSysfs(t, map[string]string{
		"0000:03:00.0": sw + "/0000:02:00.0/0000:03:00.0 0",
		"0000:05:00.0": sw + "/0000:02:01.0/0000:05:00.0 0",
		"0000:04:00.0": sw + "/0000:02:02.0/0000:04:00.0 0",
		"0000:41:00.0": "pci0000:40/0000:40:01.0/0000:41:00.0 0",
		"0000:c1:00.0": "pci0000:c0/0000:c0:01.0/0000:c1:00.0 1",
		"0000:00:05.0": "pci0000:00/0000:00:05.0 0",
	}, map[string]string{
		"infiniband/mlx5_0": sw + "/0000:02:02.0/0000:04:00.0",
		"net/ibp4s0":        sw + "/0000:02:02.0/0000:04:00.0",
		"net/eth0":          "pci0000:00/0000:00:05.0/virtio0",
	})
	os.MkdirAll(filepath.Join(root, "devices/pci0000:00/0000:00:05.0/virtio0"), 0o755)
	os.MkdirAll(filepath.Join(root, "class/net/lo"), 0o755) // no device: left out
	gpus := []Device{{BusID: "00000000:03:00.0"}, {BusID: "00000000:05:00.0"}, {BusID: "00000000:41:00.0"}, {BusID: "00000000:C1:00.0"}, {}}
	nics := NICs(root, gpus)
	if len(nics) != 2 {
		t.Fatalf("%+v", nics)
	}
	ib, eth := nics[0], nics[1]
	if ib.Name != "mlx5_0" || !ib.RDMA || ib.BusID != "0000:04:00.0" || strings.Join(ib.Interfaces, ",") != "ibp4s0" {
		t.Errorf("rdma nic: %+v", ib)
	}
	if got := strings.Join(ib.Paths, " "); got != "PIX PIX NODE SYS " {
		t.Errorf("mlx5_0's paths: %q, want PIX PIX NODE SYS and none for the GPU with no address", got)
	}
	if eth.Name != "eth0" || eth.RDMA || eth.BusID != "0000:00:05.0" || strings.Join(eth.Paths, " ") != "PHB PHB NODE SYS " {
		t.Errorf("virtio nic: %+v", eth)
	}
	if NICs(t.TempDir(), gpus) != nil {
		t.Error("no sysfs: want no NICs")
	}
}
