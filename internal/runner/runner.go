//go:build unix

// Package runner is gpurent run: one session of a training run, from the
// checks of its options to its end. It puts together what keeps a rented
// run alive and accounted for: the supervisor (internal/supervise), the
// store and its lease, the budget and its ledger, the kernel log and GPU
// watches, the webhook, the log shipped to the store, the metrics and the
// status line. cmd/gpurent only turns flags and the config file into
// Options.
package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/gpurent/gpurent/internal/catalog"
	"github.com/gpurent/gpurent/internal/clock"
	"github.com/gpurent/gpurent/internal/exitcode"
	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/kernlog"
	"github.com/gpurent/gpurent/internal/kernwatch"
	"github.com/gpurent/gpurent/internal/ledger"
	"github.com/gpurent/gpurent/internal/money"
	"github.com/gpurent/gpurent/internal/notify"
	"github.com/gpurent/gpurent/internal/preempt"
	"github.com/gpurent/gpurent/internal/release"
	"github.com/gpurent/gpurent/internal/report"
	"github.com/gpurent/gpurent/internal/runlog"
	"github.com/gpurent/gpurent/internal/store"
	"github.com/gpurent/gpurent/internal/supervise"
	"github.com/gpurent/gpurent/internal/usage"
)

// Options are one session's settings: gpurent run's flags, or the fields
// of its config file of the same names (a flag's dashes are the field's
// underscores).
type Options struct {
	// Command is the training command and its arguments.
	Command []string
	CkptDir string
	Glob    string
	// Keep is the newest checkpoints kept in the store, KeepLocal in
	// CkptDir (0: all).
	Keep, KeepLocal int
	MaxRestarts     int
	// Preemption is the cloud whose notices are watched: auto, one of
	// preempt.Clouds() or none. Metadata overrides a cloud's metadata
	// endpoint where a field is set.
	Preemption string
	Metadata   preempt.Endpoints
	// Metrics is the address Prometheus metrics are served on ("" none;
	// ":9464" binds 127.0.0.1).
	Metrics            string
	Quiet, Grace, Poll time.Duration
	Stall, Silence     time.Duration
	LogEvery           time.Duration
	NotifyEvery        time.Duration
	GPUBusyMin         float64
	NoStatus           bool
	// Price is the machine's hourly price, or a catalog offer's id (Offers
	// lists the catalog); Budget the most it may cost at that price.
	Price, Budget string
	Offers        func() ([]catalog.Offer, error)
	// Log is the file the command's output is kept in and shipped from;
	// Notify the file holding the webhook URL ("": $GPURENT_NOTIFY).
	Log, Notify string
	// StoreURL is where checkpoints go ("" keeps them here); Run names
	// the run there; Takeover takes its lease from another session.
	// OpenStore opens it, saying its retries with say.
	StoreURL  string
	Run       string
	Takeover  bool
	OpenStore func(ctx context.Context, say func(format string, a ...any)) (st *store.Store, name string, close func(), err error)
	// Stdout and Stderr are gpurent's own; the command gets them too,
	// and Stderr has gpurent's lines, in Printer's language (nil:
	// English).
	Stdout, Stderr io.Writer
	Printer        *i18n.Printer
	// ExitCode is the exit code gpurent gives an error, for the end's
	// notification; nil: 2 for bad usage, else 1.
	ExitCode func(error) int
	// Clock is what the budget, its ledger and the heartbeats are judged
	// by; nil: the real one. Tests move a fake one.
	Clock clock.Clock
	// WhenDone releases the machine (stop or destroy) once the command
	// exited 0 and its newest checkpoint is committed; WhenDoneOnFailure
	// after a failure too. IdleStop stops an idle command and then
	// releases as WhenDone says (stop if unset). Release says how the
	// provider is found and asked.
	WhenDone          string
	WhenDoneOnFailure bool
	IdleStop          time.Duration
	Release           release.Options
}

