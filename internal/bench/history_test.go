package bench

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gpurent/gpurent/internal/specs"
)

func TestHistoryAppendAndRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "gpurent", "bench.jsonl")
	if es, skipped, err := ReadHistory(path); err != nil || len(es) != 0 || skipped != 0 {
		t.Fatalf("missing history: %v %d %v", es, skipped, err)
	}
	tab, _ := specs.Load()
	r, err := Judge(healthyH100(), tab, Order{GPU: "H100 SXM"}, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if err := AppendHistory(path, r.Entry()); err != nil {
		t.Fatal(err)
	}
	// A write cut short leaves half a line; the next run appends after it.
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"time": "2026-`)
	f.Close()
	if err := AppendHistory(path, r.Entry()); err != nil {
		t.Fatal(err)
	}
	es, skipped, err := ReadHistory(path)
	if err != nil || skipped != 1 || len(es) != 2 {
		t.Fatalf("entries %d skipped %d err %v", len(es), skipped, err)
	}
	e := es[0]
	if e.Verdict != Pass || e.Expect != "H100 SXM" || len(e.GPUs) != 1 || e.GPUs[0].Name != "NVIDIA H100 80GB HBM3" || e.CPUs != 26 {
		t.Errorf("entry %+v", e)
	}
	t.Setenv("XDG_STATE_HOME", "/state")
	if p, _ := HistoryPath(); p != "/state/gpurent/bench.jsonl" {
		t.Errorf("HistoryPath %s", p)
	}
}
