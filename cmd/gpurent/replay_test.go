package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpurent/gpurent/internal/exitcode"
	"github.com/gpurent/gpurent/internal/probe"
)

// bench --replay judges only facts it has (issue #35, item 9): a facts file
// with nothing in it said PASS, exit 0, "bare metal"; negative CPU counts
// and steal passed; a steal of 1e300 % was shown as a negative number.
// Each is now bad input, exit 2, naming the field.
func TestReplayImpossibleFacts(t *testing.T) {
	dir := t.TempDir()
	healthy, err := os.ReadFile("../../internal/bench/testdata/fixtures/healthy-h100-sxm.json")
	if err != nil {
		t.Fatal(err)
	}
	// with is the healthy fixture with one host field changed.
	with := func(name, field string, v any) string {
		var m map[string]any
		if err := json.Unmarshal(healthy, &m); err != nil {
			t.Fatal(err)
		}
		m["host"].(map[string]any)[field] = v
		b, _ := json.Marshal(m)
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	empty := filepath.Join(dir, "empty.json")
	if err := os.WriteFile(empty, fmt.Appendf(nil, `{"version":%d}`, probe.FactsVersion), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path, want string
	}{
		{"nothing in it", empty, "host: no host facts at all"},
		{"negative CPU count", with("cpus.json", "online_cpus", -4), "host.online_cpus: want 0 or more, got -4"},
		{"negative steal", with("steal.json", "steal_pct", -5), "host.steal_pct: want a percentage from 0 to 100, got -5"},
		{"huge steal", with("huge.json", "steal_pct", 1e300), "host.steal_pct: want a percentage from 0 to 100, got 1e+300"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := gpurent(t, "bench", "--no-history", "--replay", tc.path)
			if code != exitcode.Usage || !strings.Contains(stderr, "--replay "+tc.path+": facts that cannot be judged: ") || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q, stdout %q; want exit 2 and %q", code, stderr, stdout, tc.want)
			}
		})
	}
	// The fixture itself replays.
	if code, _, stderr := gpurent(t, "bench", "--no-history", "--replay", with("ok.json", "online_cpus", 26)); code != 0 {
		t.Errorf("the healthy fixture: exit %d, %s", code, stderr)
	}
}