// OptionError is a wrong option: Flag names it (without its dashes), so
// that cmd can say the flag, or the config file's line, it came from.
type OptionError struct {
	Flag string
	Err  error
}

func (e *OptionError) Error() string { return "--" + e.Flag + ": " + e.Err.Error() }
func (e *OptionError) Unwrap() error { return e.Err }

func bad(flag, format string, a ...any) error {
	return &OptionError{Flag: flag, Err: i18n.Errorf(format, a...)}
}

// Validate checks what can be checked before anything starts; each error
// is an *OptionError or bad usage.
func (o *Options) Validate() error {
	for _, d := range []struct {
		flag string
		v    time.Duration
		zero string // "want a positive duration such as ..., or 0 ..."
	}{
		{"stall", o.Stall, "such as 2h, or 0 to only warn"},
		{"silence", o.Silence, "such as 30m, or 0 to only warn"},
		{"notify-every", o.NotifyEvery, "such as 6h, or 0 for none"},
		{"quiet", o.Quiet, "such as 5s, or 0 for none"},
	} {
		if d.v < 0 {
			return bad(d.flag, "want a positive duration %s, got %v", d.zero, d.v)
		}
	}
	if o.LogEvery < 10*time.Second {
		// Each shipment is a request and an object: more often than
		// this, a week's run leaves tens of thousands.
		return bad("log-every", "want 10s or more, got %v", o.LogEvery)
	}
	if o.Silence > 0 && o.Log == "" {
		return bad("silence", "needs --log FILE: gpurent sees the command's output only when it keeps it")
	}
	if o.NotifyEvery > 0 && o.Notify == "" && os.Getenv("GPURENT_NOTIFY") == "" {
		return bad("notify-every", "needs --notify FILE (or $GPURENT_NOTIFY): the webhook the progress goes to")
	}
	if len(o.Command) == 0 {
		return usage.Errorf("no command: gpurent run [flags] -- CMD ARGS")
	}
	if err := o.validateRelease(); err != nil {
		return err
	}
	if dir := store.LocalDir(o.StoreURL); store.Within(dir, o.CkptDir) {
		return usage.Errorf("--store %s lies inside --ckpt-dir %s: every upload would look like a new checkpoint there; keep the store elsewhere", dir, o.CkptDir)
	}
	if o.Keep < 0 {
		return bad("keep", "want 0 (keep all) or more, got %d", o.Keep)
	}
	if o.KeepLocal < 0 {
		return bad("keep-local", "want 0 (keep all) or more, got %d", o.KeepLocal)
	}
	if o.KeepLocal > 0 && o.StoreURL == "" {
		return bad("keep-local", "needs --store: a local checkpoint is deleted only once the store holds a newer one")
	}
	if o.MaxRestarts < 0 {
		return bad("max-restarts", "want 0 or more, got %d", o.MaxRestarts)
	}
	if o.GPUBusyMin < 0 || o.GPUBusyMin > 100 || o.GPUBusyMin != o.GPUBusyMin {
		return bad("gpu-busy-min", "want a percent from 0 (never warn) to 100, got %v", o.GPUBusyMin)
	}
	// A glob that can match nothing would leave every checkpoint
	// unnoticed for the whole run: refused before the command starts. It
	// is matched against the names in --ckpt-dir.
	if o.Glob != "" {
		if strings.Contains(o.Glob, "/") {
			return bad("glob", "%q holds a /: it matches the names of the entries in --ckpt-dir, not paths; make the directory the checkpoints are saved in --ckpt-dir (--ckpt-dir out/checkpoints --glob 'step-*')", o.Glob)
		}
		if _, err := filepath.Match(o.Glob, ""); err != nil {
			return bad("glob", "%q: %v (a shell-style pattern, such as 'ckpt-*.pt' or 'step-[0-9]*')", o.Glob, err)
		}
	}
	for _, m := range []struct{ flag, url string }{{"metadata-aws", o.Metadata.AWS}, {"metadata-gcp", o.Metadata.GCP},
		{"metadata-azure", o.Metadata.Azure}, {"metadata-alibaba", o.Metadata.Alibaba}, {"metadata-tencent", o.Metadata.Tencent}} {
		if m.url == "" {
			continue
		}
		if u, err := url.Parse(m.url); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return usage.Errorf("--%s: want an http:// URL, got %q", m.flag, m.url)
		}
	}
	return nil
}

