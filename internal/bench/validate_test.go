package bench

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpurent/gpurent/internal/probe"
)

// Every recorded fixture is facts a real machine gave: Validate accepts
// them all, so bench --replay refuses none of them.
func TestFixturesValidate(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("testdata", "fixtures", "*.json"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var f probe.Facts
		if err := json.Unmarshal(b, &f); err != nil {
			t.Fatal(err)
		}
		if err := f.Validate(); err != nil {
			t.Errorf("%s: %v", filepath.Base(p), err)
		}
	}
}

// The judging itself survives impossible facts that reach it (issue #35,
// item 9): a steal of 1e300 % is measured as that, not as the negative
// number an int64 conversion made of it (-922337203685477600), and a
// negative CPU count is no count: a skip, never a pass.
func TestImpossibleHostJudged(t *testing.T) {
	f := healthyH100()
	f.Host.StealPct = p(1e300)
	c := judged(t, f, "host.steal")
	if m, ok := c.Measured.(float64); !ok || m < 1e299 || c.Status != Fail {
		t.Errorf("steal 1e300: %s, measured %v", c.Status, c.Measured)
	}
	f = healthyH100()
	f.Host.OnlineCPUs = -4
	if c := judged(t, f, "host.cpu"); c.Status != Skip || c.Measured != nil {
		t.Errorf("-4 CPUs: %s, measured %v; want skip, nothing measured", c.Status, c.Measured)
	}
	for v, want := range map[float64]float64{0.25: 0.3, 12.34: 12.3, -0.04: 0, 99.95: 100, 1e300: 1e300} {
		if got := round1(v); got != want {
			t.Errorf("round1(%g) = %g, want %g", v, got, want)
		}
	}
}
