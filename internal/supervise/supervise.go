package supervise

import (
	"context"
	"crypto/rand"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gpurent/gpurent/internal/clock"
	"github.com/gpurent/gpurent/internal/exitcode"
	"github.com/gpurent/gpurent/internal/i18n"

	"github.com/gpurent/gpurent/internal/preempt"

	"github.com/gpurent/gpurent/internal/fsspace"
	"github.com/gpurent/gpurent/internal/store"
)

// Preempter is what the supervisor needs of a cloud's notice watcher
// (package preempt has one per cloud).
type Preempter interface {
	Watch(ctx context.Context) <-chan preempt.Notice
}

// Config is one supervised run.
type Config struct {
	Cmd     []string // the training command; "{resume}" in an argument is replaced (see Args)
	CkptDir string
	Run     string
	// Store is where checkpoints go; nil keeps them local only.
	Store *store.Store
	Keep  int // newest checkpoints kept remotely (0 keeps all)
	// MaxRestarts after failures; CrashLoop stops earlier when that many
	// restarts in a row saw no new committed checkpoint.
	MaxRestarts int
	CrashLoop   int
	Backoff     time.Duration // first restart delay (250 ms), doubled up to 30 s
	Grace       time.Duration // from forwarding a stop signal to SIGKILL
	// CheckpointSignal asks the child to checkpoint now (on a preemption
	// notice); SIGUSR1 by default.
	CheckpointSignal syscall.Signal
	Poll             time.Duration // directory scan interval
	Quiet            time.Duration // quiet period for plain files and directories
	Glob             string
	Preemption       Preempter // nil: none
	// Cloud and Notice: the cloud whose notices are watched and the
	// shortest notice it gives (0: unknown), which an upload taking longer
	// cannot fit in.
	Cloud          string
	Notice         time.Duration
	Stdout, Stderr io.Writer
	Log            func(format string, args ...any)
	// Event hears, a line each, what someone away from the terminal needs
	// to know while the run goes on: kind "start" (the command's first
	// start), "restart" (after a failure), "stall" (no new checkpoint for
	// long: see Stall), "notice" (a preemption or scheduled event),
	// "budget" (Until came: the command is being stopped),
	// "store_failing" (no upload has succeeded for StoreAlarm),
	// "lease_lost" (another session took the run: see Lease) and
	// "store_ok" (uploads work again after that). How the run ended is
	// Run's Exit. Nil hears nothing.
	Event func(kind string, text i18n.Text)
	// StoreAlarm is how long uploads must fail before store_failing: a
	// store down for a minute is retried without a word (5 min if zero).
	StoreAlarm time.Duration
	// Stall restarts a command that has written no new checkpoint for this
	// long: hung in an NCCL collective that waits on a dead rank, or on a
	// stuck DataLoader, it would otherwise hold the rented GPUs idle until
	// someone looks. Zero only warns, once no new checkpoint has come for
	// three times the usual interval between them (30 min at least).
	Stall time.Duration
	// Output, when set, says when the command last printed (zero: not
	// yet). A trainer prints every few steps, a progress bar each step;
	// hung, it prints nothing, long before a checkpoint is overdue. With
	// it, a command that has printed nothing and written no new
	// checkpoint for Silence is stopped and restarted as Stall does; with
	// Silence zero, that is only warned of, once it has printed ten times
	// and then stayed silent three times as long as ever before, 30 min
	// at least.
	Output  func() time.Time
	Silence time.Duration
	// KeepLocal, when above zero, deletes the complete checkpoints in
	// CkptDir older than the newest KeepLocal once the store holds a
	// newer one (see trimLocal); it needs Store.
	KeepLocal int
	// Explain, when set, names causes of a failure that gpurent cannot
	// see but the command's output shows (CUDA out of memory, an ECC
	// error): said with the restart, as a full disk or the OOM killer is.
	Explain func() []i18n.Text
	// Env is added to the command's environment (gpurent's own, plus
	// GPURENT_RESUME_FROM and the rest).
	Env []string
	// Exclude names entries of CkptDir that are never checkpoints (see
	// Detector.Exclude).
	Exclude []string
	// Until, when not zero, is when the command is stopped as on a
	// preemption notice: asked for a checkpoint, given UntilWindow to
	// write it, stopped, its newest checkpoint uploaded, exit
	// ExitStopped. gpurent run --budget sets it to when the machine will
	// have cost the budget: a run that must not cost more ends with its
	// work in the store, not killed by whoever notices the bill.
	// UntilWhy says why, in the log, the "budget" event and the exit.
	Until       time.Time
	UntilWindow time.Duration
	UntilWhy    i18n.Text
	// Clock is the run's schedule (Until, the restart backoff, when a
	// failing store is tried again, stalls, the lease: see clocks.go);
	// nil: the real one. Files, their quiet periods and polls, the grace
	// and a notice's window are real time.
	Clock clock.Clock
	// Lease is the run's lease in the store (store.TakeLease), renewed
	// every Every while Run runs; once another session takes the run,
	// the command is stopped (exit 1, event "lease_lost"), since nothing
	// it saves would be committed. The store checks it before each
	// commit (store.Hold).
	Lease Lease
	// IdleStop, when above zero, stops a command that has printed nothing
	// (Output), written no new checkpoint and kept no GPU busy (Busy) for
	// this long, as a notice would: asked for a checkpoint, given
	// IdleWindow to write it, stopped, its newest checkpoint uploaded,
	// exit ExitStopped with Exit.Idle set. A machine that finished or
	// hung quietly is billed by the hour; gpurent run --idle-stop then
	// releases it. It needs Output: without the command's output, a run
	// that trains on CPU would look idle.
	IdleStop   time.Duration
	IdleWindow time.Duration
	// Busy says when a GPU of the machine was last busy (zero: not since
	// the start, or no GPU to ask).
	Busy func() time.Time
	// DirLocked says the caller holds CkptDir's lock (LockDir) already:
	// taken before the lease, so that a second run on the directory is
	// refused before it can take the run from the first.
	DirLocked bool
}

