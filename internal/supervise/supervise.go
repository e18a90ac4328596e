package supervise

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	mrand "math/rand/v2"
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
	"github.com/gpurent/gpurent/internal/report"
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
	// Clock is what Until and the stop it starts are judged by; nil: the
	// real one. The rest (quiet periods, backoff, grace) is real time.
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
	s.progress.started(time.Now())
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
	s.Metrics.started.Store(time.Now().UnixNano())
	if c, d := s.untilQuiet(); d > 0 {
		// Written moments ago (by a run gpurent did not see end): it
		// counts once quiet, and deciding before would pull or resume
		// from an older checkpoint.
		s.cfg.Log("%s was modified %v ago: waiting until it has been quiet for %v", c.Name, time.Since(c.ModTime).Round(time.Millisecond), s.det.Quiet)
		select {
		case <-time.After(d):
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
		wait := backoff
		if c, d := s.untilQuiet(); d > wait {
			// A checkpoint written just before the crash would count only
			// after its quiet period: restarting sooner would resume from
			// an older one (or the beginning) and redo the work.
			wait = d
			s.cfg.Log("the command failed (%v); restart %d in %v, once %s has been quiet for %v", werr, restarts, wait.Round(time.Millisecond), c.Name, s.det.Quiet)
		} else {
			s.cfg.Log("the command failed (%v); restart %d in %v", werr, restarts, backoff)
		}
		s.cfg.Event("restart", i18n.Textf("the command failed (%v)%s; restart %d of %d", werr, cause, restarts, s.cfg.MaxRestarts))
		select {
		case <-time.After(wait):
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
		for deadline := time.Now().Add(wait); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
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
	return cs[0], s.det.Quiet - time.Since(cs[0].ModTime) + 20*time.Millisecond
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

// signal sends sig to the child's process group.
func (s *Supervisor) signal(sig syscall.Signal) {
	if pid := s.child.Load(); pid > 0 {
		kill(-int(pid), sig)
	}
}

// stopChild forwards sig, waits the grace period, then kills the group.
func (s *Supervisor) stopChild(done <-chan error, sig syscall.Signal) {
	pid := s.child.Load()
	s.signal(sig)
	grace := s.cfg.Grace
	if !s.stopBy.IsZero() {
		// A budget's stop keeps the grace inside the budget: SIGKILL
		// when it is spent, not --stop-grace after SIGTERM.
		grace = min(grace, max(s.stopBy.Sub(s.cfg.Clock.Now()), 0))
	}
	select {
	case <-done:
	case <-time.After(grace):
		s.signal(syscall.SIGKILL)
		<-done
	}
	s.child.Store(0)
	s.Metrics.childUp.Store(0)
	if pid > 0 {
		s.endStrays(int(pid))
	}
}

// preempted handles a notice: ask for a checkpoint now, wait for it within
// the notice, upload it, stop the command.
func (s *Supervisor) preempted(ctx context.Context, n preempt.Notice, done <-chan error) Exit {
	s.Metrics.notices.Add(1)
	what := i18n.Textf("preemption notice")
	if n.Event != "" {
		what = i18n.Textf("%s notice", n.Event)
	}
	s.cfg.Log("%s from %s (%s): asking the command for a checkpoint", what, n.Cloud, n.Detail)
	s.cfg.Event("notice", i18n.Textf("%s from %s (%s): saving a checkpoint and stopping the command", what, n.Cloud, n.Detail))
	f := s.checkpointAndStop(ctx, n.Left, done)
	safe := f.committed
	// Only a machine whose newest checkpoint is in the store may be let go
	// early; otherwise the time to NotBefore is left for nothing but the
	// chance that a disk kept by a deallocation holds it.
	if n.Approve != nil && safe {
		if err := n.Approve(ctx); err != nil {
			s.cfg.Log("could not let %s start the event early (it starts at its time): %v", n.Cloud, err)
		} else {
			s.cfg.Log("told %s the machine may go now", n.Cloud)
		}
	}
	if n.Event != "" {
		return Exit{Code: s.endCode(ExitStopped, f), Stored: s.stored(f), Reason: i18n.Textf("%s scheduled (%s): %s, command stopped; run the same gpurent run again once the machine is back, or on another", n.Event, n.Cloud, s.finalWords(f))}
	}
	return Exit{Code: s.endCode(ExitStopped, f), Stored: s.stored(f), Reason: i18n.Textf("preempted (%s): %s, command stopped; run the same gpurent run again to resume, here once the machine is back or on another", n.Cloud, s.finalWords(f))}
}

// untilCame stops the command at Config.Until, as a notice of
// UntilWindow would.
func (s *Supervisor) untilCame(ctx context.Context, done <-chan error) Exit {
	s.stopBy = s.cfg.Until.Add(s.cfg.UntilWindow)
	s.cfg.Log("%s: asking the command for a checkpoint, then stopping it", s.cfg.UntilWhy)
	s.cfg.Event("budget", i18n.Textf("%s: saving a checkpoint and stopping the command", s.cfg.UntilWhy))
	f := s.checkpointAndStop(ctx, s.cfg.UntilWindow, done)
	return Exit{Code: s.endCode(ExitStopped, f), Stored: s.stored(f), Reason: i18n.Textf("%s: %s, command stopped; run the same gpurent run again to go on", s.cfg.UntilWhy, s.finalWords(f))}
}

// idleCame stops an idle command as a notice of IdleWindow would.
func (s *Supervisor) idleCame(ctx context.Context, why i18n.Text, done <-chan error) Exit {
	s.cfg.Log("%s: asking the command for a checkpoint, then stopping it", why)
	s.cfg.Event("idle", i18n.Textf("%s: saving a checkpoint and stopping the command", why))
	f := s.checkpointAndStop(ctx, s.cfg.IdleWindow, done)
	return Exit{Code: s.endCode(ExitStopped, f), Idle: true, Stored: s.stored(f),
		Reason: i18n.Textf("%s: %s, command stopped", why, s.finalWords(f))}
}

// stored says whether f leaves the newest complete checkpoint in the store.
func (s *Supervisor) stored(f final) bool { return s.cfg.Store != nil && f.found && f.committed }

// checkpointAndStop asks the command for a checkpoint, waits for it within
// left (the time a notice gives), stops the command and uploads the newest
// checkpoint.
func (s *Supervisor) checkpointAndStop(ctx context.Context, left time.Duration, done <-chan error) final {
	// The command was asked for a checkpoint and the notice is short (30 s
	// on GCP and Azure): a plain file no process holds open for writing
	// needs only a second of quiet now, not --quiet.
	s.uploading.Lock()
	s.det.Quiet = min(s.det.Quiet, time.Second)
	s.uploading.Unlock()
	before, _, _ := s.det.Newest()
	deadline := time.Now().Add(max(left-5*time.Second, left/2))
	if asked := s.askForCheckpoint(); asked == 0 {
		// Nothing can checkpoint on demand: a checkpoint being written
		// may still finish, so the command runs on for half the notice,
		// and the other half is left to stop it and upload.
		deadline = time.Now().Add(left / 2)
		s.cfg.Log("the command runs on for %v, so that a checkpoint it is writing can finish", (left / 2).Round(time.Second))
	}
	exited := false
	for time.Now().Before(deadline) && !exited {
		c, ok, _ := s.det.Newest()
		if ok && c.Signature() != before.Signature() {
			break
		}
		select {
		case <-time.After(s.cfg.Poll / 4):
		case <-done:
			// Saved and exited, as SLURM-style handlers do: done is
			// drained, so stopChild must not wait on it again.
			exited = true
		}
	}
	if exited {
		pid := s.child.Load()
		s.signal(syscall.SIGTERM) // what the command started and left behind
		s.child.Store(0)
		s.Metrics.childUp.Store(0)
		if pid > 0 {
			s.endStrays(int(pid))
		}
	} else {
		s.stopChild(done, syscall.SIGTERM)
	}
	return s.finalUpload(ctx)
}

// finalWords says what the last upload achieved, for an exit reason: a
// message that said "uploaded" after a failed upload, or with no store,
// would send someone to release a machine that holds the only copy.
func (s *Supervisor) finalWords(f final) i18n.Text {
	switch {
	case !f.found:
		return i18n.Textf("no complete checkpoint was written")
	case s.cfg.Store == nil:
		return i18n.Textf("no store given: checkpoints are only in %s", s.cfg.CkptDir)
	case f.committed && f.id != "":
		// Named, so that the end's notification says what to pull.
		return i18n.Textf("newest complete checkpoint uploaded (%s, as %s)", f.name, f.id)
	case f.committed:
		return i18n.Textf("newest complete checkpoint uploaded")
	default:
		return i18n.Textf("the newest checkpoint is NOT in the store (its upload failed, see above): it is only in %s", s.cfg.CkptDir)
	}
}

// endCode is the status of a run that ended as it should (the command
// finished, or stopped on a notice): code, unless a store was given and
// the newest complete checkpoint is not in it.
func (s *Supervisor) endCode(code int, f final) int {
	if s.cfg.Store != nil && f.found && !f.committed {
		return ExitNotStored
	}
	return code
}

// askForCheckpoint sends the checkpoint signal to each process of the
// command's group that catches it, and returns how many got it. Where /proc
// cannot tell, the whole group gets it, as before there was a /proc to ask.
func (s *Supervisor) askForCheckpoint() int {
	pid := int(s.child.Load())
	if pid <= 0 {
		return 0
	}
	sig := s.cfg.CheckpointSignal
	pids, members, err := groupCatching("/proc", pid, sig)
	if err != nil {
		s.cfg.Log("cannot tell which processes handle %v (%v): sending it to all of them", sig, err)
		s.signal(sig)
		return 1
	}
	if members == 0 {
		return 0 // gone already
	}
	if len(pids) == 0 {
		s.cfg.Log("the command does not handle %v, so it cannot checkpoint on demand (docs/run.md shows the few lines that let it); it is not sent, since it would kill the command", sig)
		return 0
	}
	for _, p := range pids {
		kill(p, sig)
	}
	if len(pids) < members {
		s.cfg.Log("sent %v to the %d of %d processes that handle it", sig, len(pids), members)
	}
	return len(pids)
}

// watch uploads each new complete checkpoint, never blocking the command:
// it scans soon after file events and, for what events cannot tell (a
// quiet period ending, a file system without events), every Poll.
func (s *Supervisor) watch(ctx context.Context) {
	t := time.NewTicker(s.cfg.Poll)
	defer t.Stop()
	events := s.notify(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-events:
		}
		if s.uploadDue(time.Now()) {
			s.uploadNewest(ctx)
		}
		s.lookDeeper(false)
		s.checkStall(time.Now())
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

// uploadDue says whether a scan at now may try an upload: always, but
// while uploads fail, only once the backoff has passed.
func (s *Supervisor) uploadDue(now time.Time) bool {
	s.uploading.Lock()
	defer s.uploading.Unlock()
	return s.failingSince.IsZero() || !now.Before(s.nextTry)
}

// progress is what stall detection knows: the newest complete checkpoint
// seen, when the command last made one (or started), and the intervals
// between its checkpoints.
type progress struct {
	sig     string
	at      time.Time       // the last new checkpoint, or the command's start
	startAt time.Time       // the command's (re)start
	gaps    []time.Duration // the last intervals between new checkpoints of one start
	said    bool            // this stall was reported

	// Output, where Config.Output tells it: the command's last output of
	// this start, how many times it was seen to print (every start), the
	// longest silence between its outputs of one start, and whether the
	// present silence was reported.
	outAt     time.Time
	outs      int
	longest   time.Duration
	quietSaid bool
	idleSaid  bool // the command is being stopped as idle
}

// idleSince is when the command last showed life, a busy GPU counted.
func (p *progress) idleSince(busy time.Time) time.Time {
	if t := p.silentSince(); t.After(busy) {
		return t
	}
	return busy
}

// started resets progress for a new start of the command.
func (p *progress) started(now time.Time) {
	p.at, p.startAt, p.said = now, now, false
	p.outAt, p.quietSaid = time.Time{}, false
}

// heard records the time of the command's last output, as Config.Output
// tells it when asked (every Poll, so a silence is known to the poll).
// Output from before this start is the previous command's.
func (p *progress) heard(last time.Time) {
	if !last.After(p.outAt) || last.Before(p.startAt) {
		return
	}
	if !p.outAt.IsZero() {
		p.longest = max(p.longest, last.Sub(p.outAt))
	}
	p.outAt, p.outs, p.quietSaid = last, p.outs+1, false
}

// silentSince is when the command last showed life: its last output, its
// last new checkpoint, or its start.
func (p *progress) silentSince() time.Time {
	if p.outAt.After(p.at) {
		return p.outAt
	}
	return p.at
}

// silenceLimit is how long without output (or a new checkpoint) makes a
// stall: --silence when given, else, once the command has printed ten
// times, three times its longest silence so far and at least 30 min (a
// first evaluation may print nothing for longer than any step did), else
// none: a command that prints a few lines and then trains quietly is not
// hanging.
func (p *progress) silenceLimit(silence time.Duration) time.Duration {
	if silence > 0 {
		return silence
	}
	if p.outs >= 10 {
		return max(3*p.longest, 30*time.Minute)
	}
	return 0
}

// saw records the newest complete checkpoint; a new signature is
// progress, and reported.
func (p *progress) saw(c Candidate, now time.Time) bool {
	sig := c.Signature()
	if sig == p.sig {
		return false
	}
	p.sig = sig
	if !p.startAt.IsZero() && p.at.After(p.startAt) {
		p.gaps = append(p.gaps, now.Sub(p.at))
		if len(p.gaps) > 16 {
			p.gaps = p.gaps[1:]
		}
	}
	p.at, p.said = now, false
	return true
}

// usual is the median interval between checkpoints, once three are known.
func (p *progress) usual() time.Duration {
	if len(p.gaps) < 3 {
		return 0
	}
	g := slices.Clone(p.gaps)
	slices.Sort(g)
	return g[len(g)/2]
}

// limit is how long without a new checkpoint makes a stall: --stall when
// given, else three times the usual interval and at least 30 min (a
// checkpoint every 5 min says nothing about a 20 min evaluation), else
// none until the usual interval is known.
func (p *progress) limit(stall time.Duration) time.Duration {
	if stall > 0 {
		return stall
	}
	if u := p.usual(); u > 0 {
		return max(3*u, 30*time.Minute)
	}
	return 0
}

// checkStall reports a command that has made no new checkpoint, or
// printed nothing, for long: with --stall or --silence it is stopped and
// restarted; without, it is said once.
func (s *Supervisor) checkStall(now time.Time) {
	if s.child.Load() == 0 {
		return
	}
	var lastOut time.Time
	if s.cfg.Output != nil {
		lastOut = s.cfg.Output()
	}
	s.mu.Lock()
	p := &s.progress
	p.heard(lastOut)
	if !p.outAt.IsZero() {
		s.Metrics.lastOutput.Store(p.outAt.Unix())
	}
	// A stall is said once per silence: the checkpoint rule and the output
	// rule see the same hang, and the first to see it speaks. --stall and
	// --silence act even after a warning.
	var why, warn i18n.Text
	if idle, limit := now.Sub(p.at), p.limit(s.cfg.Stall); limit > 0 && idle >= limit && !p.said {
		switch {
		case s.cfg.Stall > 0:
			why = i18n.Textf("no new checkpoint for %v (--stall %v)", idle.Round(time.Second), s.cfg.Stall)
		case !p.quietSaid:
			warn = i18n.Textf("no new checkpoint for %v, while they came every %v until now: the command may hang (an NCCL collective waiting on a dead rank, a stuck DataLoader) while the GPUs are billed; --stall DURATION restarts it then",
				idle.Round(time.Second), p.usual().Round(time.Second))
		}
		p.said = !why.IsZero() || !warn.IsZero()
	}
	if idle, limit := now.Sub(p.silentSince()), p.silenceLimit(s.cfg.Silence); s.cfg.Output != nil && why.IsZero() && limit > 0 && idle >= limit && !p.quietSaid {
		switch {
		case s.cfg.Silence > 0:
			why = i18n.Textf("no output and no new checkpoint for %v (--silence %v)", idle.Round(time.Second), s.cfg.Silence)
		case !p.said:
			warn = i18n.Textf("no output and no new checkpoint for %v, while it never went %v without printing until now: the command may hang (an NCCL collective waiting on a dead rank, a stuck DataLoader) while the GPUs are billed; --silence DURATION restarts it then",
				idle.Round(time.Second), p.longest.Round(time.Second))
		}
		p.quietSaid = !why.IsZero() || !warn.IsZero()
	}
	if !why.IsZero() {
		p.said, p.quietSaid = true, true // the command is being stopped: once is enough
	}
	var idle i18n.Text
	if s.cfg.IdleStop > 0 && s.cfg.Output != nil && why.IsZero() && !p.idleSaid {
		var busy time.Time
		if s.cfg.Busy != nil {
			busy = s.cfg.Busy()
		}
		if since := p.idleSince(busy); now.Sub(since) >= s.cfg.IdleStop {
			p.idleSaid = true
			idle = i18n.Textf("idle for %v: no output, no new checkpoint and no busy GPU (--idle-stop %v)", now.Sub(since).Round(time.Second), s.cfg.IdleStop)
		}
	}
	s.mu.Unlock()
	if !idle.IsZero() {
		select {
		case s.idle <- idle:
		default:
		}
		return
	}
	switch {
	case !why.IsZero():
		s.Metrics.stalls.Add(1)
		s.cfg.Event("stall", i18n.Textf("%s: restarting the command from its newest checkpoint", why))
		select {
		case s.stalled <- why:
		default:
		}
	case !warn.IsZero():
		s.Metrics.stalls.Add(1)
		s.cfg.Log("warning: %s", warn)
		s.cfg.Event("stall", warn)
	}
}

// lookDeeper warns, once, when --ckpt-dir itself holds no checkpoint but
// one sits further down (Lightning's lightning_logs/version_N/checkpoints/):
// otherwise a run believed protected uploads nothing for weeks. Until a
// checkpoint counts or it has warned, it looks every 5 s, and always when
// force is set (the command has ended).
func (s *Supervisor) lookDeeper(force bool) {
	if s.commitCount() > 0 {
		return
	}
	s.mu.Lock()
	if s.deeperSaid || !force && time.Since(s.deeperAt) < 5*time.Second {
		s.mu.Unlock()
		return
	}
	s.deeperAt = time.Now()
	s.mu.Unlock()
	s.uploading.Lock() // the detector's settings are the uploader's
	cs, err := s.det.Scan()
	p := ""
	if err == nil && len(cs) == 0 {
		// File systems stamp times from a coarser clock than time.Now
		// (Linux's lags by up to a jiffy, ext3 keeps seconds, FAT two,
		// NFS the server's): a file the command wrote at once could
		// otherwise look older than the run.
		p = s.det.Deeper(20000, time.Unix(0, s.Metrics.started.Load()).Add(-2*time.Second))
	}
	s.uploading.Unlock()
	if p == "" {
		return
	}
	s.mu.Lock()
	said := s.deeperSaid
	s.deeperSaid = true
	s.mu.Unlock()
	if said {
		return
	}
	what := i18n.Textf("entries")
	if s.det.Glob != "" {
		what = i18n.Textf("names matching --glob %q", s.det.Glob)
	}
	var hint i18n.Text
	if strings.Contains(p, "lightning_logs") {
		hint = i18n.Textf(" (for Lightning, ModelCheckpoint(dirpath=...): its default, lightning_logs/version_N/checkpoints, moves with every start)")
	}
	s.cfg.Log("warning: nothing in %s is a checkpoint, so nothing is uploaded: gpurent looks only at the %s directly in --ckpt-dir, and %s is further down. Point --ckpt-dir at the directory the checkpoints are saved in%s", s.cfg.CkptDir, what, p, hint)
}

// uploadNewest pushes the newest complete checkpoint unless it is already
// committed; returns whether the newest complete one is now committed.
func (s *Supervisor) uploadNewest(ctx context.Context) bool {
	s.uploading.Lock()
	defer s.uploading.Unlock()
	cs, err := s.det.Scan()
	i := slices.IndexFunc(cs, func(c Candidate) bool { return c.Complete })
	if err != nil || i < 0 {
		return true // nothing complete to upload (as Newest says it)
	}
	c := cs[i]
	now := time.Now()
	s.mu.Lock()
	progressed := s.progress.saw(c, now)
	s.mu.Unlock()
	if progressed {
		s.Metrics.lastCheckpoint.Store(now.Unix())
	}
	if s.st.isCommitted(c) {
		s.trimLocal(c)
		return true
	}
	if s.cfg.Store == nil {
		s.commitLocal(c, "")
		return true
	}
	if !s.heldChecked {
		// The first upload of a session: the store may hold it already,
		// pushed by gpurent ckpt push before the run started.
		s.heldChecked = true
		if m, ok := s.cfg.Store.Holds(ctx, s.cfg.Run, c.Path); ok {
			s.cfg.Log("%s is in the store already, as %s (the same files, pushed before): not uploaded again", c.Name, m.ID)
			s.commitLocal(c, m.ID)
			s.trimLocal(c)
			return true
		}
	}
	start := time.Now()
	m, err := s.cfg.Store.Push(ctx, c.Path, s.cfg.Run)
	if err != nil {
		if _, gone := os.Lstat(c.Path); errors.Is(gone, fs.ErrNotExist) && ctx.Err() == nil {
			// Trainers delete older checkpoints as they save new ones
			// (the Trainer's save_total_limit, Lightning's save_top_k):
			// no fault of the store's, and nothing to retry.
			s.cfg.Log("%s was deleted while it was uploaded (by the command, as trainers rotate checkpoints); the newest one is uploaded next", c.Name)
			if s.rotated++; s.rotated == 2 {
				// Every upload overtaken: with a limit of one or two
				// checkpoints kept and uploads slower than saves,
				// none would ever reach the store.
				s.cfg.Log("warning: %d checkpoints in a row were deleted before their upload finished, so the store may never get one: keep more of them locally (save_total_limit, save_top_k: 2 or more), save less often, or raise --bwlimit", s.rotated)
			}
			return false
		}
		if errors.Is(err, store.ErrLeaseLost) {
			s.leaseLost(err)
			return false
		}
		if errors.Is(err, store.ErrChanged) && ctx.Err() == nil {
			// The command saved again in place while the file was read:
			// the copy may mix two versions, so the push committed
			// nothing. No fault of the store's: the next scan takes the
			// new version once it is whole.
			s.cfg.Log("%s changed during its upload; not committed, uploaded again at the next scan (%v)", c.Name, err)
			return false
		}
		s.rotated = 0
		s.Metrics.uploadErrors.Add(1)
		now := time.Now()
		if s.failingSince.IsZero() {
			// One line when it starts, one when it ends (below):
			// an hour's outage is not thousands of lines.
			s.failingSince, s.tries, s.wait = start, 0, 0
			if store.IsUnreachable(err) {
				s.cfg.Log("the store does not answer (training goes on; uploads are tried again less and less often, at least every %v): %s", maxBackoff, store.Brief(err))
			} else {
				s.cfg.Log("upload of %s failed (training goes on; tried again less and less often, at least every %v): %v", c.Name, maxBackoff, err)
			}
		}
		s.tries++
		s.wait = backoff(s.wait, s.cfg.Poll)
		s.nextTry = now.Add(min(s.wait+mrand.N(s.wait/2+1), maxBackoff))
		if !s.alarmed && now.Sub(s.failingSince) >= s.cfg.StoreAlarm {
			s.alarmed = true
			s.cfg.Event("store_failing", i18n.Textf("no checkpoint has reached the store for %v (training goes on; retried): %v",
				now.Sub(s.failingSince).Round(time.Second), err))
		}
		return false
	}
	// The checkpoint may have changed while it was read: only a signature
	// that still holds is recorded as committed.
	if again, ok, _ := s.det.Newest(); ok && again.Path == c.Path && again.Signature() != c.Signature() {
		s.cfg.Log("%s changed during its upload; it will be uploaded again", c.Name)
		return false
	}
	s.rotated = 0
	s.behind(c, cs, time.Since(start))
	if s.alarmed {
		s.cfg.Event("store_ok", i18n.Textf("uploads work again after %v: committed %s", time.Since(s.failingSince).Round(time.Second), c.Name))
	} else if !s.failingSince.IsZero() {
		s.cfg.Log("the store is back after %v (%s): committing %s", time.Since(s.failingSince).Round(time.Second), report.Count(s.tries+1, "try"), c.Name)
	}
	s.failingSince, s.alarmed, s.tries, s.wait, s.nextTry = time.Time{}, false, 0, 0, time.Time{}
	s.commitLocal(c, m.ID)
	s.Metrics.bytes.Add(m.Bytes)
	took := time.Since(start)
	s.Metrics.lastUploadSeconds.Store(int64(took.Milliseconds()))
	var reused, resumed i18n.Text
	if m.Reused > 0 {
		reused = i18n.Textf("; %s unchanged since the previous checkpoint, copied in the store", report.Bytes(m.Reused))
	}
	if m.Resumed > 0 {
		resumed = i18n.Textf("; %s stored by the upload cut short before", report.Bytes(m.Resumed))
	}
	s.cfg.Log("committed %s as %s (%s in %.1f s%s%s)", c.Name, m.ID, report.Bytes(m.Bytes), took.Seconds(), reused, resumed)
	if s.cfg.Notice > 0 && took > s.cfg.Notice && !s.noticeSaid {
		// Said once, at the first upload that shows it: the checkpoint
		// asked for on a notice will not reach the store in time.
		s.noticeSaid = true
		s.cfg.Log("note: this upload took %.0f s, longer than the %v notice a %s preemption can give: a checkpoint saved on the notice will not reach the store in time, so a preemption loses the work since the last one uploaded before it; save checkpoints often enough that this is acceptable", took.Seconds(), s.cfg.Notice, s.cfg.Cloud)
	}
	if s.cfg.Keep > 0 {
		if _, err := s.cfg.Store.Prune(ctx, s.cfg.Run, s.cfg.Keep); err != nil {
			s.cfg.Log("prune: %v", err)
		}
	}
	s.trimLocal(c)
	return true
}

// behind says, once, when uploads fall behind the saves: two or more
// checkpoints completed while c (of the scan before, before) was uploaded,
// so the next upload takes the newest and those between never reach the
// store. Under uploading.
func (s *Supervisor) behind(c Candidate, before []Candidate, took time.Duration) {
	if s.behindSaid {
		return
	}
	after, err := s.det.Scan()
	if err != nil {
		return
	}
	had := map[string]bool{}
	for _, b := range before {
		if b.Complete {
			had[b.Signature()] = true
		}
	}
	var newer []string // newest first, as Scan lists them
	for _, a := range after {
		if a.Complete && !had[a.Signature()] {
			newer = append(newer, a.Name)
		}
	}
	if len(newer) < 2 {
		return
	}
	s.behindSaid = true
	slices.Reverse(newer)
	s.cfg.Log("warning: uploads fall behind the checkpoints: %s were saved while %s was uploaded (%.0f s), so the newest goes next and %s never reaches the store; a machine lost loses the work since the last checkpoint uploaded. Save less often, or make uploads faster (gpurent ckpt speed measures the store)",
		strings.Join(newer, ", "), c.Name, took.Seconds(), strings.Join(newer[:len(newer)-1], ", "))
}

func (s *Supervisor) commitLocal(c Candidate, id string) {
	now := time.Now()
	if err := s.st.commit(c, id, now.Unix()); err != nil {
		s.cfg.Log("%v", err)
	}
	s.mu.Lock()
	s.commits++
	s.lastCommit = now
	s.mu.Unlock()
	s.Metrics.lastCommit.Store(now.Unix())
}

// storeNewer: the store's newest checkpoint m is a later step of the same
// naming as local, the newest complete one here ("checkpoint-5000" over
// "checkpoint-2000", "global_step20" over "global_step10"). Names without
// a step, or of another shape, are never judged newer: file times from two
// machines' clocks are no ground to pull many GB over what is here.
func (s *Supervisor) storeNewer(m *store.Manifest, local Candidate) bool {
	if s.st.committedAs(m.ID) {
		return false // made here, or pulled here already
	}
	ns, nl := lastNumber(m.Name), lastNumber(local.Name)
	if ns >= 0 && nl >= 0 && stepShape(m.Name) == stepShape(local.Name) {
		return ns > nl
	}
	// Names without steps to compare (Lightning's last.ckpt, a script's
	// ckpt_latest.pt saved over and over): the one here is older when it
	// is a commit of this run that the store's newest came after. Ids
	// begin with the time their push began, so they sort in that order.
	// One never committed (saved after the last upload) stays the newer.
	id := s.st.idOf(local)
	return id != "" && m.ID > id
}

// stepShape is a name with each run of digits replaced by '#':
// "epoch=3-step=1500.ckpt" is "epoch=#-step=#.ckpt".
func stepShape(name string) string {
	var b strings.Builder
	digits := false
	for _, r := range name {
		if r >= '0' && r <= '9' {
			if !digits {
				b.WriteByte('#')
			}
			digits = true
			continue
		}
		digits = false
		b.WriteRune(r)
	}
	return b.String()
}

// final is what the last upload found and achieved.
type final struct {
	found     bool   // a complete checkpoint exists
	committed bool   // the newest complete one is in the store
	name, id  string // the newest's name here and, committed, its id in the store
}

// finalUpload makes sure the newest complete checkpoint is committed,
// retrying for a while if the store fails, and reports whether it is. The
// command has stopped, so a file it no longer holds open needs no quiet
// period.
func (s *Supervisor) finalUpload(ctx context.Context) final {
	s.uploading.Lock()
	quiet := s.det.Quiet
	s.det.Quiet = 0
	newest, found, _ := s.det.Newest()
	s.uploading.Unlock()
	if !found {
		s.lookDeeper(true)
	} else if s.cfg.Store != nil {
		// Said only when there is one: "uploading the newest checkpoint"
		// followed by "no complete checkpoint was written" contradicted.
		s.cfg.Log("making sure the newest checkpoint, %s, is in the store before gpurent exits", newest.Name)
	}
	defer func() {
		s.uploading.Lock()
		s.det.Quiet = quiet
		s.uploading.Unlock()
	}()
	for i := 0; i < 5 && ctx.Err() == nil; i++ {
		if s.uploadNewest(ctx) {
			f := final{found: found, committed: true}
			if c, ok, _ := s.det.Newest(); ok {
				f.name, f.id = c.Name, s.st.idOf(c)
			} else if found {
				f.name, f.id = newest.Name, s.st.idOf(newest)
			}
			return f
		}
		time.Sleep(time.Duration(i+1) * 200 * time.Millisecond)
	}
	return final{found: found}
}

// renew keeps the lease alive until ctx ends; a store that fails to
// answer is retried at the next turn (the lease lasts four), a lost lease
// ends the run.
func (s *Supervisor) renew(ctx context.Context) {
	t := time.NewTicker(s.cfg.Lease.Every())
	defer t.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := s.cfg.Lease.Renew(ctx)
		switch {
		case err == nil:
			failing = false
		case errors.Is(err, store.ErrLeaseLost):
			s.leaseLost(err)
			return
		case ctx.Err() == nil && !failing:
			failing = true
			s.cfg.Log("warning: the run's lease could not be renewed (retried): %v", err)
		}
	}
}

// leaseLost tells Run, once, that the run was taken over.
func (s *Supervisor) leaseLost(err error) {
	select {
	case s.lost <- err:
	default:
	}
}

// fallbackTries is how many checkpoints older than a broken newest one a
// fresh machine tries before it gives up.
const fallbackTries = 3

// fallback pulls the newest trusted checkpoint older than broken that
// restores whole, trying fallbackTries at most, into the directory under
// its name: the one it pulled, or an error when none did.
func (s *Supervisor) fallback(ctx context.Context, broken *store.Manifest) (*store.Manifest, error) {
	all, _, err := s.cfg.Store.ListAll(ctx, s.cfg.Run)
	if err != nil {
		return nil, err
	}
	tried := 0
	for i := len(all) - 1; i >= 0 && tried < fallbackTries; i-- {
		m := all[i]
		if m.ID >= broken.ID || s.cfg.Store.Trusted(m) != nil {
			continue
		}
		tried++
		name := m.Name
		if name == "" {
			name = m.ID
		}
		dest := filepath.Join(s.cfg.CkptDir, name)
		if _, err := os.Lstat(dest); err == nil {
			continue // something of that name is here: not overwritten
		}
		if _, err := s.cfg.Store.Pull(ctx, s.cfg.Run, m.ID, dest); err != nil {
			var part *store.PartialPull
			if errors.As(err, &part) {
				store.DiscardPartial(dest)
			}
			s.cfg.Log("warning: %s (%s) could not be restored either: %v", m.ID, report.Safe(m.Name), err)
			continue
		}
		return m, nil
	}
	return nil, i18n.Errorf("no older checkpoint of run %s restores", s.cfg.Run)
}

// resume pulls the newest remote checkpoint when the directory holds no
// complete one (a new machine), or only older ones by their step (a
// machine made from a snapshot or image of the first, a data disk copied
// while the first trained on): resuming from those would redo the work
// the store's newer checkpoint holds.
func (s *Supervisor) resume(ctx context.Context) error {
	local, ok, err := s.det.Newest()
	if err != nil || s.cfg.Store == nil {
		return err
	}
	m, passed, err := s.cfg.Store.Latest(ctx, s.cfg.Run)
	for _, p := range passed {
		// Newer than what is resumed from, and no proof it is the
		// owner's: perhaps planted with a leaked write key. Never handed
		// to the command; said, so someone looks.
		s.cfg.Log("warning: the store's checkpoint %s (%s, from %s at %s) is not authenticated and is not resumed from: if you did not write it, someone with the store's write key may have; see gpurent ckpt verify",
			p.ID, report.Safe(p.Name), report.Safe(p.Host), p.Created.UTC().Format(time.RFC3339))
	}
	if ok {
		switch {
		case err != nil && !errors.Is(err, store.ErrNoCheckpoint):
			s.cfg.Log("could not ask the store for a newer checkpoint (%v): resuming from %s", err, local.Name)
			return nil
		case err != nil || !s.storeNewer(m, local):
			return nil
		}
		if ns, nl := lastNumber(m.Name), lastNumber(local.Name); ns >= 0 && nl >= 0 && stepShape(m.Name) == stepShape(local.Name) {
			s.cfg.Log("the store's newest checkpoint %s (step %d, from %s at %s) is newer than %s here (step %d)",
				m.Name, ns, m.Host, m.Created.UTC().Format(time.RFC3339), local.Name, nl)
		} else {
			s.cfg.Log("the store's newest checkpoint %s (%s, from %s at %s) is newer than %s here, which is the store's older %s",
				m.Name, m.ID, m.Host, m.Created.UTC().Format(time.RFC3339), local.Name, s.st.idOf(local))
		}
	}
	if err != nil {
		if errors.Is(err, store.ErrNoCheckpoint) {
			// Said out loud: a mistyped --run on a new machine would
			// otherwise train from the beginning without a word.
			s.cfg.Log("no checkpoint of run %s in the store: the command starts from the beginning (%s)", s.cfg.Run, s.cfg.Store.DescribeRuns(ctx))
			return nil
		}
		return i18n.Errorf("run: looking for a checkpoint to resume from: %w", err)
	}
	name := m.Name
	if name == "" {
		name = m.ID
	}
	dest := filepath.Join(s.cfg.CkptDir, name)
	older, olderID := "", "" // an older checkpoint here, moved aside for one of its name
	if _, err := os.Lstat(dest); err == nil && ok {
		if c, whole := s.completeAt(dest); whole {
			// A complete, older checkpoint has the newer one's name (one
			// name saved over and over): it moves aside for the pull, back
			// if the pull fails, and is removed after only when the store
			// holds it too.
			older, olderID = filepath.Join(s.cfg.CkptDir, fmt.Sprintf(".gpurent-older-%s-%s", name, time.Now().UTC().Format("20060102T150405Z"))), s.st.idOf(c)
			if err := os.Rename(dest, older); err != nil {
				s.cfg.Log("warning: could not move %s aside for the newer %s (%v): resuming from %s here", dest, m.ID, err, local.Name)
				return nil
			}
		}
	}
	if _, err := os.Lstat(dest); err == nil {
		// A checkpoint of that name is here but not complete (a save cut
		// short, a copy taken mid-write). Frameworks find their
		// checkpoint by name (the Trainer's checkpoint-<N>, Megatron's
		// tracker, Lightning's last.ckpt), so a pulled copy under any
		// other name would be passed over for the broken one: the broken
		// one is moved aside, kept, under a name no framework and no
		// scan of gpurent's reads.
		aside := filepath.Join(s.cfg.CkptDir, fmt.Sprintf(".gpurent-incomplete-%s-%s", name, time.Now().UTC().Format("20060102T150405Z")))
		if err := os.Rename(dest, aside); err != nil {
			return i18n.Errorf("run: %s is not a complete checkpoint and the store's %s has its name, so it must move aside for the pulled one: %w", dest, m.ID, err)
		}
		s.cfg.Log("%s is not a complete checkpoint: moved it to %s (delete it when you no longer need it), so that the pulled one takes its name", dest, aside)
	}
	if ok {
		s.cfg.Log("pulling %s from the store", m.ID)
	} else {
		s.cfg.Log("no complete checkpoint in %s: pulling %s from the store", s.cfg.CkptDir, m.ID)
	}
	if _, err := s.cfg.Store.Pull(ctx, s.cfg.Run, m.ID, dest); err != nil {
		if errors.Is(err, store.ErrNoIdentity) {
			// Pushing needs only the public key, so a new machine set up
			// like the first may lack the secret one: nothing was started.
			return i18n.Errorf("run: resuming run %s needs the age identity (secret key) its checkpoint %s is encrypted to (%s), and %w: copy it here (~/.config/gpurent/identity.txt where gpurent keygen ran; keep it mode 0600) and pass --identity FILE or set GPURENT_IDENTITY, or give another --run to start afresh",
				s.cfg.Run, m.ID, strings.Join(m.Recipients, ", "), store.ErrNoIdentity)
		}
		if ok {
			// Going on from the older one here, this run will not want
			// the part it pulled: its disk space is given back.
			var part *store.PartialPull
			if errors.As(err, &part) {
				store.DiscardPartial(dest)
				err = part.Err
			}
			if older != "" {
				os.RemoveAll(dest)
				if rerr := os.Rename(older, dest); rerr != nil {
					return i18n.Errorf("run: could not pull %s (%v), nor move the older %s back from %s: %w", m.ID, err, name, older, rerr)
				}
			}
			s.cfg.Log("warning: could not pull %s (%v): resuming from the older %s here", m.ID, err, local.Name)
			return nil
		}
		// A fresh machine: the newest checkpoint that does restore, named
		// with the one passed over, rather than no resume at all.
		var part *store.PartialPull
		if errors.As(err, &part) {
			store.DiscardPartial(dest)
		}
		fb, ferr := s.fallback(ctx, m)
		if ferr != nil {
			return i18n.Errorf("run: pull %s: %w", m.ID, err)
		}
		s.cfg.Log("warning: the newest checkpoint %s (%s) could not be restored (%v): resumed from %s (%s), the newest that restores and verifies; remove the broken one with gpurent ckpt rm --run %s %s",
			m.ID, report.Safe(m.Name), err, fb.ID, report.Safe(fb.Name), s.cfg.Run, m.ID)
		m, name = fb, fb.Name
		if name == "" {
			name = m.ID
		}
		dest = filepath.Join(s.cfg.CkptDir, name)
	}
	switch {
	case older != "" && olderID == "":
		s.cfg.Log("kept the older %s at %s: the store does not hold it (delete it when you no longer need it)", name, older)
	case older != "":
		if err := os.RemoveAll(older); err != nil {
			s.cfg.Log("warning: could not remove the older %s at %s (%v); the store keeps it as %s", name, older, err, olderID)
		} else {
			s.cfg.Log("removed the older %s here; the store keeps it as %s", name, olderID)
		}
	}
	// DeepSpeed and Megatron find their checkpoint through a tracker file
	// beside it, which the store does not hold.
	if wrote, err := RestoreTracker(dest); err != nil {
		s.cfg.Log("%v: the command may not find %s by itself", err, name)
	} else if wrote != "" {
		s.cfg.Log("wrote %s, which the framework reads to find the checkpoint it resumes from", wrote)
	}
	// Pull restored the files' own modification times; the checkpoint was
	// verified whole, so it needs no quiet period (Run uses it at once).
	c := Candidate{}
	cs, _ := s.det.Scan()
	for _, x := range cs {
		if x.Path == dest {
			c = x
		}
	}
	if c.Path != "" {
		s.commitLocal(c, m.ID)
	}
	s.pulled = dest
	return nil
}
