package probe

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// NVML knows the GPUs' places in the PCIe tree but not the network
// adapters'; a GPU's traffic to another machine crosses from it to its
// NIC, and GPUDirect RDMA is only fast where the two share a PCIe switch.
// So the NICs' places are read where the kernel shows them, in sysfs, and
// compared with the GPUs' as nvidia-smi topo -m does.

// NIC is a network adapter (one PCI function) and its path to each GPU.
type NIC struct {
	// Name is the RDMA device's name (mlx5_0) where it has one, else the
	// network interface's; Interfaces are its network interfaces.
	Name       string   `json:"name"`
	RDMA       bool     `json:"rdma"`
	Interfaces []string `json:"interfaces,omitempty"`
	BusID      string   `json:"bus_id"`
	// Paths are, GPU by GPU in the order of gpu.devices, the closest
	// place they share: PIX (one PCIe switch), PXB (several), PHB (a host
	// bridge), NODE (one NUMA node), SYS (across sockets), or "" where the
	// GPU's place is unknown.
	Paths []string `json:"paths"`
}

// pciPlace is a PCI function's path from its root complex, and its NUMA
// node (-1 unknown).
type pciPlace struct {
	path []string
	numa int
}

// place reads where the PCI function behind link (a sysfs symlink to it)
// sits.
func place(link string) (pciPlace, bool) {
	real, err := filepath.EvalSymlinks(link)
	if err != nil {
		return pciPlace{}, false
	}
	_, after, ok := strings.Cut(filepath.ToSlash(real), "/devices/")
	if !ok {
		return pciPlace{}, false
	}
	p := pciPlace{path: strings.Split(after, "/"), numa: -1}
	if b, err := os.ReadFile(filepath.Join(real, "numa_node")); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			p.numa = n
		}
	}
	return p, true
}

// pathBetween names the closest place two PCI functions share.
func pathBetween(a, b pciPlace) string {
	if len(a.path) == 0 || len(b.path) == 0 {
		return ""
	}
	if a.path[0] != b.path[0] {
		if a.numa >= 0 && a.numa == b.numa {
			return "NODE"
		}
		return "SYS"
	}
	c := 0
	for c < len(a.path) && c < len(b.path) && a.path[c] == b.path[c] {
		c++
	}
	switch {
	case c <= 1:
		return "PHB" // only the host bridge
	case c >= 3 && len(a.path)-c <= 2 && len(b.path)-c <= 2:
		return "PIX" // below one switch's ports
	}
	return "PXB"
}

// sysfsBusID turns NVML's "00000000:3B:00.0" into sysfs's "0000:3b:00.0".
func sysfsBusID(id string) string {
	id = strings.ToLower(id)
	if dom, rest, ok := strings.Cut(id, ":"); ok && len(dom) == 8 {
		id = dom[4:] + ":" + rest
	}
	return id
}

// pciAddr is a PCI function's sysfs name, 0000:3b:00.0.
var pciAddr = regexp.MustCompile(`^[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$`)

// NICs lists the network adapters under sys (/sys) and each one's path to
// each GPU; nil where there are none or sysfs shows none.
func NICs(sys string, gpus []Device) []NIC {
	gpuPlaces := make([]pciPlace, len(gpus))
	known := make([]bool, len(gpus))
	for i, d := range gpus {
		if d.BusID != "" {
			gpuPlaces[i], known[i] = place(filepath.Join(sys, "bus/pci/devices", sysfsBusID(d.BusID)))
		}
	}
	byFunc := map[string]*NIC{}
	places := map[string]pciPlace{}
	var order []string
	add := func(class, name string, rdma bool) {
		link := filepath.Join(sys, "class", class, name, "device")
		real, err := filepath.EvalSymlinks(link)
		if err != nil {
			return // a virtual interface: no device at all
		}
		for !pciAddr.MatchString(filepath.Base(real)) { // virtio0 sits below its PCI function
			if parent := filepath.Dir(real); parent != real && strings.Contains(parent, "/devices/") {
				real = parent
				continue
			}
			return
		}
		link = real
		fn := filepath.Base(real)
		n, ok := byFunc[fn]
		if !ok {
			p, ok := place(link)
			if !ok {
				return
			}
			n = &NIC{Name: name, BusID: fn}
			byFunc[fn], places[fn] = n, p
			order = append(order, fn)
		}
		if rdma {
			n.Name, n.RDMA = name, true
		} else {
			n.Interfaces = append(n.Interfaces, name)
		}
	}
	for _, class := range []string{"infiniband", "net"} {
		entries, _ := os.ReadDir(filepath.Join(sys, "class", class))
		for _, e := range entries {
			add(class, e.Name(), class == "infiniband")
		}
	}
	var out []NIC
	for _, fn := range order {
		n := byFunc[fn]
		n.Paths = make([]string, len(gpus))
		for i := range gpus {
			if known[i] {
				n.Paths[i] = pathBetween(gpuPlaces[i], places[fn])
			}
		}
		slices.Sort(n.Interfaces)
		out = append(out, *n)
	}
	return out
}
