package bench

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/gpurent/gpurent/internal/compute"
	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/statedir"
)

// HistoryEntry is one bench run as the local history keeps it: enough to
// compare instances side by side, without the full facts.
type HistoryEntry struct {
	Time    time.Time      `json:"time"`
	Verdict string         `json:"verdict"`
	Expect  string         `json:"expect,omitempty"`
	GPUs    []HistoryGPU   `json:"gpus"`
	CPU     string         `json:"cpu,omitempty"`
	CPUs    int            `json:"cpus"`
	Failed  []string       `json:"failed"`
	Warned  []string       `json:"warned"`
	Measure HistoryMeasure `json:"measured"` // a few headline figures
}

// HistoryMeasure is what a run measured of the figures that tell two
// instances apart; a figure not measured (a check skipped, no GPU) is
// absent. Lines written before it had fields hold a map keyed by check id
// ("host.steal"), which UnmarshalJSON still reads.
type HistoryMeasure struct {
	StealPct           *float64 `json:"steal_pct,omitempty"`
	DiskMBs            *float64 `json:"disk_mb_s,omitempty"`
	GPU0PowerLimitW    *float64 `json:"gpu0_power_limit_w,omitempty"`
	GPU0UtilizationPct *float64 `json:"gpu0_utilization_pct,omitempty"`
	GPU0PCIe           string   `json:"gpu0_pcie,omitempty"`
}

// fields maps each check a history keeps to its field, under the
// new key and the check id older lines used.
func (m *HistoryMeasure) fields() map[string]any {
	return map[string]any{
		"host.steal": &m.StealPct, "steal_pct": &m.StealPct,
		"host.disk": &m.DiskMBs, "disk_mb_s": &m.DiskMBs,
		"gpu0.power_limit": &m.GPU0PowerLimitW, "gpu0_power_limit_w": &m.GPU0PowerLimitW,
		"gpu0.utilization": &m.GPU0UtilizationPct, "gpu0_utilization_pct": &m.GPU0UtilizationPct,
		"gpu0.pcie": &m.GPU0PCIe, "gpu0_pcie": &m.GPU0PCIe,
	}
}

// set keeps a value under its check id or key, if the history keeps that
// figure and the value is of the field's kind.
func (m *HistoryMeasure) set(id string, v any) {
	switch p := m.fields()[id].(type) {
	case **float64:
		if f, ok := v.(float64); ok {
			*p = &f
		}
	case *string:
		if s, ok := v.(string); ok {
			*p = s
		}
	}
}

// UnmarshalJSON reads the fields, or an older line's map keyed by check id.
func (m *HistoryMeasure) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	// A figure of another kind than its field's is dropped, as set drops
	// it: one odd figure must not cost the whole run its line.
	for k, v := range raw {
		var x any
		if json.Unmarshal(v, &x) == nil {
			m.set(k, x)
		}
	}
	return nil
}

// HistoryGPU names one GPU of a run, and keeps what quote --measured
// rates its model by: the datasheet row bench identified it as and, when
// their checks passed, its BF16 GEMM throughput and device-to-device copy
// bandwidth (cuMemcpyDtoD's, else the copy kernel's). A figure from a
// check that warned (a throttled or shared card) is not kept: it would
// rate the model by a fault.
type HistoryGPU struct {
	Name       string   `json:"name"`
	UUID       string   `json:"uuid,omitempty"`
	MemoryGiB  float64  `json:"memory_gib,omitempty"`
	Model      string   `json:"model,omitempty"`
	BF16TFLOPS *float64 `json:"bf16_tflops,omitempty"`
	MemoryGBs  *float64 `json:"memory_gb_s,omitempty"`
}

// Entry summarises a report for the history.
func (r *Report) Entry() HistoryEntry {
	e := HistoryEntry{Time: r.Facts.CollectedAt, Verdict: r.Verdict, Expect: r.Expect, GPUs: []HistoryGPU{},
		CPU: r.Facts.Host.CPUModel, CPUs: r.Facts.Host.OnlineCPUs, Failed: []string{}, Warned: []string{}}
	for _, d := range r.Facts.GPU.Devices {
		g := HistoryGPU{Name: d.Name, UUID: d.UUID}
		if d.MemoryTotal != nil {
			g.MemoryGiB = gib(*d.MemoryTotal)
		}
		r.speeds(d.Index, &g)
		e.GPUs = append(e.GPUs, g)
	}
	for _, c := range r.Checks {
		switch c.Status {
		case Fail:
			e.Failed = append(e.Failed, c.ID)
		case Warn:
			e.Warned = append(e.Warned, c.ID)
		}
		e.Measure.set(c.ID, c.Measured)
	}
	return e
}

