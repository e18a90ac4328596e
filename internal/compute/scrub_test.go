package compute

import (
	"context"
	"testing"
)

// wipe --gpu's scrub on the simulated driver. A driver that clears memory
// between processes: the residue sample reads zeros and the scrub is
// skipped, unless forced. One that hands out old data: every byte the
// driver will give is allocated, zeroed and read back, within 2 MiB of
// what cuMemGetInfo called free, and nothing reads back non-zero. All of
// it is freed again.
func TestCUDAScrubSimulated(t *testing.T) {
	cfg := simH100ish()
	cfg.TotalMem = 20 << 30
	cu, stats := simDriver(t, cfg)
	s := cu.Scrub(context.Background(), 0, false)
	if s.Error != "" || !s.Skipped || s.Residue.Value != 0 || s.ScrubbedBytes != 0 {
		t.Errorf("a scrubbing driver: %+v", s)
	}
	s = cu.Scrub(context.Background(), 0, true)
	if s.Error != "" || s.Skipped || s.FreeBytes != 19<<30 || s.ScrubbedBytes > s.FreeBytes || s.FreeBytes-s.ScrubbedBytes > 2<<20 || s.NonzeroBytes != 0 {
		t.Errorf("forced: %+v", s)
	}
	cfg.Residue = 4096
	reconfigure(t, cu, cfg)
	s = cu.Scrub(context.Background(), 0, false)
	if s.Error != "" || s.Skipped || s.Residue.Value == 0 || s.FreeBytes-s.ScrubbedBytes > 2<<20 || s.NonzeroBytes != 0 {
		t.Errorf("a driver that leaves old data: %+v", s)
	}
	// 10 GiB of 20 taken by someone else: in use, not scrubbed, unless
	// forced.
	cfg.OtherTenantMem = 10 << 30
	reconfigure(t, cu, cfg)
	if s := cu.Scrub(context.Background(), 0, false); s.Error != "" || !s.InUse || s.ScrubbedBytes != 0 || s.Residue.Probe != "" {
		t.Errorf("in use: %+v", s)
	}
	if s := cu.Scrub(context.Background(), 0, true); s.Error != "" || s.InUse || s.FreeBytes != 10<<30 || s.FreeBytes-s.ScrubbedBytes > 2<<20 {
		t.Errorf("in use, forced: %+v", s)
	}
	if st := stats(); st.LiveAllocs != 0 || st.BadCalls != 0 || st.LiveModules != 0 {
		t.Errorf("driver state after the scrubs: %+v", st)
	}
	// A device that is not there: an error, nothing done.
	if s := cu.Scrub(context.Background(), 3, true); s.Error == "" {
		t.Errorf("device 3 of 1: %+v", s)
	}
}
