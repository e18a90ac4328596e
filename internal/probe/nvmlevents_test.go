package probe

import (
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/dl"
	"github.com/gpurent/gpurent/internal/kernlog"
)

// The simulated NVML's two H100s (GPU 1 at bus 5E) deliver the Xids queued
// in it: each arrives through WatchXids and Next with its code, the GPU's
// address in the kernel log's form and the MIG instance where it has one;
// a wait with nothing queued times out without an error, and the set is
// freed by Close, with no call the simulation refuses.
func TestNVMLSimulatedXidEvents(t *testing.T) {
	path, stats := simNVML(t, func(c *simNVMLConfig) {
		c.Count, c.Dev[1] = 2, c.Dev[0]
		copy(c.Dev[1].BusID[:], "00000000:5E:00.0\x00")
		c.Dev[1].Bus = 0x5e
	})
	sim, err := dl.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	n, err := OpenNVML(path)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	w, err := n.WatchXids()
	if err != nil {
		t.Fatal(err)
	}
	if w.GPUs != 2 || len(w.Skipped) != 0 {
		t.Errorf("watching %d GPUs, skipped %v; want 2, none", w.GPUs, w.Skipped)
	}
	if e, ok, err := w.Next(20 * time.Millisecond); ok || err != nil {
		t.Errorf("nothing queued: %+v, %v, %v", e, ok, err)
	}
	noInstance := uintptr(0xFFFFFFFF)
	sim.Call("fake_xid", 1, 79, 0, noInstance, noInstance)
	sim.Call("fake_xid", 0, 31, 0, 1, 0)
	sim.Call("fake_xid", 0, 13, 0, 2, noInstance)
	want := []kernlog.Xid{{Code: 79, Bus: "0000:5e:00"}, {Code: 31, Bus: "0000:3b:00", MIG: "GPU-I:01 GPU-CI:00"}, {Code: 13, Bus: "0000:3b:00", MIG: "GPU-I:02"}}
	for _, wantE := range want {
		before := time.Now()
		e, ok, err := w.Next(time.Second)
		if !ok || err != nil || e.Code != wantE.Code || e.Bus != wantE.Bus || e.MIG != wantE.MIG || e.At.Before(before) {
			t.Errorf("Next = %+v, %v, %v; want %+v", e, ok, err, wantE)
		}
	}
	start := time.Now()
	if e, ok, err := w.Next(50 * time.Millisecond); ok || err != nil || time.Since(start) < 40*time.Millisecond {
		t.Errorf("after the queue: %+v, %v, %v in %v; want a 50 ms time-out", e, ok, err, time.Since(start))
	}
	w.Close()
	w.Close() // a second Close frees nothing twice
	if s := stats(); s.BadCalls != 0 || s.EventSets != 0 {
		t.Errorf("simulated NVML: %+v", s)
	}
}

// Where no GPU can report Xids through events (a vGPU guest, say),
// WatchXids fails saying so for each GPU, and leaves no set behind.
func TestNVMLSimulatedNoXidEvents(t *testing.T) {
	path, stats := simNVML(t, nil)
	sim, err := dl.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	sim.Call("fake_xid_events", 0)
	defer sim.Call("fake_xid_events", 1)
	n, err := OpenNVML(path)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	w, err := n.WatchXids()
	if err == nil || !strings.Contains(err.Error(), "no GPU reports Xid events through NVML (GPU 0: no Xid events (supported event types 0x6))") {
		t.Errorf("WatchXids = %v, %v", w, err)
	}
	if s := stats(); s.BadCalls != 0 || s.EventSets != 0 {
		t.Errorf("simulated NVML: %+v", s)
	}
}
