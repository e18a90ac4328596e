//go:build unix

package runner

import (
	"context"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/term"

	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/ledger"
	"github.com/gpurent/gpurent/internal/money"
	"github.com/gpurent/gpurent/internal/mounts"
	"github.com/gpurent/gpurent/internal/report"
	"github.com/gpurent/gpurent/internal/runlog"
	"github.com/gpurent/gpurent/internal/store"
	"github.com/gpurent/gpurent/internal/supervise"
	"github.com/gpurent/gpurent/internal/usage"
)

// retrySpacing is the least time between two lines about a store's
// retries.
const retrySpacing = 5 * time.Minute

// openStore opens the store, checks that it takes a write, takes the
// run's lease and starts shipping the log: all before anything is resumed
// or started.
func (s *session) openStore(ctx context.Context) error {
	o := s.o
	// A store's retries go where run's messages go, one line in
	// retrySpacing at most: an outage of an hour is a few lines, said
	// by the supervisor when it starts and ends, not one a try.
	var lastRetry time.Time
	var retryMu sync.Mutex
	say := func(format string, a ...any) {
		if !strings.HasPrefix(format, "the store: ") { // storeconf's retry line
			s.logf(format, a...)
			return
		}
		retryMu.Lock()
		now := time.Now()
		quiet := !lastRetry.IsZero() && now.Sub(lastRetry) < retrySpacing
		if !quiet {
			lastRetry = now
		}
		retryMu.Unlock()
		if !quiet {
			s.logf(format, a...)
		}
	}
	st, name, closeFn, err := o.OpenStore(ctx, say)
	if err != nil {
		return err
	}
	s.later(closeFn)
	s.cfg.Store = st
	s.logf("checkpoints from %s go to %s, run %s", o.CkptDir, name, o.Run)
	// A local path is off the box only on a network file system (NFS, a
	// FUSE mount of a bucket, a provider's shared volume); on the
	// machine's own disks it survives the command, not the machine.
	if dir := store.LocalDir(o.StoreURL); dir != "" {
		if m, ok := mounts.Read("/").Find(dir); ok && !m.Network() {
			s.logf("warning: the store %s is on this machine's own storage (%s on %s), not a network file system: unless that disk outlives the machine (a cloud volume kept at release), the checkpoints die with it; s3://, gs:// or azblob:// keep them off the box", dir, m.FSType, m.Source)
		}
	}
	// Found now, not at the first checkpoint hours later.
	deleted, err := st.CheckWrite(ctx, o.Run)
	if err != nil {
		err = i18n.Errorf("%w; no checkpoint could be kept there (nothing was started)", err)
		if store.IsPermissionDenied(err) {
			return usage.Wrap(err)
		}
		return err
	}
	// One run per --ckpt-dir, then one session per run: refused here,
	// before anything is resumed or started. The directory first: a
	// second run there must not take the run from the first and then stop
	// on the lock.
	unlock, err := supervise.LockDir(o.CkptDir, o.Run)
	if err != nil {
		return err
	}
	s.later(unlock)
	s.cfg.DirLocked = true
	lease, err := st.TakeLease(ctx, o.Run, "gpurent run", o.Takeover)
	if err != nil {
		return i18n.Errorf("%w (nothing was started)", err)
	}
	s.later(func() { lease.Release(ctx) })
	st.Hold(lease)
	s.cfg.Lease = lease
	if o.Takeover {
		s.logf("took run %s (session %s, generation %d): a session that held it commits nothing more", o.Run, lease.Info().Session, lease.Info().Generation)
	}
	if !deleted && o.Keep > 0 {
		s.logf("warning: the store took a write but refused to delete it (runs/%s/write-check in %s): checkpoints are uploaded, but --keep %d cannot prune old ones there (a key without delete permission)", o.Run, name, o.Keep)
	}
	if s.led != nil {
		s.records = st
	}
	if s.led != nil && s.spend.Amount > 0 {
		recs, err := st.Spends(ctx, o.Run)
		if err != nil {
			s.logf("warning: %v: the budget counts the run's sessions on this machine only", err)
		} else if err := s.led.Merge(recs, "delete "+name+"'s runs/"+o.Run+"/spend/"); err != nil {
			return usage.Wrap(err)
		}
	}
	previousLog(ctx, st, o.Run, s.logf)
	if s.out != nil {
		sl := &storeLog{st: st, run: o.Run, started: s.out.Opened}
		s.ship = runlog.Ship(ctx, o.Log, s.out.Start, sl, o.LogEvery, logSegment, s.logf)
		s.later(func() { finishLog(ctx, s.out, s.ship, sl, s.logf) })
	}
	return nil
}