// Lease is what Run needs of the run's lease.
type Lease interface {
	Renew(ctx context.Context) error
	Every() time.Duration
}

// ExitNotStored and ExitStopped are the run's own exit codes
// (internal/exitcode says what each means).
const (
	ExitNotStored = exitcode.NotStored
	ExitStopped   = exitcode.Stopped
)

// Exit is how a run ended.
type Exit struct {
	Code   int       // the exit status gpurent should return
	Reason i18n.Text // one line for a person
	// Stored: the newest complete checkpoint is committed in the store,
	// so this machine may go with its disks. Idle: the command was
	// stopped by IdleStop.
	Stored, Idle bool
}

// RuntimeError is a failure of New that is no fault of the command line:
// the run's state in --ckpt-dir could not be read (exit 1, not 2).
type RuntimeError struct{ Err error }

func (e *RuntimeError) Error() string { return e.Err.Error() }
func (e *RuntimeError) Unwrap() error { return e.Err }

// Supervisor runs one Config.
type Supervisor struct {
	cfg   Config
	det   *Detector
	st    *state
	child atomic.Int64 // pid of the running child, 0 when none

	mu         sync.Mutex
	lastCommit time.Time
	commits    int
	uploading  sync.Mutex // one upload at a time
	rotated    int        // uploads in a row whose checkpoint was deleted during them; under uploading
	// heldChecked: the first upload asked the store whether it holds
	// the checkpoint already (Store.Holds); under uploading.
	heldChecked bool
	noticeSaid  bool // an upload longer than the preemption notice was said; under uploading
	behindSaid  bool // uploads falling behind the saves was said; under uploading
	// trimmedFor is the signature of the newest committed checkpoint
	// trimLocal last ran for, and unsureSaid whether it said it keeps
	// entries it cannot tell are checkpoints; both under uploading.
	trimmedFor string
	unsureSaid bool
	// failingSince is the first failed upload since the last success
	// (zero while uploads work), and alarmed whether Event has heard of
	// it; both under uploading.
	failingSince time.Time
	alarmed      bool
	// tries, wait and nextTry pace uploads while they fail: the store
	// is tried again after wait, which doubles up to maxBackoff, with
	// jitter, instead of at every scan; under uploading.
	tries    int
	wait     time.Duration
	nextTry  time.Time
	progress progress       // under mu
	stalled  chan i18n.Text // why the command is taken to hang
	idle     chan i18n.Text // why the command is taken to be idle
	lost     chan error     // why the run's lease was lost (renew, uploading)
	pulled   string         // a checkpoint resume pulled, verified: usable at once
	// deeper: when lookDeeper last looked below --ckpt-dir for
	// checkpoints Scan cannot see, and whether it has said so (once a
	// run); under mu.
	deeperAt   time.Time
	deeperSaid bool
	Metrics    Metrics
	// stopBy, when set, is when a stop must be over: the end of the
	// budget, which the grace after SIGTERM may not run past.
	stopBy time.Time
	// tree marks the processes the command starts (treeVar), so that
	// those that left its process group are ended with it.
	tree string
	// sysRoot is where /proc/self/cgroup and /sys/fs/cgroup are read
	// ("/"; tests give a fake tree).
	sysRoot string
}

