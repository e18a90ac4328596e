package kernlog

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// The driver prints each Xid (src/nvidia/src/kernel/gpu/rc/kernel_rc.c in
// NVIDIA's open kernel modules) as
//
//	NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.
//
// with " GPU-I:nn" and " GPU-CI:nn" inside the parenthesis on a MIG
// instance; older drivers leave out "PCI:" or the pid and name.

// Xid is one Xid report.
type Xid struct {
	Code int `json:"code"`
	// Bus is the GPU's PCI address as the driver prints it ("0000:3b:00":
	// domain, bus, device).
	Bus string `json:"bus"`
	// MIG is the MIG instance named with the address ("GPU-I:01 GPU-CI:00").
	MIG     string `json:"mig,omitempty"`
	PID     int    `json:"pid,omitempty"` // the process's host PID; 0 when the driver did not know it
	Process string `json:"process,omitempty"`
	// Message is the driver's text after the code, pid and name.
	Message string `json:"message"`
	// At is when the kernel logged it, on this machine's clock.
	At time.Time `json:"at"`
}

// String is the event as a line of gpurent's: the code, the GPU, the
// process and the driver's own words.
func (e Xid) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Xid %d on the GPU at PCI %s", e.Code, e.Bus)
	if e.MIG != "" {
		fmt.Fprintf(&b, " (%s)", e.MIG)
	}
	switch {
	case e.PID > 0 && e.Process != "":
		fmt.Fprintf(&b, ", pid %d (%s)", e.PID, e.Process)
	case e.PID > 0:
		fmt.Fprintf(&b, ", pid %d", e.PID)
	}
	if e.Message != "" {
		fmt.Fprintf(&b, ": %q", e.Message)
	}
	return b.String()
}

// line is an Xid report in a kernel log message.
var line = regexp.MustCompile(`NVRM: Xid \((?:PCI:)?([0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})((?: GPU-C?I:\d+)*)\): (\d+),\s*(.*)$`)

// Parse reads an Xid report from one kernel log message (dmesg's text
// with or without its timestamp); ok is false for any other message.
// Xid.At is left zero.
func ParseXid(msg string) (e Xid, ok bool) {
	m := line.FindStringSubmatch(strings.TrimRight(msg, "\r\n"))
	if m == nil {
		return e, false
	}
	code, err := strconv.Atoi(m[3])
	if err != nil || code <= 0 {
		return e, false
	}
	e = Xid{Code: code, Bus: strings.ToLower(m[1]), MIG: strings.TrimSpace(m[2])}
	rest := m[4]
	if v, after, ok := field(rest, "pid="); ok {
		if n, err := strconv.Atoi(strings.Trim(v, "'")); err == nil {
			e.PID = n
		}
		rest = after
		if v, after, ok := field(rest, "name="); ok {
			if v != "<unknown>" {
				e.Process = v
			}
			rest = after
		}
	}
	e.Message = strings.TrimSpace(rest)
	return e, true
}

// field cuts "key=value, " from the front of s.
func field(s, key string) (value, rest string, ok bool) {
	if !strings.HasPrefix(s, key) {
		return "", s, false
	}
	value, rest, found := strings.Cut(s[len(key):], ", ")
	if !found {
		return strings.TrimSuffix(value, ","), "", true
	}
	return value, rest, true
}

// SameGPU says whether an Xid's address is the GPU NVML lists at busID
// ("00000000:3B:00.0"): NVML gives an 8-digit domain and the function, the
// driver's line a 4-digit domain and none.
func SameGPU(busID, xidBus string) bool {
	a, ok1 := busParts(busID)
	b, ok2 := busParts(xidBus)
	return ok1 && ok2 && a == b
}

func busParts(s string) ([3]uint64, bool) {
	var out [3]uint64
	s, _, _ = strings.Cut(strings.TrimSpace(s), ".")
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return out, false
	}
	for i, p := range parts {
		v, err := strconv.ParseUint(p, 16, 32)
		if err != nil {
			return out, false
		}
		out[i] = v
	}
	return out, true
}
