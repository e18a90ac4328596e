package supervise

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestMetricsText: every sample has its HELP and TYPE lines, a counter's
// name ends in _total, and the values are the counters' and the ages
// worked out from the times stored.
func TestMetricsText(t *testing.T) {
	var m Metrics
	m.started.Store(time.Now().Add(-time.Hour).UnixNano())
	m.childUp.Store(1)
	m.restarts.Store(2)
	m.bytes.Store(1 << 30)
	m.uploadErrors.Store(4)
	m.notices.Store(1)
	m.lastUploadSeconds.Store(12_345)
	m.stalls.Store(3)
	m.lastCheckpoint.Store(time.Now().Add(-90 * time.Second).Unix())
	var b strings.Builder
	if _, err := m.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	help, typ, got := map[string]bool{}, map[string]string{}, map[string]float64{}
	for _, line := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 3 && f[0] == "#" && f[1] == "HELP":
			help[f[2]] = true
		case len(f) == 4 && f[0] == "#" && f[1] == "TYPE":
			typ[f[2]] = f[3]
		case len(f) == 2:
			v, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				t.Errorf("%q: %v", line, err)
			}
			got[f[0]] = v
		default:
			t.Errorf("line %q", line)
		}
	}
	for name := range got {
		if !help[name] || typ[name] == "" {
			t.Errorf("%s lacks HELP or TYPE", name)
		}
		if (typ[name] == "counter") != strings.HasSuffix(name, "_total") {
			t.Errorf("%s is a %s", name, typ[name])
		}
	}
	for name, want := range map[string]float64{
		"gpurent_child_up": 1, "gpurent_restarts_total": 2, "gpurent_uploaded_bytes_total": 1 << 30,
		"gpurent_upload_errors_total": 4, "gpurent_preemption_notices_total": 1, "gpurent_last_upload_seconds": 12.345,
		"gpurent_stalls_total": 3, "gpurent_last_commit_age_seconds": -1, "gpurent_work_at_risk_seconds": 3600,
		"gpurent_last_output_age_seconds": -1,
	} {
		if got[name] != want {
			t.Errorf("%s = %v, want %v", name, got[name], want)
		}
	}
	if a := got["gpurent_last_checkpoint_age_seconds"]; a < 89 || a > 92 {
		t.Errorf("last checkpoint age %v, want 90", a)
	}
	m.lastOutput.Store(time.Now().Add(-42 * time.Second).Unix())
	b.Reset()
	m.WriteTo(&b)
	if !strings.Contains(b.String(), "\ngpurent_last_output_age_seconds 42\n") && !strings.Contains(b.String(), "\ngpurent_last_output_age_seconds 43\n") {
		t.Errorf("last output 42 s ago:\n%s", b.String())
	}
}
