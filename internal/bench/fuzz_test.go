package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpurent/gpurent/internal/mutate"
	"github.com/gpurent/gpurent/internal/probe"
	"github.com/gpurent/gpurent/internal/report"
	"github.com/gpurent/gpurent/internal/specs"
)

// FuzzJudge judges any facts a file could hold: `bench --replay` reads a
// file the user passes, perhaps edited by hand or written by another
// version, and the judgement must neither panic nor write a report that
// JSON cannot hold (a NaN from a zero divisor) or that contradicts itself.
// The seeds are the fixtures, so the fuzzer starts from every check's path.
func FuzzJudge(f *testing.F) {
	paths, err := filepath.Glob(filepath.Join("testdata", "fixtures", "*.json"))
	if err != nil || len(paths) == 0 {
		f.Fatalf("no fixtures: %v", err)
	}
	for _, path := range paths {
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, "")
		f.Add(b, "H100 SXM")
	}
	tab, err := specs.Load()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte, expect string) {
		var facts probe.Facts
		if json.Unmarshal(data, &facts) != nil {
			return
		}
		r, err := Judge(facts, tab, Order{GPU: expect, GPUs: 1, CPUs: 8, RAM: 64e9, Disk: 100e9, CUDA: "12.8"}, DefaultLimits())
		if err != nil {
			if expect == "" {
				t.Fatalf("judging without an order: %v", err)
			}
			return // an order the table does not know: a usage error
		}
		if r.Verdict != Verdict(r.Checks) {
			t.Errorf("verdict %s, its checks say %s", r.Verdict, Verdict(r.Checks))
		}
		seen := map[string]bool{}
		for _, c := range r.Checks {
			switch c.Status {
			case Pass, Skip:
			case Warn, Fail:
				if c.Advice.String() == "" {
					t.Errorf("%s is %s without advice", c.ID, c.Status)
				}
			default:
				t.Errorf("%s: status %q", c.ID, c.Status)
			}
			if c.ID == "" || c.Evidence.String() == "" {
				t.Errorf("check %+v lacks an id or evidence", c)
			}
			if seen[c.ID] {
				t.Errorf("check %s twice", c.ID)
			}
			seen[c.ID] = true
		}
		if err := report.WriteJSON(io.Discard, r); err != nil {
			t.Errorf("the report cannot be written as JSON: %v", err)
		}
		if err := report.WriteJSON(io.Discard, r.Entry()); err != nil {
			t.Errorf("the history entry cannot be written as JSON: %v", err)
		}
	})
}

// FuzzJudgeFields changes the fixtures' values field by field
// (mutate.Fields), which FuzzJudge's byte mutations seldom reach through
// JSON's syntax. Zero watts, a negative count, a GPU with no
// memory figure or a probe with no repetitions must give checks, not a
// panic or a NaN.
func FuzzJudgeFields(f *testing.F) {
	paths, err := filepath.Glob(filepath.Join("testdata", "fixtures", "*.json"))
	if err != nil || len(paths) == 0 {
		f.Fatalf("no fixtures: %v", err)
	}
	var seeds []probe.Facts
	for i, path := range paths {
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		var facts probe.Facts
		if err := json.Unmarshal(b, &facts); err != nil {
			f.Fatalf("%s: %v", path, err)
		}
		seeds = append(seeds, facts)
		f.Add(uint8(i), uint16(0), []byte{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1})
		f.Add(uint8(i), uint16(40), []byte{2, 3, 0, 2, 255, 3, 1, 3, 3, 0, 0, 0, 0, 0, 0, 0, 0, 3})
		f.Add(uint8(i), uint16(120), []byte{1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3})
	}
	tab, err := specs.Load()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, seed uint8, skip uint16, stream []byte) {
		// Round-trip through JSON for a deep copy the mutation may change.
		b, _ := json.Marshal(seeds[int(seed)%len(seeds)])
		var facts probe.Facts
		if err := json.Unmarshal(b, &facts); err != nil {
			t.Fatal(err)
		}
		mutate.Fields(&facts, int(skip), stream)
		for _, order := range []Order{{}, {GPU: "H100 SXM", GPUs: 2, CPUs: 8, RAM: 64e9, Disk: 100e9, CUDA: "13.0"}} {
			r, err := Judge(facts, tab, order, DefaultLimits())
			if err != nil {
				t.Fatal(err)
			}
			if r.Verdict != Verdict(r.Checks) {
				t.Errorf("verdict %s, its checks say %s", r.Verdict, Verdict(r.Checks))
			}
			for _, c := range r.Checks {
				if (c.Status == Warn || c.Status == Fail) && c.Advice.String() == "" {
					t.Errorf("%s is %s without advice", c.ID, c.Status)
				}
				if c.Evidence.String() == "" {
					t.Errorf("%s has no evidence", c.ID)
				}
				if s := fmt.Sprint(c.Measured, " ", c.Expected, " ", c.Evidence.String()); strings.Contains(s, "NaN") || strings.Contains(s, "+Inf") || strings.Contains(s, "-Inf") {
					t.Errorf("%s: %s", c.ID, s)
				}
			}
			if err := report.WriteJSON(io.Discard, r); err != nil {
				t.Errorf("the report cannot be written as JSON: %v", err)
			}
		}
	})
}
