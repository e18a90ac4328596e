// Package xid reads the NVIDIA driver's Xid reports from the kernel log:
// the driver's word for a GPU fault (an Xid 79 when a GPU falls off the
// bus, 48 for an uncorrectable memory error, 13 and 31 when a program's
// kernel fails). NVML shows some of their aftermath (GPU_IS_LOST, ECC
// counts); the log says what happened, on which GPU, to which process and
// when, including what happened before this rental began.
//
// The driver prints each one (src/nvidia/src/kernel/gpu/rc/kernel_rc.c in
// NVIDIA's open kernel modules) as
//
//	NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.
//
// with " GPU-I:nn" and " GPU-CI:nn" inside the parenthesis on a MIG
// instance; older drivers leave out "PCI:" or the pid and name.
package xid

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Event is one Xid report.
type Event struct {
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
func (e Event) String() string {
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
// Event.At is left zero.
func Parse(msg string) (e Event, ok bool) {
	m := line.FindStringSubmatch(strings.TrimRight(msg, "\r\n"))
	if m == nil {
		return e, false
	}
	code, err := strconv.Atoi(m[3])
	if err != nil || code <= 0 {
		return e, false
	}
	e = Event{Code: code, Bus: strings.ToLower(m[1]), MIG: strings.TrimSpace(m[2])}
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

// record is one /dev/kmsg record: "prio,seq,usec,flags[,...];message",
// then continuation lines that begin with a space (the device's
// SUBSYSTEM= and DEVICE=). Only the kernel's own messages count: a record
// written into the log from user space (facility 1 and up) is not the
// driver's.
type record struct {
	seq    uint64
	usec   uint64
	kernel bool
	msg    string
}

func parseRecord(b []byte) (record, bool) {
	head, msg, ok := bytes.Cut(b, []byte{';'})
	if !ok {
		return record{}, false
	}
	f := strings.Split(string(head), ",")
	if len(f) < 3 {
		return record{}, false
	}
	prio, err1 := strconv.ParseUint(f[0], 10, 32)
	seq, err2 := strconv.ParseUint(f[1], 10, 64)
	usec, err3 := strconv.ParseUint(f[2], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return record{}, false
	}
	return record{seq: seq, usec: usec, kernel: prio>>3 == 0, msg: string(msg)}, true
}

// Log is what the kernel log held.
type Log struct {
	// Events are the Xid reports, oldest first.
	Events []Event `json:"xids,omitempty"`
	// Since is the time of the oldest record the log still held: the log
	// is a ring, and on a machine up for long its start is overwritten.
	Since time.Time `json:"since,omitzero"`
	// Boot is when the kernel started: Since is Boot when nothing was lost.
	Boot time.Time `json:"boot,omitzero"`
	// Lost is true when the log no longer reaches back to the boot.
	Lost bool `json:"lost,omitempty"`
}

// scanner turns the bytes read from the kernel log into records, whatever
// size the reads were: /dev/kmsg gives one record a read, a file of
// records (tests) many.
type scanner struct {
	pending []byte
	boot    time.Time
	first   bool
	records int // read, of any kind
	log     Log
}

func (s *scanner) feed(b []byte) {
	s.pending = append(s.pending, b...)
	for {
		i := bytes.IndexByte(s.pending, '\n')
		if i < 0 {
			return
		}
		ln := s.pending[:i]
		s.pending = s.pending[i+1:]
		if len(ln) == 0 || ln[0] == ' ' {
			continue // a continuation line
		}
		r, ok := parseRecord(ln)
		if !ok {
			continue
		}
		s.records++
		at := s.boot.Add(time.Duration(r.usec) * time.Microsecond)
		if !s.first {
			s.first = true
			s.log.Since, s.log.Lost = at, r.seq > 0
		}
		if !r.kernel {
			continue
		}
		if e, ok := Parse(r.msg); ok {
			e.At = at
			s.log.Events = append(s.log.Events, e)
		}
	}
}

// ErrUnavailable is what errors.Is finds in the error of a kernel log
// this process may not read: not there, or not allowed.
var ErrUnavailable = errors.New("kernel log unavailable")

// unavailable is such an error, in its own words.
type unavailable string

func (e unavailable) Error() string        { return string(e) }
func (e unavailable) Is(target error) bool { return target == ErrUnavailable }
