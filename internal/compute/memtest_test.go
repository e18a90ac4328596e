package compute

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// The memory test on the simulated driver, worked through. 50 GiB total,
// 1 GiB another tenant's, a 1 GiB margin: setup holds a few KiB, so the
// test gets 48 GiB, 98% of the free memory. A clean card: nothing wrong, and the
// residue read covers every MiB. A driver that leaves 4096 bytes at the
// start of each MiB: the whole-memory residue finds every one of them.
// A weak cell at byte 700 MiB of each GiB piece, bit 5 stuck at 0: every
// pass that expects a 1 there finds it, named by pass, address and bit.
func TestCUDAMemtestSimulated(t *testing.T) {
	cfg := simH100ish()
	cfg.TotalMem = 50 << 30
	clean, stats := simDriver(t, cfg)
	r := clean.Run(context.Background(), Options{Probes: []string{ProbeResidue}, Memtest: true})
	z, mt := r.Find(ProbeResidue), r.Find(ProbeMemtest)
	if z == nil || mt == nil || z.Error != "" || mt.Error != "" || z.Value != 0 || mt.Value != 0 {
		t.Fatalf("a clean card: %+v\n%+v", z, mt)
	}
	if !strings.HasPrefix(z.Notes.String(), "read all 48.00 GiB of fresh allocations (98% of the 49.00 GiB free) before writing them") {
		t.Errorf("residue over all of it: %s", z.Notes)
	}
	if !strings.HasPrefix(mt.Notes.String(), "73 passes over ") || mt.Timing.N != 73 {
		t.Errorf("memtest notes: %s (%d timings)", mt.Notes, mt.Timing.N)
	}
	if st := stats(); st.LiveAllocs != 0 || st.BadCalls != 0 || st.LiveEvents != 0 {
		t.Errorf("driver state after the run: %+v", st)
	}

	cfg.Residue = 4096
	dirty, _ := simDriver(t, cfg)
	r = dirty.Run(context.Background(), Options{Memtest: true, Probes: []string{ProbeResidue}})
	d := r.Find(ProbeResidue)
	var mibs float64
	// Every MiB of the memory tested starts with 4096 bytes of old data.
	if d == nil || d.Error != "" {
		t.Fatalf("dirty residue: %+v", d)
	}
	mibs = d.Value / 4096
	if mibs < 47*1024 || mibs > 48*1024 || !strings.Contains(d.Notes.String(), fmt.Sprintf("%d words held non-zero bytes; the first at 0.00 GiB", int(mibs)*1024)) {
		t.Errorf("dirty residue over all of it: %v bytes, %s", d.Value, d.Notes)
	}
	if m := r.Find(ProbeMemtest); m == nil || m.Value != 0 {
		t.Errorf("old data is residue, not a memory fault: %+v", m)
	}

	cfg.Residue, cfg.FlipAt, cfg.FlipBit = 0, 700<<20+1, 5
	weak, _ := simDriver(t, cfg)
	r = weak.Run(context.Background(), Options{Memtest: true})
	m := r.Find(ProbeMemtest)
	if m == nil || m.Error != "" || m.Value < 47*2 {
		t.Fatalf("a weak cell in each GiB: %+v", m)
	}
	// The first finding: walking one over bit 5, the first piece, word
	// 700 MiB / 4 into it, 0.684 GiB into the memory tested.
	if !strings.Contains(m.Notes.String(), "walking one, bit 5: 1 words wrong at 0x") || !strings.Contains(m.Notes.String(), "(0.684 GiB into the memory tested), bits 0x20") {
		t.Errorf("findings: %s", m.Notes)
	}
	if strings.Contains(m.Notes.String(), "walking one, bit 4:") {
		t.Errorf("bit 4 is healthy: %s", m.Notes)
	}
	if z := r.Find(ProbeResidue); z == nil || z.Value != 0 {
		t.Errorf("a weak cell is no residue: %+v", z)
	}
}
