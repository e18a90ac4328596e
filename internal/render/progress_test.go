package render

import (
	"testing"
	"time"
)

// The progress line of a long transfer says how far it is and how long
// is left; with the total unknown, only what moved.
func TestProgressLine(t *testing.T) {
	for _, c := range []struct {
		done, total int64
		elapsed     time.Duration
		want        string
	}{
		{1 << 30, 4 << 30, 10 * time.Second, "push 1.00 GiB / 4.00 GiB  25%  102.4 MiB/s  30s left"},
		{0, 4 << 30, time.Second, "push 0 B / 4.00 GiB  0%  0 B/s"},
		{4 << 30, 4 << 30, 40 * time.Second, "push 4.00 GiB / 4.00 GiB  100%  102.4 MiB/s"},
		{1 << 30, 0, 10 * time.Second, "push 1.00 GiB  102.4 MiB/s"},
	} {
		if got := progressLine(nil, "push", c.done, c.total, c.elapsed); got != c.want {
			t.Errorf("progressLine(%d, %d, %v) = %q, want %q", c.done, c.total, c.elapsed, got, c.want)
		}
	}
}