// New validates the config and prepares the directory.
func New(cfg Config) (*Supervisor, error) {
	if len(cfg.Cmd) == 0 {
		return nil, i18n.Errorf("run: no command given after --")
	}
	if _, err := exec.LookPath(cfg.Cmd[0]); err != nil {
		// Found out now, not after pulling a checkpoint of many GB for a
		// command that cannot start.
		return nil, i18n.Errorf("run: %w", err)
	}
	if cfg.CkptDir == "" {
		return nil, i18n.Errorf("run: --ckpt-dir is required: the directory the command writes checkpoints to")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real()
	}
	if err := store.ValidRun(cfg.Run); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.CkptDir, 0o755); err != nil {
		return nil, i18n.Errorf("run: %w", err)
	}
	if abs, err := filepath.Abs(cfg.CkptDir); err == nil {
		cfg.CkptDir = abs // the command may change directory; its paths must still hold
	}
	if cfg.CrashLoop <= 0 {
		cfg.CrashLoop = 3
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = 250 * time.Millisecond
	}
	if cfg.Grace <= 0 {
		cfg.Grace = 30 * time.Second
	}
	if cfg.CheckpointSignal == 0 {
		cfg.CheckpointSignal = defaultCheckpointSignal
	}
	if cfg.Poll <= 0 {
		cfg.Poll = time.Second
	}
	if cfg.Quiet <= 0 {
		cfg.Quiet = 5 * time.Second
	}
	if cfg.Stdout == nil {
		cfg.Stdout = os.Stdout
	}
	if cfg.Stderr == nil {
		cfg.Stderr = os.Stderr
	}
	if cfg.Log == nil {
		cfg.Log = func(string, ...any) {}
	}
	if cfg.Event == nil {
		cfg.Event = func(string, i18n.Text) {}
	}
	if cfg.StoreAlarm <= 0 {
		cfg.StoreAlarm = 5 * time.Minute
	}
	st, err := loadState(cfg.CkptDir, cfg.Run)
	if err != nil {
		return nil, &RuntimeError{Err: err}
	}
	s := &Supervisor{cfg: cfg, st: st, det: &Detector{Dir: cfg.CkptDir, Quiet: cfg.Quiet, Glob: cfg.Glob, Exclude: cfg.Exclude}, sysRoot: "/", tree: rand.Text(),
		stalled: make(chan i18n.Text, 1), idle: make(chan i18n.Text, 1), lost: make(chan error, 1)}
	for _, c := range st.Committed {
		if t := time.Unix(c.At, 0); t.After(s.lastCommit) {
			s.lastCommit = t
		}
	}
	return s, nil
}

// Args substitutes the resume path: "{resume}" inside an argument becomes
// the path. Without a checkpoint, an argument that is exactly "{resume}" is
// dropped together with a preceding flag ("--resume_from_checkpoint
// {resume}"), and one that contains it ("ckpt_path={resume}") is dropped.
func Args(args []string, resume string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.Contains(a, "{resume}") {
			out = append(out, a)
			continue
		}
		if resume != "" {
			out = append(out, strings.ReplaceAll(a, "{resume}", resume))
			continue
		}
		if a == "{resume}" && len(out) > 0 && strings.HasPrefix(out[len(out)-1], "-") {
			out = out[:len(out)-1]
		}
	}
	return out
}

