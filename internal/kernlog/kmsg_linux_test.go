package kernlog

import (
	"errors"
	"testing"
	"time"
)

// This machine's own kernel log, where this process may read it: records
// are read and parsed without error, and times fall between the boot and
// now.
func TestKernelLog(t *testing.T) {
	r, err := Open(DefaultPath)
	if errors.Is(err, ErrUnavailable) {
		t.Skipf("no kernel log this process may read here (%s needs root, or kernel.dmesg_restrict=0, and a container without privileges has none): %v", DefaultPath, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got, err := r.Read()
	if err != nil {
		t.Fatal(err)
	}
	if r.s.records == 0 {
		t.Fatal("no record read from a kernel log this process may read")
	}
	now := time.Now()
	if r.s.boot.After(now) || r.s.log.Since.Before(r.s.boot.Add(-time.Second)) || r.s.log.Since.After(now) {
		t.Errorf("boot %v, since %v, now %v", r.s.boot, r.s.log.Since, now)
	}
	t.Logf("%d records, %d Xid reports, faults %+v, since %v (boot %v)", r.s.records, len(got.Xids), got.Faults, r.s.log.Since, r.s.boot)
}
