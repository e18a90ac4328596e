// Package kernlog reads the kernel log for what the hardware said: the
// NVIDIA driver's Xid reports (its word for a GPU fault: 79 when a GPU
// falls off the bus, 48 for an uncorrectable memory error, 13 and 31 when
// a program's kernel fails), and the kernel's own reports of failing
// hardware (machine checks, memory errors, disk I/O errors, PCIe bus
// errors, file system errors). NVML and /proc show some of their aftermath;
// the log says what happened, where and when, including before this
// rental began.
package kernlog

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"strings"
	"time"
)

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
	// Xids are the NVIDIA driver's reports, oldest first (at most
	// MaxXids, the newest).
	Xids []Xid `json:"xids,omitempty"`
	// Faults are the hardware errors the kernel reported, one entry per
	// kind, level and device, in the order each first came.
	Faults []Fault `json:"faults,omitempty"`
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
		if e, ok := ParseXid(r.msg); ok {
			e.At = at
			if len(s.log.Xids) == MaxXids {
				// A program failing in a loop can log an Xid a second.
				s.log.Xids = append(s.log.Xids[:0], s.log.Xids[1:]...)
			}
			s.log.Xids = append(s.log.Xids, e)
		} else if f, ok := ParseFault(r.msg); ok {
			f.First, f.Last = at, at
			s.log.Faults = AddFault(s.log.Faults, f)
		}
	}
}

// MaxXids is how many Xid reports a Log keeps.
const MaxXids = 1000

// ErrUnavailable is what errors.Is finds in the error of a kernel log
// this process may not read: not there, or not allowed.
var ErrUnavailable = errors.New("kernel log unavailable")

// unavailable is such an error, in its own words.
type unavailable string

func (e unavailable) Error() string        { return string(e) }
func (e unavailable) Is(target error) bool { return target == ErrUnavailable }

// Path is the kernel log bench and run read: DefaultPath, or
// $GPURENT_KMSG, a file of records in the same format, for tests.
func Path() string {
	if p := os.Getenv("GPURENT_KMSG"); p != "" {
		return p
	}
	return DefaultPath
}