// startBudget says what the budget leaves and has the supervisor stop the
// command, with a checkpoint, before it is spent; stop is true when it is
// spent already and nothing is to start.
func (s *session) startBudget() (stop bool) {
	spend, price, run := &s.spend, s.price, s.o.Run
	b := s.led.Before()
	spend.Before = b.Spent
	var earlier i18n.Text
	if b.Sessions > 0 {
		where := i18n.Textf("here")
		if b.Elsewhere > 0 {
			where = i18n.Textf("(%d on other machines)", b.Elsewhere)
		}
		earlier = i18n.Textf("; run %s has cost %.2f %s of it in %s %s since %s",
			run, b.Spent, price.Currency, i18n.Plural(b.Sessions, "%d earlier session", "%d earlier sessions"), where, b.Since.UTC().Format("2006-01-02 15:04 MST"))
	}
	if spend.Lasts() <= spend.Window() {
		// Started again after the budget stopped it (systemd's
		// Restart=always, a reboot): starting the command would spend
		// past the budget.
		reset := s.led.Path()
		if s.records != nil {
			reset += " and the store's runs/" + run + "/spend/"
		}
		s.endReason = i18n.Textf("the --budget %s is spent: the command was not started", spend)
		s.logf("budget %s%s, and what is left lasts less than the %s a checkpoint is given: the command is not started (exit 75); a larger --budget counts from the same total, and removing %s counts from zero",
			spend, earlier, report.Duration(spend.Window()), reset)
		return true
	}
	end := s.begun.Add(spend.Lasts())
	s.logf("budget %s%s: at %s it is spent in %s (%s); the command is asked for a checkpoint %s before, then stopped (exit 75)",
		spend, earlier, price, report.Duration(spend.Lasts()), end.UTC().Format("2006-01-02 15:04 MST"), report.Duration(spend.Window()))
	stopIn := spend.Lasts() - spend.Window()
	s.cfg.Until, s.cfg.UntilWindow = s.begun.Add(stopIn), spend.Window()
	s.cfg.UntilWhy = i18n.Textf("--budget %s: the machine has cost %s of it", spend, spend.SpentBy(stopIn))
	// Told ahead, while there is time to raise the budget (restart gpurent
	// run with a larger one) or to let it end; past it already, the
	// start's line said so.
	if at := spend.Until(spend.Amount * 0.8); at > 0 {
		warn := s.clock.AfterFunc(at, func() {
			text := i18n.Textf("the machine has cost %s of the %s budget: the command is stopped with a checkpoint in %s",
				spend.SpentBy(at), spend, report.Duration(stopIn-at))
			s.logf("%s", text)
			s.event("budget", text, "")
		})
		s.later(func() { warn.Stop() })
	}
	return false
}

// keepLedger keeps the run's ledger as it is spent, so that a gpurent
// killed or a machine that lost power loses at most one interval's cost:
// every minute, and every 5 in the store; more often for a budget of
// minutes. The directory is made now rather than with the supervisor.
func (s *session) keepLedger(ctx context.Context) error {
	every, storeEvery := time.Minute, 5*time.Minute
	if s.spend.Amount > 0 {
		every, storeEvery = max(min(every, s.spend.Window()/4), 100*time.Millisecond), max(min(storeEvery, s.spend.Window()), time.Second)
	}
	if err := os.MkdirAll(s.o.CkptDir, 0o755); err != nil {
		return i18n.Errorf("run: %w", err)
	}
	s.later(s.led.Keep(ctx, ledger.KeepOptions{Hourly: s.price.Amount, Begun: s.begun, Now: s.clock.Now, Every: every, StoreEvery: storeEvery,
		Store: s.records, Run: s.o.Run, Log: s.logf}))
	return nil
}

