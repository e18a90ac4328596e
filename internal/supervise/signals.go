package supervise

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/gpurent/gpurent/internal/i18n"
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
	err = eachInGroup(proc, pgid, func(pid int, _ byte) {
		members++
		status, err := os.ReadFile(filepath.Join(proc, strconv.Itoa(pid), "status"))
		if err != nil {
			return
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
	})
	return pids, members, err
}

// groupLive lists the processes of group pgid that still run: zombies
// (exited, waiting for their parent to reap them) hold no memory, GPU or
// port, and are left out. err is set when /proc cannot tell.
func groupLive(proc string, pgid int) (pids []int, err error) {
	err = eachInGroup(proc, pgid, func(pid int, state byte) {
		if state != 'Z' && state != 'X' {
			pids = append(pids, pid)
		}
	})
	return pids, err
}

// eachInGroup calls fn with each process of group pgid under proc and its
// state letter (R, S, D, Z, ...), by the fields of /proc/PID/stat.
func eachInGroup(proc string, pgid int, fn func(pid int, state byte)) error {
	entries, err := os.ReadDir(proc)
	if err != nil {
		return i18n.Errorf("reading %s: %w", proc, err)
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
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 3 || f[2] != strconv.Itoa(pgid) || len(f[0]) != 1 {
			continue
		}
		fn(pid, f[0][0])
	}
	return nil
}

// treeVar names the variable gpurent run gives the command: every process
// the command starts inherits it, whatever group or session it moves to
// (setsid, a daemonizing server, a launcher's workers), so a stray is
// known by it after its parent is gone.
const treeVar = "GPURENT_TREE"

// markedLive lists the processes under proc, other than self, that still
// run and carry treeVar=token in their environment (each environ read no
// further than 1 MiB).
func markedLive(proc, token string, self int) []int {
	if token == "" {
		return nil
	}
	mark := []byte(treeVar + "=" + token + "\x00")
	entries, err := os.ReadDir(proc)
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		f, err := os.Open(filepath.Join(proc, e.Name(), "environ"))
		if err != nil {
			continue // another user's, or gone
		}
		b := make([]byte, 1<<20)
		n, _ := io.ReadFull(f, b)
		f.Close()
		if !bytes.Contains(append([]byte{0}, b[:n]...), append([]byte{0}, mark...)) {
			continue
		}
		stat, err := os.ReadFile(filepath.Join(proc, e.Name(), "stat"))
		if err != nil {
			continue
		}
		if i := bytes.LastIndexByte(stat, ')'); i > 0 && i+2 < len(stat) && (stat[i+2] == 'Z' || stat[i+2] == 'X') {
			continue
		}
		out = append(out, pid)
	}
	return out
}