// endpoints are the metadata services to ask: the clouds' own, but where
// Options.Metadata names another.
func (o *Options) endpoints() preempt.Endpoints {
	ep := preempt.DefaultEndpoints()
	for _, m := range []struct {
		set *string
		url string
	}{{&ep.AWS, o.Metadata.AWS}, {&ep.GCP, o.Metadata.GCP},
		{&ep.Azure, o.Metadata.Azure}, {&ep.Alibaba, o.Metadata.Alibaba}, {&ep.Tencent, o.Metadata.Tencent}} {
		if m.url != "" {
			*m.set = strings.TrimSuffix(m.url, "/")
		}
	}
	return ep
}

// session is one Run's state: what its parts share, and what is undone
// at its end, newest first.
type session struct {
	o       Options
	clock   clock.Clock
	begun   time.Time
	price   money.Hourly
	spend   money.Budget
	led     *ledger.Ledger
	ledErr  error
	records ledger.Recorder // the store, where the ledger's records also go

	logMu sync.Mutex // lines come from the supervisor's goroutines and the GPU watch's
	out   *runlog.Output
	hook  *notify.Webhook
	event func(kind string, text i18n.Text, output string)
	ship  *runlog.Shipper

	pre   preempt.Preempter
	cloud string
	cfg   supervise.Config
	gpus  *gpuWatch
	kern  *kernwatch.Watch

	// machine is what --when-done and --idle-stop release; relLog the
	// store's log session that says so, without --log.
	machine *release.Machine
	relLog  *storeLog

	// endReason is the end's line for the webhook.
	endReason i18n.Text
	undo      []func()
}

// Exit codes Run returns besides the command's own (internal/exitcode).
const (
	exitFailure = exitcode.Failure
	exitUsage   = exitcode.Usage
)

// Run is one session of gpurent run: it checks o, starts o.Command under
// the supervisor with everything o asks for, and returns when the command
// is done for good. code is the exit status gpurent passes on (0, the
// command's, supervise.ExitNotStored, supervise.ExitStopped); err is a
// failure of gpurent's own, bad usage among them.
func Run(ctx context.Context, o Options) (code int, err error) {
	if err := o.Validate(); err != nil {
		return 0, err
	}
	clk := o.Clock
	if clk == nil {
		clk = clock.Real()
	}
	s := &session{o: o, clock: clk, begun: clk.Now(), event: func(string, i18n.Text, string) {}}
	defer s.unwind()
	return s.run(ctx)
}

// later has f run as Run returns, before what was deferred earlier.
func (s *session) later(f func()) { s.undo = append(s.undo, f) }

func (s *session) unwind() {
	for i := len(s.undo) - 1; i >= 0; i-- {
		s.undo[i]()
	}
}

// logf says one of gpurent's lines on stderr, and in --log.
func (s *session) logf(format string, a ...any) {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	// Lines name checkpoints, processes and files: text, not terminal
	// controls, and one event a line (a checkpoint named "a\nb" must not
	// start a line of its own).
	line := report.Safe(s.o.Printer.Tf(format, a...))
	fmt.Fprintf(s.o.Stderr, "gpurent: %s\n", line)
	if s.out != nil {
		s.out.Note(line)
	}
}