// startChild starts the command, resuming from the newest checkpoint,
// with the environment gpurent gives it; its first start is an event.
func (s *Supervisor) startChild(restarts int) (*exec.Cmd, oomWatch, error) {
	resumeFrom := s.resumePoint()
	cmd := exec.Command(s.cfg.Cmd[0], Args(s.cfg.Cmd[1:], resumeFrom)...)
	cmd.Env = append(append(os.Environ(), s.cfg.Env...), "GPURENT_RESUME_FROM="+resumeFrom, "GPURENT_RESTART_COUNT="+strconv.Itoa(restarts),
		"GPURENT_CKPT_DIR="+s.cfg.CkptDir, "GPURENT_RUN="+s.cfg.Run, treeVar+"="+s.tree)
	cmd.Stdout, cmd.Stderr = s.cfg.Stdout, s.cfg.Stderr
	cmd.SysProcAttr = childAttr()
	oom := startOOMWatch(s.sysRoot)
	if err := cmd.Start(); err != nil {
		return nil, oomWatch{}, i18n.Errorf("run: start %s: %w", s.cfg.Cmd[0], err)
	}
	s.child.Store(int64(cmd.Process.Pid))
	s.Metrics.childUp.Store(1)
	s.mu.Lock()
	s.progress.started(s.now())
	s.mu.Unlock()
	select {
	case <-s.stalled: // judged against the command that is gone
	default:
	}
	started := i18n.Textf("started %s (pid %d)", s.cfg.Cmd[0], cmd.Process.Pid)
	if resumeFrom != "" {
		started = i18n.Textf("started %s (pid %d), resuming from %s", s.cfg.Cmd[0], cmd.Process.Pid, resumeFrom)
	}
	s.cfg.Log("%s", started)
	if restarts == 0 {
		if resumeFrom == "" {
			started = i18n.Textf("started %s (pid %d), from the beginning", s.cfg.Cmd[0], cmd.Process.Pid)
		}
		s.cfg.Event("start", started)
	}
	return cmd, oom, nil
}

// causes says what ended the command, when gpurent can tell, as "; "
// and the causes, each logged too.
func (s *Supervisor) causes(oom oomWatch) i18n.Text {
	// What ended it, when gpurent can tell: both are said before the
	// restart, since the same command will meet them again and an exit
	// status alone ("signal: killed") names no cause.
	var causes []i18n.Text
	if full := s.diskFull(); !full.IsZero() {
		causes = append(causes, full)
	}
	if oomed := oom.explain(); !oomed.IsZero() {
		causes = append(causes, oomed)
	}
	if s.cfg.Explain != nil {
		causes = append(causes, s.cfg.Explain()...)
	}
	for _, c := range causes {
		s.cfg.Log("%s", c)
	}
	if len(causes) == 0 {
		return i18n.Text{}
	}
	return i18n.Textf("; %s", i18n.Join(causes, "; "))
}

