package billing

import (
	"strings"
	"testing"
	"time"
)

const goodProfile = `gpu: RTX 4090
gpus: 1
compute_hours: 300
span_days: 30
starts: 10
disk_gb: 200
egress_gb: 100
interruptible: true
checkpoint: {every: 30m, write: 1m, restart: 5m}
`

func TestParseProfile(t *testing.T) {
	p, _, err := ParseProfile("task.yaml", []byte(goodProfile))
	if err != nil {
		t.Fatal(err)
	}
	if p.ComputeHours != 300 || p.SpanDays != 30 || p.Starts != 10 || !p.Interruptible ||
		time.Duration(p.Checkpoint.Every) != 30*time.Minute || time.Duration(p.Checkpoint.Restart) != 5*time.Minute {
		t.Errorf("parsed %+v %+v", p, p.Checkpoint)
	}
	// Defaults: one GPU, one start, and a span just long enough: 50 h → 3 days.
	p, _, err = ParseProfile("min.yaml", []byte("compute_hours: 50\n"))
	if err != nil || p.GPUs != 1 || p.Starts != 1 || p.SpanDays != 3 {
		t.Errorf("defaults: %+v, %v", p, err)
	}
}

func TestParseProfileBad(t *testing.T) {
	for _, tc := range []struct{ old, new, want string }{
		{"compute_hours: 300", "compute_hours: 0", "task.yaml:3: compute_hours: want a positive number of hours"},
		{"compute_hours: 300", "compute_hours: .nan", "task.yaml:3: compute_hours: want a positive number of hours"},
		{"compute_hours: 300", "compute_hours: 800", "task.yaml:3: compute_hours: 800 h do not fit in a span of 30 days (720 h)"},
		{"starts: 10", "starts: -1", "task.yaml:5: starts: want at least 1 start"},
		// A zero the user wrote is refused, not taken for "left out".
		{"starts: 10", "starts: 0", "task.yaml:5: starts: want at least 1 start, got 0"},
		// 300 h are 1,080,000 s: one start more than that is less than a second each.
		{"starts: 10", "starts: 1080001", "task.yaml:5: starts: 1080001 starts do not fit in 300 h of compute (each would run less than a second)"},
		{"gpus: 1", "gpus: 0", "task.yaml:2: gpus: want at least 1 GPU, got 0"},
		{"span_days: 30", "span_days: 0", "task.yaml:4: span_days: want at least 1 day, got 0"},
		{"disk_gb: 200", "disk_gb: -5", "task.yaml:6: disk_gb: want a non-negative size"},
		{"every: 30m", "every: 30", "task.yaml:9: checkpoint.every: invalid duration \"30\""},
		{"every: 30m", "every: 0s", "task.yaml:9: checkpoint.every: want an interval of a second or more"},
		{"gpus: 1", "gpu_count: 1", "task.yaml:2: gpu_count: unknown field \"gpu_count\""},
		{"interruptible: true", "interruptible: maybe", "task.yaml:8: interruptible: cannot unmarshal"},
	} {
		src := strings.Replace(goodProfile, tc.old, tc.new, 1)
		_, _, err := ParseProfile("task.yaml", []byte(src))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s → %q: got %v, want %q", tc.old, tc.new, err, tc.want)
		}
	}
}

func FuzzParseProfile(f *testing.F) {
	f.Add([]byte(goodProfile))
	f.Add([]byte("compute_hours: 1e308\n"))
	f.Add([]byte("compute_hours: 5\ncheckpoint: {every: 1d}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, _, err := ParseProfile("fuzz.yaml", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.yaml") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		// A valid profile can always be quoted without panicking.
		if p.ComputeHours <= 0 || p.ComputeHours > float64(p.SpanDays)*24 || p.Starts < 1 || p.GPUs < 1 {
			t.Fatalf("accepted invalid profile %+v", p)
		}
		o := testOffer()
		onDemandBill(p, &o)
		subscriptionBill(p, &o, false)
	})
}