func (s *session) run(ctx context.Context) (int, error) {
	if err := s.readCost(); err != nil {
		return 0, err
	}
	if s.price.From != "" {
		s.logf("the cost shown is at %s, %s", s.price, s.price.From)
	}
	if s.ledErr != nil {
		s.logf("warning: %v; this session's cost is not recorded", s.ledErr)
	}
	if err := s.openLog(); err != nil {
		return 0, err
	}
	hook, err := notify.Open(s.o.Notify)
	if err != nil {
		return 0, err
	}
	if hook != nil {
		// Started first, so that a run that cannot start (a store that
		// does not answer on a new machine's boot) is heard of too; the
		// end is sent whatever Run returns.
		s.hook = hook
		var end func(int, error, i18n.Text, string)
		s.event, end = startEvents(ctx, hook, s.o.Run, s.o.Printer, s.logf)
		var code int
		var rerr error
		s.later(func() {
			status := code
			switch {
			case rerr == nil:
			case s.o.ExitCode != nil:
				status = s.o.ExitCode(rerr)
			case usage.Is(rerr) || errors.As(rerr, new(*OptionError)):
				status = exitUsage
			default:
				status = exitFailure
			}
			output := ""
			if s.out != nil && status == exitFailure {
				output = s.out.Tail(tailLines) // it failed: the last words say why
			}
			end(status, rerr, s.endReason, output)
		})
		code, rerr = s.supervise(ctx)
		return code, rerr
	}
	return s.supervise(ctx)
}

// maxCostFlag is the longest --price or --budget read.
const maxCostFlag = 200

// readCost reads --price and --budget and opens the ledger.
func (s *session) readCost() error {
	// A price or an offer id is short: a long value is refused before
	// the catalog's suggestions compare it with every id (seconds for
	// 128 KB).
	for _, f := range []struct{ name, v string }{{"price", s.o.Price}, {"budget", s.o.Budget}} {
		if len(f.v) > maxCostFlag {
			return bad(f.name, "%d characters: neither a price nor an offer id", len(f.v))
		}
	}
	if s.o.Price != "" {
		p, err := money.ParsePrice(s.o.Price)
		if err != nil && money.LooksLikeOffer(s.o.Price) && s.o.Offers != nil {
			var offers []catalog.Offer
			if offers, err = s.o.Offers(); err != nil {
				return err
			}
			p, err = money.OfferPrice(offers, s.o.Price)
		}
		if err != nil {
			return bad("price", "%v", err)
		}
		s.price = p
	}
	if s.o.Budget != "" {
		b, err := money.ParseBudget(s.o.Budget, s.price)
		if err != nil {
			return bad("budget", "%v", err)
		}
		s.spend = b
	}
	// With a price, what this session costs is recorded: in --ckpt-dir
	// and, with a store, beside the run's checkpoints (ckpt runs sums it).
	// A budget is the run's: what gpurent's earlier sessions spent counts,
	// here and with a store on other machines, and a ledger that cannot be
	// counted is exit 2; without one, it only costs the record.
	if s.price.Amount > 0 {
		host, _ := os.Hostname()
		if s.led, s.ledErr = ledger.Open(s.o.CkptDir, s.o.Run, s.price.Currency, store.NewID(s.begun), host, s.begun); s.ledErr != nil && s.spend.Amount > 0 {
			return usage.Wrap(s.ledErr)
		}
	}
	return nil
}

// openLog opens --log.
func (s *session) openLog() error {
	if s.o.Log == "" {
		return nil
	}
	o, err := openOutput(s.o.Stdout, s.o.Stderr, s.o.Log)
	if err != nil {
		return err
	}
	s.out = o
	s.later(func() { o.Close(2 * time.Second) })
	if st, err := os.Stat(s.o.Log); err == nil && st.Mode().Perm()&0o077 != 0 {
		// Made by an earlier `> train.log`: kept as it is, but a shared
		// machine's other accounts read it.
		s.logf("warning: --log %s is readable by other users (mode %v); chmod 600 it if the output is private", s.o.Log, st.Mode().Perm())
	}
	return nil
}