// Run supervises until the command succeeds, restarts run out, a stop
// signal arrives on stop, or a preemption notice is handled.
func (s *Supervisor) Run(ctx context.Context, stop <-chan os.Signal) (Exit, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if !s.cfg.DirLocked {
		unlock, err := LockDir(s.cfg.CkptDir, s.cfg.Run)
		if err != nil {
			return Exit{Code: 1}, err
		}
		defer unlock()
	}
	if s.cfg.Lease != nil {
		go s.renew(ctx)
	}
	s.Metrics.started.Store(wallNow().UnixNano())
	if c, d := s.untilQuiet(); d > 0 {
		// Written moments ago (by a run gpurent did not see end): it
		// counts once quiet, and deciding before would pull or resume
		// from an older checkpoint.
		s.cfg.Log("%s was modified %v ago: waiting until it has been quiet for %v", c.Name, fileAge(c.ModTime).Round(time.Millisecond), s.det.Quiet)
		select {
		case <-wallAfter(d): // a file's quiet period is on the kernel's clock
		case <-ctx.Done():
			return Exit{Code: 137, Reason: i18n.Textf("abandoned")}, ctx.Err()
		case sig := <-stop:
			return Exit{Code: 128 + int(sig.(syscall.Signal)), Reason: i18n.Textf("stopped by %v before the command started", sig)}, nil
		}
	}
	if err := s.resume(ctx); err != nil {
		return Exit{Code: 1}, err
	}
	if c, ok, _ := s.det.Newest(); ok {
		s.progress.sig = c.Signature() // there before: not progress
		s.Metrics.lastCheckpoint.Store(c.ModTime.Unix())
	}
	// The uploader ends with Run: a push of this run still going after
	// it (a supervisor cancelled and another started in the same
	// process) would race the next one's clean-up of leftovers.
	wctx, wcancel := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		s.watch(wctx)
	}()
	defer func() {
		wcancel()
		<-watched
	}()
	var notices <-chan preempt.Notice
	if s.cfg.Preemption != nil {
		notices = s.cfg.Preemption.Watch(ctx)
	}
	var until <-chan time.Time
	if !s.cfg.Until.IsZero() {
		t := s.cfg.Clock.NewTimer(s.cfg.Until.Sub(s.cfg.Clock.Now()))
		defer t.Stop()
		until = t.C()
	}
	restarts, quietRestarts := 0, 0
	lastSeen := s.newestSeen()
	backoff := s.cfg.Backoff
	for {
		commitsBefore := s.commitCount()
		cmd, oom, err := s.startChild(restarts)
		if err != nil {
			return Exit{Code: 127}, err
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		var werr error
	running:
		for {
			select {
			case <-ctx.Done():
				// Abandoned (the caller's context ended): the command dies
				// with the supervisor, nothing more is uploaded, as if
				// gpurent had been killed.
				s.signal(syscall.SIGKILL)
				<-done
				s.child.Store(0)
				return Exit{Code: 137, Reason: i18n.Textf("abandoned")}, ctx.Err()
			case werr = <-done:
				break running
			case sig := <-stop:
				fwd := sig.(syscall.Signal)
				if fwd == syscall.SIGHUP {
					// The terminal closed (an SSH connection dropped):
					// the command is asked to stop the way trainers
					// expect, with SIGTERM, and saves what it can.
					fwd = syscall.SIGTERM
					s.cfg.Log("received %v (the terminal closed): stopping the command with %v", sig, fwd)
				} else {
					s.cfg.Log("received %v: stopping the command", sig)
				}
				s.stopChild(done, fwd)
				f := s.finalUpload(ctx)
				return Exit{Code: 128 + int(sig.(syscall.Signal)), Stored: s.stored(f), Reason: i18n.Textf("stopped by %v; %s", sig, s.finalWords(f))}, nil
			case why := <-s.stalled:
				s.cfg.Log("%s: the command is taken to hang, and is stopped to restart from its newest checkpoint", why)
				s.stopChild(done, syscall.SIGTERM)
				werr = i18n.Errorf("stalled: %s", why)
				break running
			case <-until:
				return s.untilCame(ctx, done), nil
			case why := <-s.idle:
				return s.idleCame(ctx, why, done), nil
			case why := <-s.lost:
				// Another session of the run took it over: what this one
				// saves is committed nowhere, so it stops rather than
				// spend the machine on work that is lost.
				s.cfg.Log("%v; stopping the command", why)
				s.cfg.Event("lease_lost", i18n.Textf("%v; the command is stopped", why))
				s.stopChild(done, syscall.SIGTERM)
				return Exit{Code: 1, Reason: i18n.Textf("%v; the command was stopped", why)}, nil
			case n := <-notices:
				if !n.Advisory {
					return s.preempted(ctx, n, done), nil
				}
				s.cfg.Log("%s from %s: asking the command for a checkpoint; it trains on", n.Detail, n.Cloud)
				s.askForCheckpoint()
			}
		}
		s.child.Store(0)
		s.Metrics.childUp.Store(0)
		if werr == nil {
			f := s.finalUpload(ctx)
			return Exit{Code: s.endCode(0, f), Stored: s.stored(f), Reason: i18n.Textf("the command finished; %s", s.finalWords(f))}, nil
		}
		s.endStrays(cmd.Process.Pid)
		restarts++
		s.Metrics.restarts.Add(1)
		cause := s.causes(oom)
		// Progress is a checkpoint committed since the start, or one the
		// command wrote before it failed: still inside --quiet when it
		// did, it counts once the quiet period is over (the restart waits
		// for that), and a command that saves, fails and resumes from it
		// each time is no crash loop.
		seen := s.newestSeen()
		if s.commitCount() == commitsBefore && seen == lastSeen {
			quietRestarts++
		} else {
			quietRestarts = 0
		}
		lastSeen = seen
		if restarts > s.cfg.MaxRestarts {
			f := s.finalUpload(ctx)
			return Exit{Code: 1, Stored: s.stored(f), Reason: i18n.Textf("the command failed (%v) and the %s allowed are used up%s; %s", werr, i18n.Plural(s.cfg.MaxRestarts, "%d restart", "%d restarts"), cause, s.finalWords(f))}, nil
		}
		if quietRestarts >= s.cfg.CrashLoop {
			f := s.finalUpload(ctx)
			return Exit{Code: 1, Stored: s.stored(f), Reason: i18n.Textf("crash loop: the command failed %s in a row (%v) without a new checkpoint; fix it before restarting%s; %s",
				i18n.Plural(quietRestarts, "%d time", "%d times"), werr, cause, s.finalWords(f))}, nil
		}
		wait, after := backoff, s.after
		if c, d := s.untilQuiet(); d > wait {
			// A checkpoint written just before the crash would count only
			// after its quiet period: restarting sooner would resume from
			// an older one (or the beginning) and redo the work.
			wait, after = d, wallAfter // a file's quiet period is on the kernel's clock
			s.cfg.Log("the command failed (%v); restart %d in %v, once %s has been quiet for %v", werr, restarts, wait.Round(time.Millisecond), c.Name, s.det.Quiet)
		} else {
			s.cfg.Log("the command failed (%v); restart %d in %v", werr, restarts, backoff)
		}
		s.cfg.Event("restart", i18n.Textf("the command failed (%v)%s; restart %d of %d", werr, cause, restarts, s.cfg.MaxRestarts))
		select {
		case <-after(wait):
		case <-ctx.Done():
			return Exit{Code: 137, Reason: i18n.Textf("abandoned")}, ctx.Err()
		case sig := <-stop:
			f := s.finalUpload(ctx)
			return Exit{Code: 128 + int(sig.(syscall.Signal)), Stored: s.stored(f), Reason: i18n.Textf("stopped by %v between restarts; %s", sig, s.finalWords(f))}, nil
		case why := <-s.lost:
			s.cfg.Log("%v; the command is not restarted", why)
			s.cfg.Event("lease_lost", i18n.Textf("%v; the command, which had failed, is not restarted", why))
			return Exit{Code: 1, Reason: i18n.Textf("%v; the command, which had failed, was not restarted", why)}, nil
		case <-until:
			s.cfg.Log("%s: the command is not restarted", s.cfg.UntilWhy)
			s.cfg.Event("budget", i18n.Textf("%s: the command, which had failed, is not restarted", s.cfg.UntilWhy))
			f := s.finalUpload(ctx)
			return Exit{Code: s.endCode(ExitStopped, f), Stored: s.stored(f), Reason: i18n.Textf("%s, between restarts: %s; run the same gpurent run again to go on", s.cfg.UntilWhy, s.finalWords(f))}, nil
		}
		backoff = min(2*backoff, 30*time.Second)
	}
}

