package probe

import (
	"fmt"
	"unsafe"
)

// The links between a machine's GPUs, as NVML reports them: each GPU's
// NVLinks (state, generation, what is at the other end, error counters),
// each pair's PCIe path and peer-to-peer status, and whether the NVLink
// fabric of an NVSwitch board was brought up. Prototypes, enum values and
// the fabric struct are nvml.h's (checked in nvmlheader_test.go).

const (
	nvmlErrCounterReplay  = 0 // NVML_NVLINK_ERROR_DL_REPLAY
	nvmlErrCounterRecover = 1 // NVML_NVLINK_ERROR_DL_RECOVERY
	nvmlErrCounterCRCFlit = 2 // NVML_NVLINK_ERROR_DL_CRC_FLIT
	nvmlErrCounterCRCData = 3 // NVML_NVLINK_ERROR_DL_CRC_DATA

	nvmlP2PRead    = 0 // NVML_P2P_CAPS_INDEX_READ
	nvmlP2PWrite   = 1 // NVML_P2P_CAPS_INDEX_WRITE
	nvmlP2PNVLink  = 2 // NVML_P2P_CAPS_INDEX_NVLINK
	nvmlP2PAtomics = 3 // NVML_P2P_CAPS_INDEX_ATOMICS

	nvmlFabricInfoV2Version = 0x02000024 // sizeof(nvmlGpuFabricInfo_v2_t)=36 | 2<<24
)

// nvmlGpuFabricInfoV1 is nvmlGpuFabricInfo_t (28 bytes), which
// nvmlDeviceGetGpuFabricInfo fills: the only form 535 drivers have.
type nvmlGpuFabricInfoV1 struct {
	ClusterUUID [16]byte
	Status      int32
	CliqueID    uint32
	State       uint8
	_           [3]byte
}

// nvmlGpuFabricInfoV2 is nvmlGpuFabricInfo_v2_t (36 bytes), which every
// header since 12.x declares (13.x adds a v3 that only appends a field).
type nvmlGpuFabricInfoV2 struct {
	Version     uint32
	ClusterUUID [16]byte
	Status      int32
	CliqueID    uint32
	State       uint8
	_           [3]byte
	HealthMask  uint32
}

// NVLink is one NVLink of a GPU: every link NVML says the GPU has.
type NVLink struct {
	Link   int  `json:"link"`
	Active bool `json:"active"`
	// Version is the NVLink generation, "4.0" on Hopper.
	Version string `json:"version,omitempty"`
	// Remote is what the link ends at: gpu, switch (an NVSwitch), ibmnpu,
	// or unknown; RemoteBusID its PCI address.
	Remote      string `json:"remote,omitempty"`
	RemoteBusID string `json:"remote_bus_id,omitempty"`
	// The data link's error counters since the driver loaded.
	Errors *LinkErrors `json:"errors,omitempty"`
}

// LinkErrors are an NVLink's error counters: replays and recoveries of the
// data link, and flits and data that arrived with a bad CRC.
type LinkErrors struct {
	Replay   uint64 `json:"replay"`
	Recovery uint64 `json:"recovery"`
	CRCFlit  uint64 `json:"crc_flit"`
	CRCData  uint64 `json:"crc_data"`
}

// CRC is the CRC errors, flits and data, summed without wrapping.
func (e LinkErrors) CRC() uint64 { return addSat(e.CRCFlit, e.CRCData) }

// Rose says whether any counter of after is above e's, and fell whether
// any is below (the counters were reset between the readings).
func (e LinkErrors) Rose(after LinkErrors) (rose, fell bool) {
	for _, p := range [][2]uint64{{e.Replay, after.Replay}, {e.Recovery, after.Recovery}, {e.CRCFlit, after.CRCFlit}, {e.CRCData, after.CRCData}} {
		rose = rose || p[1] > p[0]
		fell = fell || p[1] < p[0]
	}
	return rose, fell
}

// Plus is e and o counter by counter, without wrapping.
func (e LinkErrors) Plus(o LinkErrors) LinkErrors {
	return LinkErrors{addSat(e.Replay, o.Replay), addSat(e.Recovery, o.Recovery), addSat(e.CRCFlit, o.CRCFlit), addSat(e.CRCData, o.CRCData)}
}

// addSat adds without wrapping: a counter near 2^64 stays huge.
func addSat(a, b uint64) uint64 {
	if a+b < a {
		return ^uint64(0)
	}
	return a + b
}

// Fabric is the state of a GPU's registration with the NVLink fabric,
// which nvidia-fabricmanager completes on NVSwitch boards.
type Fabric struct {
	// State: not_supported, not_started, in_progress or completed.
	State string `json:"state"`
	// Status is NVML's word for how a completed registration ended:
	// success, or the error.
	Status string `json:"status,omitempty"`
}