// notifyProgress tells the webhook every --notify-every where the run
// stands and, with --log, its last lines (a progress bar's state, the
// loss): a run of days is watched from a phone.
func (s *session) notifyProgress(sup *supervise.Supervisor) {
	if s.hook == nil || s.o.NotifyEvery <= 0 {
		return
	}
	beat := s.clock.NewTicker(s.o.NotifyEvery)
	done := make(chan struct{})
	s.later(func() { beat.Stop(); close(done) })
	started := s.clock.Now()
	go func() {
		for {
			select {
			case <-done:
				return
			case now := <-beat.C():
				output := ""
				if s.out != nil {
					output = s.out.Tail(progressLines)
				}
				s.event("progress", progressText(sup.Metrics.Snapshot(now), now.Sub(started), s.price.CostOf(now.Sub(s.begun), s.spend)), output)
			}
		}
	}()
}

// serveMetrics serves --metrics.
func (s *session) serveMetrics(sup *supervise.Supervisor) error {
	metrics := s.o.Metrics
	if metrics == "" {
		return nil
	}
	addr := metrics
	if strings.HasPrefix(addr, ":") {
		addr = "127.0.0.1" + addr
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return usage.Errorf("--metrics %s: %v", metrics, err)
	}
	srv := &http.Server{Handler: metricsHandler(&sup.Metrics, s.gpus, s.kern, money.Metric{Price: s.price, Begun: s.begun, Budget: s.spend}), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	s.later(func() { srv.Close() })
	s.logf("metrics on http://%s/metrics", ln.Addr())
	if a, ok := ln.Addr().(*net.TCPAddr); ok && !a.IP.IsLoopback() {
		s.logf("warning: --metrics %s serves every machine that can reach this one, with no login (the run's name, progress, costs and GPUs for anyone); bind 127.0.0.1:%d and reach it with ssh -L %d:127.0.0.1:%d unless that is what you want", metrics, a.Port, a.Port, a.Port)
	}
	return nil
}

// catchSignals passes SIGTERM, SIGINT and SIGHUP to the supervisor, which
// stops the command with its checkpoint uploaded.
func (s *session) catchSignals() <-chan os.Signal {
	stop := make(chan os.Signal, 1)
	sigs := []os.Signal{syscall.SIGTERM, syscall.SIGINT}
	// Under nohup SIGHUP is ignored, and asking for it would undo that
	// (signal.Notify installs a handler): leave it be.
	if !signal.Ignored(syscall.SIGHUP) {
		sigs = append(sigs, syscall.SIGHUP)
		if f, ok := s.o.Stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) && os.Getenv("TMUX") == "" && os.Getenv("STY") == "" {
			saved := ""
			if s.cfg.Store != nil {
				saved = " and its newest checkpoint uploaded"
			}
			s.logf("if this terminal closes (an SSH connection drops), the command is stopped%s; to keep training, run gpurent under tmux, screen or nohup", saved)
		}
	}
	sigc := make(chan os.Signal, 1)
	signal.Notify(sigc, sigs...)
	s.later(func() { signal.Stop(sigc); close(sigc) })
	go func() {
		for sig := range sigc {
			select {
			case stop <- sig:
			default:
			}
			// A machine taken away may not live to the end's shipment (a
			// RunPod spot pod gets SIGKILL 5 s after SIGTERM): ship what
			// the command printed now, once the supervisor has noted the
			// signal in the log.
			if s.ship != nil {
				time.AfterFunc(100*time.Millisecond, s.ship.Kick)
			}
		}
	}()
	return stop
}