// endStrays stops what a failed command left running in its process group
// (pgid, the command's pid): ranks started by mp.spawn that outlive a
// crashed rank 0 and wait in a collective for NCCL's timeout, a launcher's
// workers, a server it started. They hold GPU memory and ports, so the
// restart would fail on them (CUDA out of memory, address in use) and the
// run end in a crash loop. They get SIGTERM, and SIGKILL after --stop-grace.
// Members that are this process's children (gpurent as PID 1 when
// initproc could not start it as a child) are reaped, or they would stay
// zombies.
func (s *Supervisor) endStrays(pgid int) {
	proc := filepath.Join(s.sysRoot, "proc")
	live := func() []int {
		reapGroup(pgid)
		pids, err := groupLive(proc, pgid)
		if err != nil && kill(-pgid, 0) == nil {
			return []int{0} // no /proc: the group has members, which ones unknown
		}
		// And those that moved to a group or session of their own: they
		// hold the GPU, ports and the output pipe (gpurent run | tee
		// would never end) as much as the rest.
		for _, p := range markedLive(proc, s.tree, os.Getpid()) {
			if !slices.Contains(pids, p) {
				pids = append(pids, p)
			}
		}
		return pids
	}
	pids := live()
	if len(pids) == 0 {
		return
	}
	which := "pid " + joinInts(pids)
	if pids[0] == 0 {
		which = "process group " + strconv.Itoa(pgid)
	}
	s.cfg.Log("the command left %s running (%s): SIGTERM now, SIGKILL after %v, so that the restart finds their GPU memory and ports free",
		i18n.Plural(len(pids), "%d process", "%d processes"), which, s.cfg.Grace)
	for i, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		kill(-pgid, sig)
		for _, p := range markedLive(proc, s.tree, os.Getpid()) {
			kill(p, sig)
		}
		wait := s.cfg.Grace
		if !s.stopBy.IsZero() {
			wait = min(wait, max(s.stopBy.Sub(s.cfg.Clock.Now()), 0)) // within the budget
		}
		if i == 1 {
			wait = 5 * time.Second
		}
		for deadline := wallNow().Add(wait); wallNow().Before(deadline); wallSleep(50 * time.Millisecond) {
			if len(live()) == 0 {
				return
			}
		}
	}
	s.cfg.Log("warning: %s the command started outlived SIGKILL (stuck in the kernel, as a process in a GPU driver call can be): the restart may not find their GPU memory free", i18n.Plural(len(live()), "%d process", "%d processes"))
}

