// Package exitcode is the one table of gpurent's exit codes: what each
// means and which commands return it. cmd returns them, runner and
// supervise end a run with them, and `gpurent help exit-codes` prints
// the table; cmd's tests check that every code a command returns, and
// every code its help names, is in it.
package exitcode

// Exit codes every command keeps, and run's two of its own (sysexits.h's:
// 3 is a failed verdict in bench and audit, and one code has one meaning).
const (
	OK      = 0
	Failure = 1
	Usage   = 2
	// VerdictFail is a failed check: bench's or audit's verdict.
	VerdictFail = 3
	// NotStored is a run whose command finished (or was stopped on a
	// preemption notice) while its newest complete checkpoint failed to
	// reach the store: the work is done, but the machine holds its only
	// copy, so `gpurent run ... && shutdown` must not go on. sysexits'
	// EX_IOERR.
	NotStored = 74
	// Stopped is a run stopped on a preemption notice, a scheduled event,
	// a spent budget or idleness: its checkpoint is safe, but the command
	// did not finish, so `gpurent run ... && shutdown` must not go on.
	// sysexits' EX_TEMPFAIL: "the user is invited to retry the operation
	// later", which is what to do.
	Stopped = 75
)

// Row is one code: the commands that return it ("all", or names joined
// by ", ") and what it means.
type Row struct {
	Code     int
	Commands string
	Means    string
}

// Table is every exit code a gpurent command returns, and when. run also
// passes on its command's own code, which is the command's, not
// gpurent's.
func Table() []Row {
	return []Row{
		{OK, "all", "done: the answer is on stdout, a check passed, the command finished and its last checkpoint is stored"},
		{Failure, "all", "failed: an error gpurent could not get past (a store that cannot be reached, a file that cannot be written), said on stderr"},
		{Usage, "all", "bad usage or input: a flag, argument or file is wrong; the one line on stderr names it, and nothing stored was changed"},
		{VerdictFail, "bench, audit", "the check failed: the verdict is fail, with its evidence"},
		{NotStored, "run", "the command finished, but its last checkpoint could not be stored: it is only on this machine, so do not release it (sysexits' EX_IOERR)"},
		{Stopped, "run", "stopped for a preemption notice, a scheduled event, a spent --budget or --idle-stop: the checkpoint is safe; run again later (sysexits' EX_TEMPFAIL)"},
	}
}
