package compute

import (
	"context"
	"strings"
	"testing"
	"testing/fstest"
	"time"
	"unsafe"

	"github.com/gpurent/gpurent/internal/dl"
	"github.com/gpurent/gpurent/internal/dl/dltest"
)

// simNCCLConfig mirrors struct config in testdata/fakenccl.c.
type simNCCLConfig struct {
	BusBW             float64
	Hang, Wrong, Init int64
}

// simNCCLStats mirrors struct stats in testdata/fakenccl.c.
type simNCCLStats struct{ LiveComms, BadCalls, Reduces, Aborts int64 }

// simAllReduce runs the all-reduce sweep on the simulated driver (cfg)
// and NCCL (ncfg), with a small sweep.
func simAllReduce(t *testing.T, cfg simConfig, ncfg simNCCLConfig, o AllReduceOptions) (AllReduce, simStats, simNCCLStats) {
	t.Helper()
	cu, stats := simDriver(t, cfg)
	path := dltest.BuildC(t, "testdata/fakenccl.c", "libnccl.so.2")
	lib, err := dl.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer lib.Close()
	cpath := append([]byte(cu.Library), 0)
	lib.Call("fake_nccl_use_cuda_at", uintptr(unsafe.Pointer(&cpath[0])))
	lib.Call("fake_nccl_config", uintptr(unsafe.Pointer(&ncfg)))
	if o.Library == "" {
		o.Library = path
	}
	r := cu.AllReduce(context.Background(), o)
	var ns simNCCLStats
	lib.Call("fake_nccl_stats", uintptr(unsafe.Pointer(&ns)))
	return r, stats(), ns
}

func smallSweep() AllReduceOptions {
	o := DefaultAllReduceOptions()
	o.MaxBytes, o.Timeout, o.Grace = 512<<20, 300*time.Millisecond, time.Second
	return o
}

// Four GPUs: the sum checked on every rank, sizes from 8 MiB by fours,
// bus bandwidth as nccl-tests computes it, and every communicator,
// stream, event and buffer given back.
func TestNCCLAllReduceSimulated(t *testing.T) {
	cfg := simH100ish()
	cfg.Devices = 4
	r, st, ns := simAllReduce(t, cfg, simNCCLConfig{BusBW: 370}, smallSweep())
	if r.Error != "" || r.Hung != "" || r.Ranks != 4 || r.Version != "2.28.3" || !r.Checked || len(r.Sizes) != 4 {
		t.Fatalf("%+v", r)
	}
	for _, s := range r.Sizes {
		// the simulation's 10 µs a call, as a real launch costs
		want := float64(s.Bytes) / (float64(s.Bytes)*1.5/370e9 + 10e-6) / 1e9 * 1.5
		if !near(s.BusGBs, want) || !near(s.AlgGBs*1.5, s.BusGBs) {
			t.Errorf("%d MiB: %+v, want bus %.1f GB/s", s.Bytes>>20, s, want)
		}
	}
	if r.BusGBs != r.Sizes[3].BusGBs {
		t.Errorf("best %.1f, want the largest size's", r.BusGBs)
	}
	if st.BadCalls != 0 || st.LiveAllocs != 0 || st.LiveEvents != 0 || st.CtxRefs != 0 || ns.LiveComms != 0 || ns.BadCalls != 0 || ns.Reduces != 1+4*6 {
		t.Errorf("left behind or refused: driver %+v, nccl %+v", st, ns)
	}

	// One GPU: a clique of one, which proves the binding where there is
	// nothing to measure between GPUs.
	cfg.Devices = 1
	r, _, ns = simAllReduce(t, cfg, simNCCLConfig{BusBW: 370}, smallSweep())
	if r.Ranks != 1 || !r.Checked || r.BusGBs != 0 || len(r.Sizes) == 0 || r.Sizes[0].AlgGBs <= 0 || ns.BadCalls != 0 {
		t.Errorf("one GPU: %+v %+v", r, ns)
	}
}

// The failures: a hung all-reduce is aborted within its timeout with
// nothing waited on; a wrong sum is named; a failed init and a missing
// library say so.
func TestNCCLAllReduceFailures(t *testing.T) {
	cfg := simH100ish()
	cfg.Devices = 4
	// Judged beside a sweep that does not hang, on this machine now: under
	// qemu-user beside the rest of the suite, starting four ranks alone
	// takes seconds.
	start := time.Now()
	simAllReduce(t, cfg, simNCCLConfig{BusBW: 370}, smallSweep())
	whole := time.Since(start)
	start = time.Now()
	r, st, ns := simAllReduce(t, cfg, simNCCLConfig{BusBW: 370, Hang: 1}, smallSweep())
	if took := time.Since(start); took > whole+5*time.Second {
		t.Errorf("took %s, where a sweep that does not hang took %s", took, whole)
	}
	if r.Hung == "" || ns.Aborts != 4 || st.BadCalls != 0 || ns.BadCalls != 0 {
		t.Errorf("hang: %+v, driver %+v, nccl %+v", r, st, ns)
	}
	r, _, _ = simAllReduce(t, cfg, simNCCLConfig{BusBW: 370, Wrong: 1}, smallSweep())
	if r.Checked || !strings.Contains(r.Error, "computed wrong: rank 0's element 0 is 5, not 4") {
		t.Errorf("wrong sum: %+v", r)
	}
	r, _, _ = simAllReduce(t, cfg, simNCCLConfig{BusBW: 370, Init: 2}, smallSweep())
	if !strings.Contains(r.Error, "ncclCommInitAll over 4 GPUs: ncclSystemError (unhandled system error") {
		t.Errorf("init: %+v", r)
	}
	o := smallSweep()
	o.Library = "/nonexistent/libnccl.so.2"
	r, _, _ = simAllReduce(t, cfg, simNCCLConfig{BusBW: 370}, o)
	if !strings.Contains(r.Error, "NCCL (libnccl.so.2) is not on this machine") {
		t.Errorf("no library: %+v", r)
	}
}

// ncclCandidates: the variable first, the soname, then the system's and
// the wheels' copies found under the root.
func TestNCCLCandidates(t *testing.T) {
	root := fstest.MapFS{
		"usr/lib/x86_64-linux-gnu/libnccl.so.2.28.3":                         &fstest.MapFile{},
		"venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2":     &fstest.MapFile{},
		"venv/lib/python3.12/site-packages/nvidia/cublas/lib/libcublasLt.so": &fstest.MapFile{},
	}
	env := map[string]string{"GPURENT_NCCL": "/opt/my/libnccl.so.2", "VIRTUAL_ENV": "/venv"}
	got := ncclCandidates(root, func(k string) string { return env[k] }, nil)
	want := []string{"/opt/my/libnccl.so.2", "libnccl.so.2", "/usr/lib/x86_64-linux-gnu/libnccl.so.2.28.3", "/venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("got %v\nwant %v", got, want)
	}
}
