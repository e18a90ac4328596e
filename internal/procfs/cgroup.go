package procfs

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// OOMKills counts the kernel's out-of-memory kills in this process's
// memory cgroup (the container, on a rented box): cgroup v2's
// memory.events, else v1's memory.oom_control, both "oom_kill N" lines
// (Linux 4.13 and later). The command runs in gpurent's cgroup, so a count
// that grew while it ran and a command that died of SIGKILL mean the
// kernel ended it for memory. root is "/" (tests give a fake tree); where names the file read; ok is false when
// there is none (not Linux, an older kernel, no cgroup mounted).
func OOMKills(root string) (kills int64, where string, ok bool) {
	for _, f := range memoryCgroupFiles(root, "memory.events", "memory.oom_control") {
		if n, ok := counter(f, "oom_kill"); ok {
			return n, f, true
		}
	}
	return 0, "", false
}

// MemoryLimit is the memory cgroup's limit in bytes, and false when it has
// none (v2 "max", or v1's near-2^63 "unlimited") or cannot be read.
func MemoryLimit(root string) (int64, bool) {
	for _, f := range memoryCgroupFiles(root, "memory.max", "memory.limit_in_bytes") {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil || n >= 1<<62 {
			return 0, false
		}
		return n, true
	}
	return 0, false
}

// memoryCgroupFiles lists where the memory cgroup's v2 and v1 files can
// be, from /proc/self/cgroup: under the cgroup's own path first, then at
// the mount's root, which is the container's own cgroup when the container
// has a cgroup namespace.
func memoryCgroupFiles(root, v2, v1 string) []string {
	var out []string
	b, _ := os.ReadFile(filepath.Join(root, "proc/self/cgroup"))
	for _, line := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			out = append(out, filepath.Join(root, "sys/fs/cgroup", parts[2], v2))
		case strings.Contains(","+parts[1]+",", ",memory,"):
			out = append(out, filepath.Join(root, "sys/fs/cgroup/memory", parts[2], v1))
		}
	}
	return append(out, filepath.Join(root, "sys/fs/cgroup", v2), filepath.Join(root, "sys/fs/cgroup/memory", v1))
}

// counter reads "name N" from a flat-keyed cgroup file.
func counter(path, name string) (int64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}
