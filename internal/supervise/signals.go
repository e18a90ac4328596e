package supervise

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// groupCatching lists the processes of process group pgid that catch sig,
// from /proc (the group's members by the pgrp field of /proc/PID/stat, the
// caught signals by SigCgt in /proc/PID/status). A signal nobody catches
// takes its default action, and SIGUSR1's is to terminate: sent to a
// trainer that never installed a handler (Hugging Face's Trainer, most
// scripts), "checkpoint now" would kill it, in the middle of a checkpoint
// it may be writing. members is how many processes the group has; err is
// set when /proc cannot tell.
func groupCatching(proc string, pgid int, sig syscall.Signal) (pids []int, members int, err error) {
	entries, err := os.ReadDir(proc)
	if err != nil {
		return nil, 0, fmt.Errorf("reading %s: %w", proc, err)
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join(proc, e.Name(), "stat"))
		if err != nil {
			continue // gone since the listing
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces and ')'.
		i := bytes.LastIndexByte(stat, ')')
		f := strings.Fields(string(stat[i+1:]))
		if i < 0 || len(f) < 3 || f[2] != strconv.Itoa(pgid) {
			continue
		}
		members++
		status, err := os.ReadFile(filepath.Join(proc, e.Name(), "status"))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(status), "\n") {
			if v, ok := strings.CutPrefix(line, "SigCgt:"); ok {
				mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
				if err == nil && mask&(1<<(uint(sig)-1)) != 0 {
					pids = append(pids, pid)
				}
				break
			}
		}
	}
	return pids, members, nil
}