// HistoryPath is where the history lives: $XDG_STATE_HOME/gpurent, else
// ~/.local/state/gpurent (the XDG base directory specification's default).
func HistoryPath() (string, error) {
	dir, err := statedir.Dir()
	if err != nil {
		return "", i18n.Errorf("bench history: %w", err)
	}
	return filepath.Join(dir, "bench.jsonl"), nil
}

// AppendHistory adds one line to the history file, creating it. Appending
// never rewrites what is already stored; the line is synced before return.
// A line left unfinished by an earlier crash stays as it is and is skipped
// when read.
func AppendHistory(path string, e HistoryEntry) error {
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return i18n.Errorf("bench history: %w", err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_RDWR, 0o600)
	if err != nil {
		return i18n.Errorf("bench history: %w", err)
	}
	// A write cut short earlier leaves a line without its newline; start a
	// new line so this entry is not glued to the broken one.
	line := append(b, '\n')
	if st, err := f.Stat(); err == nil && st.Size() > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, st.Size()-1); err == nil && last[0] != '\n' {
			line = append([]byte{'\n'}, line...)
		}
	}
	if _, err := f.Write(line); err != nil {
		f.Close()
		return i18n.Errorf("bench history %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return i18n.Errorf("bench history %s: %w", path, err)
	}
	return f.Close()
}

// ReadHistory returns the entries in file order. A missing file is an
// empty history; a line that does not parse (a write cut short) is skipped
// and counted.
func ReadHistory(path string) (entries []HistoryEntry, skipped int, err error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, i18n.Errorf("bench history: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		var e HistoryEntry
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			skipped++
			continue
		}
		entries = append(entries, e)
	}
	return entries, skipped, sc.Err()
}

// speeds fills g's model and measured figures from GPU i's checks.
func (r *Report) speeds(i int, g *HistoryGPU) {
	p := fmt.Sprintf("gpu%d.", i)
	dtod := false
	for _, c := range r.Checks {
		v, ok := c.Measured.(float64)
		switch {
		case c.ID == p+"identity" && c.Unit == "model":
			// Measured is the datasheet row when bench identified the
			// card, else the driver's name, which names no row.
			g.Model, _ = c.Measured.(string)
		case !ok || c.Status != Pass || !plausible(v):
		case c.ID == p+compute.ProbeGEMMBF16:
			g.BF16TFLOPS = &v
		case c.ID == p+compute.ProbeDtoD:
			g.MemoryGBs, dtod = &v, true
		case c.ID == p+compute.ProbeCopy && !dtod:
			// The copy kernel's figure, where cuMemcpyDtoD's is not.
			g.MemoryGBs = &v
		}
	}
}

// Speeds are, for each datasheet model the history measured, the median
// over every GPU of that model in every run: BF16 GEMM TFLOPS (tflops) and
// device-to-device copy GB/s (gbs). They are what quote and plan
// --measured rate a model by, in place of its datasheet peak.
func Speeds(entries []HistoryEntry) (tflops, gbs map[string]float64) {
	tf, bw := map[string][]float64{}, map[string][]float64{}
	for _, e := range entries {
		for _, g := range e.GPUs {
			if g.Model == "" {
				continue
			}
			if g.BF16TFLOPS != nil && plausible(*g.BF16TFLOPS) {
				tf[g.Model] = append(tf[g.Model], *g.BF16TFLOPS)
			}
			if g.MemoryGBs != nil && plausible(*g.MemoryGBs) {
				bw[g.Model] = append(bw[g.Model], *g.MemoryGBs)
			}
		}
	}
	return medians(tf), medians(bw)
}

// plausible is a speed some card could measure: no card comes near a
// million TFLOPS or GB/s, so such a figure is a damaged line's.
func plausible(v float64) bool { return v > 0 && v < 1e6 }

func medians(by map[string][]float64) map[string]float64 {
	out := make(map[string]float64, len(by))
	for k, v := range by {
		slices.Sort(v)
		n := len(v)
		out[k] = (v[(n-1)/2] + v[n/2]) / 2
	}
	return out
}

// MeasuredSpeeds are the Speeds of this machine's user's history
// (HistoryPath); an absent history measured nothing.
func MeasuredSpeeds() (tflops, gbs map[string]float64, err error) {
	path, err := HistoryPath()
	if err != nil {
		return nil, nil, err
	}
	entries, _, err := ReadHistory(path)
	if err != nil {
		return nil, nil, err
	}
	tflops, gbs = Speeds(entries)
	return tflops, gbs, nil
}