// watchPreemption chooses the preemption notices to watch. A poller whose
// metadata service never answers misses every notice without a word: it
// says which cloud is watched, or none.
func (s *session) watchPreemption(ctx context.Context) error {
	ep := s.o.endpoints()
	s.cloud = s.o.Preemption
	switch s.o.Preemption {
	case "none":
	case "auto":
		var name string
		if name, s.pre = preempt.Auto(ctx, ep); s.pre != nil {
			s.cloud = name
			s.logf("watching %s's preemption notices", name)
		} else {
			s.logf("no cloud metadata service answered (%s): preemption notices are not watched (--preemption none skips this check)",
				strings.Join(preempt.Clouds(), ", "))
		}
	default:
		if s.pre = preempt.For(s.o.Preemption, ep); s.pre == nil {
			return bad("preemption", "want auto, %s or none, got %q", strings.Join(preempt.Clouds(), ", "), s.o.Preemption)
		}
		if !preempt.Answers(ctx, s.o.Preemption, ep) {
			hint := ""
			if s.o.Preemption == "aws" { // IMDSv2's hop limit: docs/run.md
				hint = " (in a container, IMDSv2 needs the instance's hop limit at 2 or more)"
			}
			s.logf("warning: %s's metadata service does not answer: its preemption notices will be missed while it does not%s", s.o.Preemption, hint)
		}
	}
	return nil
}

// supEvent is the supervisor's and the watches' event: to the webhook,
// with the command's last lines where they say why, and a shipment of the
// log where a machine may be lost next.
func (s *session) supEvent(kind string, text i18n.Text) {
	output := ""
	if s.out != nil && s.hook != nil && (kind == "restart" || kind == "stall") {
		output = s.out.Tail(tailLines)
	}
	s.event(kind, text, output)
	switch kind {
	case "restart", "notice", "stall":
		// The command's last lines (a traceback) reach the log file a
		// moment after it exits: ship them before a new machine is all
		// that is left.
		if s.ship != nil {
			time.AfterFunc(time.Second, s.ship.Kick)
		}
	}
}

// configure is the supervisor's Config but for the store and the budget.
func (s *session) configure() {
	o := s.o
	s.cfg = supervise.Config{Clock: s.clock, Cmd: o.Command, CkptDir: o.CkptDir, Run: o.Run, Keep: o.Keep, MaxRestarts: o.MaxRestarts,
		Grace: o.Grace, Poll: o.Poll, Quiet: o.Quiet, Glob: o.Glob, Preemption: s.pre, Log: s.logf, Event: s.supEvent, Stall: o.Stall, KeepLocal: o.KeepLocal}
	if out := s.out; out != nil {
		s.cfg.Stdout, s.cfg.Stderr = out.Stdout, out.Stderr
		s.cfg.Output, s.cfg.Silence = out.LastOutput, o.Silence
		if _, set := os.LookupEnv("PYTHONUNBUFFERED"); !out.PTY && !set {
			// On pipes Python holds stdout in 8 KiB blocks: lines would
			// reach the log minutes late, and those of a trainer the OOM
			// killer ends, never. As on a terminal, each line goes when
			// printed (PYTHONUNBUFFERED= keeps the blocks).
			s.cfg.Env = append(s.cfg.Env, "PYTHONUNBUFFERED=1")
		}
		if sameDir(filepath.Dir(o.Log), o.CkptDir) {
			// A log without ".log" (or one --glob matches) would count as
			// a checkpoint, uploaded as it grows.
			s.cfg.Exclude = []string{filepath.Base(o.Log)}
		}
	}
	if s.pre != nil {
		s.cfg.Cloud, s.cfg.Notice = s.cloud, preempt.ShortestNotice(s.cloud)
	}
	s.cfg.IdleStop, s.cfg.IdleWindow = o.IdleStop, idleWindow
	s.cfg.Busy = func() time.Time {
		if w := s.gpus.watch(); w != nil {
			return w.LastBusy()
		}
		return time.Time{}
	}
	// A GPU that fell off the bus, an Xid, a disk failing writes: causes
	// of the failures that follow, which the command's output may not
	// name.
	s.cfg.Explain = func() []i18n.Text {
		var causes []i18n.Text
		if s.out != nil {
			// Asked as the command has exited: the lines it printed as it
			// died are still being copied.
			time.Sleep(100 * time.Millisecond)
			causes = runlog.Explain(s.out.Tail(200))
		}
		if w := s.gpus.watch(); w != nil && !w.Lost().IsZero() {
			causes = append(causes, w.Lost())
		}
		return append(causes, s.kern.Causes()...)
	}
}

