package supervise

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A command the OOM killer ends is restarted with the cause said, and the
// crash-loop reason names it; a command that just fails is not blamed on
// memory.
func TestOOMKillIsNamed(t *testing.T) {
	for _, oomed := range []bool{true, false} {
		root := t.TempDir()
		events := filepath.Join(root, "sys/fs/cgroup/memory.events")
		if err := os.MkdirAll(filepath.Join(root, "proc/self"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(events), 0o755); err != nil {
			t.Fatal(err)
		}
		for path, content := range map[string]string{"proc/self/cgroup": "0::/\n", "sys/fs/cgroup/memory.events": "oom 0\noom_kill 0\n", "sys/fs/cgroup/memory.max": "8589934592\n"} {
			if err := os.WriteFile(filepath.Join(root, path), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		// The command plays the kernel: it bumps the count, then dies of SIGKILL.
		script := `n=$(sed -n 's/^oom_kill //p' "$EVENTS"); printf 'oom 1\noom_kill %d\n' $((n+1)) > "$EVENTS"; kill -9 $$`
		if !oomed {
			script = `exit 3`
		}
		t.Setenv("EVENTS", events)
		cfg := Config{Cmd: []string{"sh", "-c", script}, CkptDir: t.TempDir(), Run: "trial", MaxRestarts: 5, CrashLoop: 2,
			Backoff: time.Millisecond, Poll: 20 * time.Millisecond, Quiet: 50 * time.Millisecond,
			Stdout: io.Discard, Stderr: io.Discard, Log: func(string, ...any) {}}
		sup, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		sup.sysRoot = root
		ex, err := sup.Run(context.Background(), nil)
		if err != nil || ex.Code != 1 || !strings.Contains(ex.Reason.String(), "crash loop") {
			t.Fatalf("%+v %v", ex, err)
		}
		named := strings.Contains(ex.Reason.String(), "the kernel's out-of-memory killer ended it (oom_kill 1 -> 2 in "+events+"): host RAM ran out, not GPU memory; this container may use 8.00 GiB")
		if named != oomed {
			t.Errorf("OOM killed %v, reason %q", oomed, ex.Reason.String())
		}
	}
}