// GPUPair is what joins two GPUs besides their NVLinks.
type GPUPair struct {
	A int `json:"a"`
	B int `json:"b"`
	// Path is the closest PCIe ancestor they share, NVML's topology level:
	// internal (one board), single (one PCIe switch, PIX), multiple
	// (several switches, PXB), hostbridge (PHB), node (one NUMA node,
	// NODE), system (across sockets, SYS).
	Path string `json:"path,omitempty"`
	// P2P is NVML's peer-to-peer status for read, write, atomics and
	// nvlink: ok, or why not.
	P2P map[string]string `json:"p2p,omitempty"`
	// Errors are the reads that failed, by what was read.
	Errors map[string]string `json:"errors,omitempty"`
}

// topologyLevel names nvmlGpuTopologyLevel_t.
func topologyLevel(v uint32) string {
	switch v {
	case 0:
		return "internal"
	case 10:
		return "single"
	case 20:
		return "multiple"
	case 30:
		return "hostbridge"
	case 40:
		return "node"
	case 50:
		return "system"
	}
	return fmt.Sprintf("level %d", v)
}

// p2pStatusName names nvmlGpuP2PStatus_t.
func p2pStatusName(v uint32) string {
	switch v {
	case 0:
		return "ok"
	case 1:
		return "chipset not supported"
	case 2:
		return "gpu not supported"
	case 3:
		return "ioh topology not supported"
	case 4:
		return "disabled by regkey"
	case 5:
		return "not supported"
	}
	return "unknown"
}

// nvlinkVersionName names nvmlNvlinkVersion_t.
func nvlinkVersionName(v uint32) string {
	names := []string{"", "1.0", "2.0", "2.2", "3.0", "3.1", "4.0", "5.0", "6.0"}
	if int(v) < len(names) {
		return names[v]
	}
	return fmt.Sprintf("version %d", v)
}

// remoteTypeName names nvmlIntNvLinkDeviceType_t.
func remoteTypeName(v uint32) string {
	switch v {
	case 0:
		return "gpu"
	case 1:
		return "ibmnpu"
	case 2:
		return "switch"
	}
	return "unknown"
}

// fabricStateName names NVML_GPU_FABRIC_STATE_*.
func fabricStateName(v uint8) string {
	switch v {
	case 0:
		return "not_supported"
	case 1:
		return "not_started"
	case 2:
		return "in_progress"
	case 3:
		return "completed"
	}
	return fmt.Sprintf("state %d", v)
}

// nvlinks reads every link the GPU has (NVML answers NOT_SUPPORTED or
// INVALID_ARGUMENT for a link number it has not). A link that is down is
// listed with Active false; its other fields are what NVML still says.
func (n *NVML) nvlinks(h uintptr, d *Device) {
	for link := uintptr(0); link < nvmlNVLinkMaxLinks; link++ {
		var state uint32
		r, err := n.call("nvmlDeviceGetNvLinkState", h, link, uintptr(unsafe.Pointer(&state)))
		if err != nil {
			d.Errors["nvlink"] = err.Error()
			return
		}
		if r != nvmlSuccess {
			continue
		}
		l := NVLink{Link: int(link), Active: state == nvmlEnabled}
		var v uint32
		if r, err := n.call("nvmlDeviceGetNvLinkVersion", h, link, uintptr(unsafe.Pointer(&v))); err == nil && r == nvmlSuccess {
			l.Version = nvlinkVersionName(v)
		}
		if l.Active {
			var t uint32
			if r, err := n.call("nvmlDeviceGetNvLinkRemoteDeviceType", h, link, uintptr(unsafe.Pointer(&t))); err == nil && r == nvmlSuccess {
				l.Remote = remoteTypeName(t)
			}
			pci := new(nvmlPciInfo)
			if r, err := n.call("nvmlDeviceGetNvLinkRemotePciInfo_v2", h, link, uintptr(unsafe.Pointer(pci))); err == nil && r == nvmlSuccess {
				l.RemoteBusID = cstring(pci.BusID[:])
			}
		}
		l.Errors = n.linkErrors(h, link)
		d.NVLinks = append(d.NVLinks, l)
	}
}

// linkErrors reads one link's error counters; nil when NVML cannot.
func (n *NVML) linkErrors(h, link uintptr) *LinkErrors {
	e := new(LinkErrors)
	for _, c := range []struct {
		counter uintptr
		dst     *uint64
	}{{nvmlErrCounterReplay, &e.Replay}, {nvmlErrCounterRecover, &e.Recovery}, {nvmlErrCounterCRCFlit, &e.CRCFlit}, {nvmlErrCounterCRCData, &e.CRCData}} {
		r, err := n.call("nvmlDeviceGetNvLinkErrorCounter", h, link, c.counter, uintptr(unsafe.Pointer(c.dst)))
		if err != nil || r != nvmlSuccess {
			return nil
		}
	}
	return e
}