func (s *session) supervise(ctx context.Context) (int, error) {
	if err := s.watchPreemption(ctx); err != nil {
		return 0, err
	}
	if err := s.findMachine(ctx); err != nil {
		return 0, err
	}
	s.configure()
	if s.o.StoreURL != "" {
		if err := s.openStore(ctx); err != nil {
			return 0, err
		}
	} else {
		s.logf("warning: no --store: checkpoints stay on this machine and die with it")
	}
	if s.spend.Amount > 0 {
		if stop := s.startBudget(); stop {
			return supervise.ExitStopped, nil
		}
	}
	if s.led != nil {
		if err := s.keepLedger(ctx); err != nil {
			return 0, err
		}
	}
	if s.o.Glob == "" && sameDir(s.o.CkptDir, ".") {
		s.logf("warning: --ckpt-dir is the working directory: any file in it but code, logs, notebooks and configs counts as a checkpoint; name yours with --glob (e.g. --glob 'ckpt-*.pt')")
	}
	s.kern = kernwatch.Start(ctx, kernwatch.Options{Path: kernlog.Path(), CkptDir: s.o.CkptDir, Log: s.logf, Event: s.supEvent})
	s.later(s.kern.Stop)
	sup, err := supervise.New(s.cfg)
	if rt := (*supervise.RuntimeError)(nil); errors.As(err, &rt) {
		return 0, err // the machine's fault, not the command line's: exit 1
	}
	if err != nil {
		return 0, usage.Wrap(err)
	}
	running := func() bool { return sup.Metrics.Snapshot(s.clock.Now()).ChildUp }
	s.gpus = startGPUWatch(ctx, s.o.GPUBusyMin, s.price, running, s.logf, s.supEvent)
	s.later(s.gpus.stop)
	s.notifyProgress(sup)
	if err := s.serveMetrics(sup); err != nil {
		return 0, err
	}
	if f, ok := s.o.Stderr.(*os.File); ok && !s.o.NoStatus {
		status := startStatus(f, func(cols int) string {
			now := s.clock.Now()
			return statusText(s.o.Printer, sup.Metrics.Snapshot(now), busyText(s.gpus), s.price.CostOf(now.Sub(s.begun), s.spend), cols)
		})
		s.later(status.end)
	}
	stop := s.catchSignals()
	ex, err := sup.Run(context.WithoutCancel(ctx), stop)
	if err != nil {
		return 0, err
	}
	if w := s.gpus.watch(); w != nil {
		if sum := w.Summary(); !sum.IsZero() {
			s.logf("%s", sum)
		}
	}
	s.logf("%s", ex.Reason)
	s.endReason = ex.Reason
	if s.price.Amount > 0 {
		took := s.clock.Now().Sub(s.begun)
		spent := s.price.Spent(took)
		if s.spend.Before > 0 {
			spent = i18n.Textf("%s; with gpurent's earlier sessions of run %s, %s of the %s budget", spent, s.o.Run, s.spend.SpentBy(took), s.spend)
		}
		s.logf("%s", spent)
		s.endReason = i18n.Textf("%s; %s", s.endReason, spent)
	}
	return s.releaseAtEnd(ctx, ex), nil
}