// completeAt is the complete checkpoint at path, or false.
func (s *Supervisor) completeAt(path string) (Candidate, bool) {
	cs, _ := s.det.Scan()
	for _, c := range cs {
		if c.Path == path && c.Complete {
			return c, true
		}
	}
	return Candidate{}, false
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}

// diskFull says so when the checkpoint directory's file system is nearly
// full (under 64 MiB or 1% free): the likeliest reason a command that
// writes checkpoints starts failing. Empty otherwise.
func (s *Supervisor) diskFull() i18n.Text {
	free, total, err := fsspace.Of(s.cfg.CkptDir)
	if err != nil || total == 0 {
		return i18n.Text{}
	}
	if free >= 64<<20 && free >= total/100 {
		return i18n.Text{}
	}
	var hint i18n.Text
	if s.cfg.Store != nil && s.cfg.KeepLocal == 0 {
		hint = i18n.Textf("; --keep-local 2 deletes older ones once a newer one is in the store")
	}
	return i18n.Textf("the disk under %s is full (%.1f MiB free of %.1f MiB): delete old local checkpoints (committed ones are in the store) or give the command more room%s",
		s.cfg.CkptDir, float64(free)/(1<<20), float64(total)/(1<<20), hint)
}

// resumePoint is the newest checkpoint the command can resume from: one
// that is complete, or one already committed (known whole even while its
// quiet period runs), or the one resume pulled.
func (s *Supervisor) resumePoint() string {
	cs, _ := s.det.Scan()
	for _, c := range cs {
		if c.Complete || (c.Why != "" && !strings.Contains(c.Why, "open for writing") && s.st.isCommitted(c)) {
			return c.Path
		}
	}
	return s.pulled
}

// untilQuiet is how long until the newest candidate, complete but for its
// quiet period, counts as complete; 0 when there is none. The quiet period
// tells a checkpoint still being written from a finished one; waiting it out
// once before a restart is cheaper than resuming from an older checkpoint.
func (s *Supervisor) untilQuiet() (Candidate, time.Duration) {
	cs, _ := s.det.Scan()
	if len(cs) == 0 || cs[0].Complete || cs[0].Why != whyRecent {
		return Candidate{}, 0
	}
	// A little past the boundary, so the next scan finds it complete.
	return cs[0], s.det.Quiet - fileAge(cs[0].ModTime) + 20*time.Millisecond
}

// newestSeen is the signature of the newest checkpoint in the directory,
// complete or only inside its quiet period ("" when none).
func (s *Supervisor) newestSeen() string {
	cs, _ := s.det.Scan()
	for _, c := range cs {
		if c.Complete || c.Why == whyRecent {
			return c.Signature()
		}
	}
	return ""
}

func (s *Supervisor) commitCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.commits
}

// watch uploads each new complete checkpoint, never blocking the command:
// it scans soon after file events and, for what events cannot tell (a
// quiet period ending, a file system without events), every Poll.
func (s *Supervisor) watch(ctx context.Context) {
	// Polls look at files, which change in real time.
	t := wallTicker(s.cfg.Poll)
	defer t.Stop()
	events := s.notify(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-events:
		}
		if s.uploadDue(s.now()) {
			s.uploadNewest(ctx)
		}
		s.lookDeeper(false)
		s.checkStall(s.now())
	}
}

// maxBackoff is the longest wait between tries of a store that fails.
const maxBackoff = 5 * time.Minute

// backoff is the wait after one more failure: twice the last, from poll
// (a second at least) up to maxBackoff.
func backoff(last, poll time.Duration) time.Duration {
	if last <= 0 {
		return max(poll, time.Second)
	}
	return min(2*last, maxBackoff)
}
