package procfs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The OOM kill count and the memory limit are read from cgroup v2 and v1
// trees as containers show them: under the cgroup's path, or at the root
// of a namespaced mount.
func TestOOMKillsAndLimit(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		kills int64
		limit int64 // 0: none
	}{
		{"v2 namespaced", map[string]string{
			"proc/self/cgroup":            "0::/\n",
			"sys/fs/cgroup/memory.events": "low 0\nhigh 0\nmax 12\noom 3\noom_kill 2\noom_group_kill 0\n",
			"sys/fs/cgroup/memory.max":    "34359738368\n",
		}, 2, 32 << 30},
		{"v2 nested, no limit", map[string]string{
			"proc/self/cgroup": "0::/user.slice/job-7\n",
			"sys/fs/cgroup/user.slice/job-7/memory.events": "oom 1\noom_kill 1\n",
			"sys/fs/cgroup/user.slice/job-7/memory.max":    "max\n",
		}, 1, 0},
		{"v1 under its path", map[string]string{
			"proc/self/cgroup": "9:name=systemd:/\n4:memory:/process_api/abc\n0::/\n",
			"sys/fs/cgroup/memory/process_api/abc/memory.oom_control":    "oom_kill_disable 0\nunder_oom 0\noom_kill 5\n",
			"sys/fs/cgroup/memory/process_api/abc/memory.limit_in_bytes": "9223372036854771712\n",
		}, 5, 0},
		{"v1 at the mount root", map[string]string{
			"proc/self/cgroup":                           "4:cpuacct,memory:/docker/xyz\n",
			"sys/fs/cgroup/memory/memory.oom_control":    "oom_kill_disable 0\nunder_oom 0\noom_kill 7\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes": "17179869184\n",
		}, 7, 16 << 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			for p, c := range tc.files {
				writeFile(t, filepath.Join(root, p), c)
			}
			n, where, ok := OOMKills(root)
			if !ok || n != tc.kills || !strings.HasPrefix(where, root) {
				t.Errorf("oom kills %d %q %v, want %d", n, where, ok, tc.kills)
			}
			lim, ok := MemoryLimit(root)
			if (tc.limit == 0) == ok || lim != tc.limit {
				t.Errorf("limit %d %v, want %d", lim, ok, tc.limit)
			}
		})
	}
	if _, _, ok := OOMKills(t.TempDir()); ok {
		t.Error("an empty tree gave an OOM count")
	}
}
