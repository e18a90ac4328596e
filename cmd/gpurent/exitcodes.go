package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpurent/gpurent/internal/supervise"
)

// Exit codes every command keeps.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
	// exitVerdictFail is a failed check: bench's or audit's verdict.
	exitVerdictFail = 3
)

// exitCodeRow is one code of the table every command's codes come from.
type exitCodeRow struct {
	code     int
	commands string
	means    string
}

// exitCodeTable is every exit code a gpurent command returns, and when:
// `gpurent help exit-codes` prints it, and a test checks that each code
// the commands return is in it. run also passes on its command's own
// code, which is the command's, not gpurent's.
func exitCodeTable() []exitCodeRow {
	return []exitCodeRow{
		{exitOK, "all", "done: the answer is on stdout, a check passed, the command finished and its last checkpoint is stored"},
		{exitFailure, "all", "failed: an error gpurent could not get past (a store that cannot be reached, a file that cannot be written), said on stderr"},
		{exitUsage, "all", "bad usage or input: a flag, argument or file is wrong; the one line on stderr names it, and nothing stored was changed"},
		{exitVerdictFail, "bench, audit", "the check failed: the verdict is fail, with its evidence"},
		{supervise.ExitNotStored, "run", "the command finished, but its last checkpoint could not be stored: it is only on this machine, so do not release it (sysexits' EX_IOERR)"},
		{supervise.ExitStopped, "run", "stopped for a preemption notice, a scheduled event, a spent --budget or --idle-stop: the checkpoint is safe; run again later (sysexits' EX_TEMPFAIL)"},
	}
}

// newExitCodes is the help topic `gpurent help exit-codes`.
func newExitCodes() *cobra.Command {
	var b strings.Builder
	b.WriteString("Exit codes of gpurent's commands. run otherwise exits with its command's own code\n(128 + the signal when a signal stopped it).\n\n")
	for _, r := range exitCodeTable() {
		fmt.Fprintf(&b, "  %-3d %-13s %s\n", r.code, r.commands, r.means)
	}
	return &cobra.Command{
		Use:   "exit-codes",
		Short: "What each exit code of gpurent's commands means",
		Long:  strings.TrimRight(b.String(), "\n"),
	}
}
