package bench

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

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
	Measure map[string]any `json:"measured,omitempty"` // a few headline figures
}

// HistoryGPU names one GPU of a run.
type HistoryGPU struct {
	Name      string  `json:"name"`
	UUID      string  `json:"uuid,omitempty"`
	MemoryGiB float64 `json:"memory_gib,omitempty"`
}

// Entry summarises a report for the history.
func (r *Report) Entry() HistoryEntry {
	e := HistoryEntry{Time: r.Facts.CollectedAt, Verdict: r.Verdict, Expect: r.Expect, GPUs: []HistoryGPU{},
		CPU: r.Facts.Host.CPUModel, CPUs: r.Facts.Host.OnlineCPUs, Failed: []string{}, Warned: []string{}, Measure: map[string]any{}}
	for _, d := range r.Facts.GPU.Devices {
		g := HistoryGPU{Name: d.Name, UUID: d.UUID}
		if d.MemoryTotal != nil {
			g.MemoryGiB = gib(*d.MemoryTotal)
		}
		e.GPUs = append(e.GPUs, g)
	}
	for _, c := range r.Checks {
		switch c.Status {
		case Fail:
			e.Failed = append(e.Failed, c.ID)
		case Warn:
			e.Warned = append(e.Warned, c.ID)
		}
		switch c.ID {
		case "host.steal", "host.disk", "gpu0.power_limit", "gpu0.utilization", "gpu0.pcie":
			if c.Measured != nil {
				e.Measure[c.ID] = c.Measured
			}
		}
	}
	return e
}

// HistoryPath is where the history lives: $XDG_STATE_HOME/gpurent, else
// ~/.local/state/gpurent (the XDG base directory specification's default).
func HistoryPath() (string, error) {
	dir, err := statedir.Dir()
	if err != nil {
		return "", fmt.Errorf("bench history: %w", err)
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
		return fmt.Errorf("bench history: %w", err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("bench history: %w", err)
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
		return fmt.Errorf("bench history %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("bench history %s: %w", path, err)
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
		return nil, 0, fmt.Errorf("bench history: %w", err)
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