// fabric reads the GPU's NVLink fabric registration: the versioned call
// where the driver has it, else the 535 drivers' first form; nil where
// the driver has neither or the GPU no fabric.
func (n *NVML) fabric(h uintptr, d *Device) {
	var state uint8
	var status int32
	info := &nvmlGpuFabricInfoV2{Version: nvmlFabricInfoV2Version}
	r, err := n.call("nvmlDeviceGetGpuFabricInfoV", h, uintptr(unsafe.Pointer(info)))
	if err == nil {
		state, status = info.State, info.Status
	} else {
		v1 := new(nvmlGpuFabricInfoV1)
		if r, err = n.call("nvmlDeviceGetGpuFabricInfo", h, uintptr(unsafe.Pointer(v1))); err != nil {
			return
		}
		state, status = v1.State, v1.Status
	}
	switch {
	case r == nvmlErrNotSupported:
		return
	case r != nvmlSuccess:
		d.Errors["fabric"] = nvmlErrorName(r)
		return
	case state == 0: // NVML_GPU_FABRIC_STATE_NOT_SUPPORTED
		return
	}
	f := &Fabric{State: fabricStateName(state)}
	if state == 3 {
		f.Status = "success"
		if status != nvmlSuccess {
			f.Status = nvmlErrorName(status)
		}
	}
	d.Fabric = f
}

// pairs reads what joins each pair of GPUs (handles by NVML index; 0 for
// a GPU whose handle could not be had).
func (n *NVML) pairs(handles []uintptr) []GPUPair {
	var out []GPUPair
	for a := range handles {
		for b := a + 1; b < len(handles); b++ {
			if handles[a] == 0 || handles[b] == 0 {
				continue
			}
			p := GPUPair{A: a, B: b, Errors: map[string]string{}}
			var level uint32
			r, err := n.call("nvmlDeviceGetTopologyCommonAncestor", handles[a], handles[b], uintptr(unsafe.Pointer(&level)))
			if err == nil && r == nvmlSuccess {
				p.Path = topologyLevel(level)
			} else {
				p.Errors["path"] = errText(r, err)
			}
			for _, c := range []struct {
				name string
				idx  uintptr
			}{{"read", nvmlP2PRead}, {"write", nvmlP2PWrite}, {"atomics", nvmlP2PAtomics}, {"nvlink", nvmlP2PNVLink}} {
				var s uint32
				r, err := n.call("nvmlDeviceGetP2PStatus", handles[a], handles[b], c.idx, uintptr(unsafe.Pointer(&s)))
				if err != nil || r != nvmlSuccess {
					p.Errors["p2p_"+c.name] = errText(r, err)
					continue
				}
				if p.P2P == nil {
					p.P2P = map[string]string{}
				}
				p.P2P[c.name] = p2pStatusName(s)
			}
			if len(p.Errors) == 0 {
				p.Errors = nil
			}
			out = append(out, p)
		}
	}
	return out
}

// LinkCount is one NVLink's error counters at a moment.
type LinkCount struct {
	GPU  int `json:"gpu"`
	Link int `json:"link"`
	LinkErrors
}

// NVLinkErrors reads every GPU's NVLink error counters now (library as
// OpenNVML takes it): bench reads them again after its load, to see
// whether they rose under it. nil where NVML cannot be opened.
func NVLinkErrors(library string) []LinkCount {
	n, err := OpenNVML(library)
	if err != nil {
		return nil
	}
	defer n.Close()
	var count uint32
	if r, err := n.call("nvmlDeviceGetCount_v2", uintptr(unsafe.Pointer(&count))); err != nil || r != nvmlSuccess {
		return nil
	}
	var out []LinkCount
	for i := range int(count) {
		var h uintptr
		if r, err := n.call("nvmlDeviceGetHandleByIndex_v2", uintptr(i), uintptr(unsafe.Pointer(&h))); err != nil || r != nvmlSuccess {
			continue
		}
		for link := uintptr(0); link < nvmlNVLinkMaxLinks; link++ {
			var state uint32
			if r, err := n.call("nvmlDeviceGetNvLinkState", h, link, uintptr(unsafe.Pointer(&state))); err != nil || r != nvmlSuccess {
				continue
			}
			if e := n.linkErrors(h, link); e != nil {
				out = append(out, LinkCount{GPU: i, Link: int(link), LinkErrors: *e})
			}
		}
	}
	return out
}
