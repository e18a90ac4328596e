package bench

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gpurent/gpurent/internal/probe"
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

// The headline figures are fields with snake_case keys (issue #38: a map
// keyed by check id, "host.steal"), and lines written with the map still
// read: the history outlives the version that wrote it.
func TestHistoryMeasureFields(t *testing.T) {
	tab, _ := specs.Load()
	r, err := Judge(healthyH100(), tab, Order{GPU: "H100 SXM"}, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	m := r.Entry().Measure
	if m.StealPct == nil || m.DiskMBs == nil || m.GPU0PowerLimitW == nil || m.GPU0UtilizationPct == nil || m.GPU0PCIe == "" {
		t.Fatalf("a headline figure of a healthy H100 is missing: %+v", m)
	}
	b, err := json.Marshal(r.Entry())
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Measured map[string]any `json:"measured"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	keys := slices.Sorted(maps.Keys(doc.Measured))
	if want := []string{"disk_mb_s", "gpu0_pcie", "gpu0_power_limit_w", "gpu0_utilization_pct", "steal_pct"}; !slices.Equal(keys, want) {
		t.Errorf("keys %q, want %q", keys, want)
	}
	var old HistoryEntry
	line := `{"time":"2026-12-01T10:00:00Z","verdict":"pass","gpus":[],"cpus":2,"failed":[],"warned":[],"measured":{"host.disk":900.5,"host.steal":1.5,"gpu0.power_limit":700,"gpu0.utilization":0,"gpu0.pcie":"Gen5 x16"}}`
	if err := json.Unmarshal([]byte(line), &old); err != nil {
		t.Fatal(err)
	}
	o := old.Measure
	if o.DiskMBs == nil || *o.DiskMBs != 900.5 || o.StealPct == nil || *o.StealPct != 1.5 || o.GPU0PowerLimitW == nil || *o.GPU0PowerLimitW != 700 ||
		o.GPU0UtilizationPct == nil || *o.GPU0UtilizationPct != 0 || o.GPU0PCIe != "Gen5 x16" {
		t.Errorf("an older line read as %+v", o)
	}
	// A figure of an unexpected kind is dropped, the run kept.
	var odd HistoryEntry
	if err := json.Unmarshal([]byte(`{"verdict":"pass","measured":{"host.disk":"n/a","host.steal":2,"gpu0.pcie":5}}`), &odd); err != nil ||
		odd.Measure.DiskMBs != nil || odd.Measure.StealPct == nil || *odd.Measure.StealPct != 2 || odd.Measure.GPU0PCIe != "" {
		t.Errorf("a line with odd figures: %v, %+v", err, odd.Measure)
	}
}

// TestHistorySpeeds: a run keeps the model bench identified and the GEMM
// and copy figures whose checks passed; a GEMM at a fifth of the
// datasheet (a warn) is not kept, so it cannot rate the model; Speeds
// takes the median of what was kept, and a damaged line's figure is
// dropped.
func TestHistorySpeeds(t *testing.T) {
	tab, _ := specs.Load()
	judge := func(f probe.Facts) HistoryEntry {
		r, err := Judge(f, tab, Order{GPU: "H100 SXM"}, DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		return r.Entry()
	}
	good := judge(probedGEMM(healthyH100(), launches(2000, 0), 77.6, 692))
	g := good.GPUs[0]
	if g.Model != "H100 SXM5" || g.BF16TFLOPS == nil || *g.BF16TFLOPS != 692 || g.MemoryGBs == nil || *g.MemoryGBs != 2915 {
		t.Fatalf("kept %+v", g)
	}
	slow := judge(probedGEMM(healthyH100(), launches(2000, 0), 77.6, 190))
	if slow.GPUs[0].BF16TFLOPS != nil {
		t.Fatalf("a GEMM that warned was kept: %v", *slow.GPUs[0].BF16TFLOPS)
	}
	other := judge(probedGEMM(healthyH100(), launches(2000, 0), 77.6, 700))
	damaged := other
	damaged.GPUs = []HistoryGPU{{Model: "H100 SXM5", BF16TFLOPS: ptr(1e300)}}
	tf, gbs := Speeds([]HistoryEntry{good, slow, other, damaged, judge(healthyH100())})
	if tf["H100 SXM5"] != 696 || gbs["H100 SXM5"] != 2915 || len(tf) != 1 {
		t.Fatalf("speeds %v %v", tf, gbs)
	}
}

func ptr(v float64) *float64 { return &v }
