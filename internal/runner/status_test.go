//go:build unix

package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/supervise"
)

func TestStatusText(t *testing.T) {
	s := supervise.Snapshot{ChildUp: true, Restarts: 2, LastCommit: time.Now().Add(-130 * time.Second), AtRisk: 130 * time.Second,
		Bytes: 3 << 30, UploadErrors: 1}
	got := statusText(nil, s, "", "", 0)
	want := "gpurent: training up · restarts 2 · last commit 2m10s ago · at risk 2m10s · 3.00 GiB uploaded · 1 upload errors"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	s.Silent = 59 * time.Second
	if got := statusText(nil, s, "", "", 0); got != want {
		t.Errorf("silent for under a minute: %q", got)
	}
	s.Silent = 12 * time.Minute
	if got := statusText(nil, s, "", "", 0); got != strings.Replace(want, "uploaded", "uploaded · no output for 12m00s", 1) {
		t.Errorf("silent for 12 min: %q", got)
	}
	if got := statusText(nil, s, "GPUs 93% 12%", "", 0); !strings.HasSuffix(got, "uploaded · GPUs 93% 12% · no output for 12m00s · 1 upload errors") {
		t.Errorf("with GPUs: %q", got)
	}
	if got := statusText(nil, supervise.Snapshot{AtRisk: time.Hour + 5*time.Minute}, "", "", 40); len([]rune(got)) != 40 ||
		!strings.HasPrefix(got, "gpurent: training down · restarts 0 · no") {
		t.Errorf("truncated: %q", got)
	}
	// The bottom row of a 24-row terminal, scrolling confined above it.
	if seq := statusSeq(24, "x"); seq != "\x1b7\x1b[24;1H\x1b[2K\x1b[7mx\x1b[0m\x1b8" {
		t.Errorf("%q", seq)
	}
	if r := scrollRegion(24); r != "\x1b7\x1b[1;23r\x1b8" {
		t.Errorf("%q", r)
	}
}

func TestProgressText(t *testing.T) {
	s := supervise.Snapshot{ChildUp: true, Restarts: 1, LastCommit: time.Now().Add(-12 * time.Minute), AtRisk: 12 * time.Minute,
		Bytes: 41 << 30, Silent: 25 * time.Minute}
	want := "training for 14h02m; 1 restart; last checkpoint committed 12m00s ago; 41.00 GiB uploaded; no output for 25m00s"
	if got := progressText(s, 14*time.Hour+2*time.Minute, "").String(); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	s = supervise.Snapshot{UploadErrors: 3, Silent: time.Hour}
	want = "5m00s in, the command is not running (between restarts); 0 restarts; no checkpoint in the store yet; 3 upload errors"
	if got := progressText(s, 5*time.Minute, "").String(); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

func TestNoStatusOffTerminal(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	t.Setenv("TERM", "xterm")
	if s := startStatus(f, func(int) string { return "x" }); s != nil {
		t.Fatal("a status line on a file")
	}
	if st, _ := f.Stat(); st.Size() != 0 {
		t.Fatal("escape sequences written to a file")
	}
}

// The status line and a progress notification end with the cost.
func TestStatusShowsCost(t *testing.T) {
	s := supervise.Snapshot{ChildUp: true}
	if got := statusText(nil, s, "", "3.75 USD", 0); !strings.HasSuffix(got, " · ≈ 3.75 USD") {
		t.Errorf("status %q", got)
	}
	if got := progressText(s, 90*time.Minute, "3.75 USD").String(); !strings.HasSuffix(got, "; about 3.75 USD so far") {
		t.Errorf("progress %q", got)
	}
}
