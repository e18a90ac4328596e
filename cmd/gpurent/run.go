//go:build unix

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpurent/gpurent/internal/catalog"
	"github.com/gpurent/gpurent/internal/ledger"
	"github.com/gpurent/gpurent/internal/mounts"
	"github.com/gpurent/gpurent/internal/notify"
	"github.com/gpurent/gpurent/internal/report"
	"github.com/gpurent/gpurent/internal/runlog"
	"github.com/gpurent/gpurent/internal/store"
	"github.com/gpurent/gpurent/internal/supervise"
	"github.com/gpurent/gpurent/internal/tokens"
	"github.com/gpurent/gpurent/internal/units"
	"github.com/gpurent/gpurent/internal/yamlfile"
)

// runFile is the optional config file of gpurent run; flags override it.
type runFile struct {
	CkptDir     string   `yaml:"ckpt_dir"`
	Store       string   `yaml:"store"`
	Run         string   `yaml:"run"`
	Keep        *int     `yaml:"keep"`
	KeepLocal   *int     `yaml:"keep_local"`
	MaxRestarts *int     `yaml:"max_restarts"`
	Preemption  string   `yaml:"preemption"`
	Metrics     string   `yaml:"metrics"`
	Glob        string   `yaml:"glob"`
	Quiet       string   `yaml:"quiet"`
	BWLimit     string   `yaml:"bwlimit"`
	Notify      string   `yaml:"notify"`
	NotifyEvery string   `yaml:"notify_every"`
	Stall       string   `yaml:"stall"`
	Silence     string   `yaml:"silence"`
	Log         string   `yaml:"log"`
	LogEvery    string   `yaml:"log_every"`
	GPUBusyMin  *float64 `yaml:"gpu_busy_min"`
	Price       string   `yaml:"price"`
	Budget      string   `yaml:"budget"`
	Command     []string `yaml:"command"`
}

func newRun(g *globals) *cobra.Command {
	var s storeFlags
	var (
		config, ckptDir, preemption, metrics, glob, notifyFile, logPath string
		priceText, budgetText                                           string
		keep, keepLocal, maxRestarts                                    int
		gpuBusyMin                                                      float64
		noStatus                                                        bool
		metaAWS, metaGCP, metaAzure, metaAlibaba, metaTencent           string
		quiet, grace, poll, stall, silence, logEvery, notifyEvery       time.Duration
	)
	cmd := &cobra.Command{
		Use:   "run [flags] -- CMD [ARGS...]",
		Short: "Run training that survives crashes, preemption and a vanishing machine",
		Long: `run starts CMD and keeps it alive: each complete checkpoint that appears in --ckpt-dir
is uploaded to --store in the background (encrypted, verified, committed last), the
command is restarted from the newest checkpoint after a failure, and on a new, empty
machine the same line pulls the newest checkpoint first. Preemption notices (AWS,
GCP, Azure, Alibaba, Tencent; also GCP's host maintenance and Azure's reboot,
redeploy or deletion, two minutes ahead) make the command checkpoint at once
(SIGUSR1, sent only to processes that handle it: its default action kills), then
stop cleanly.

The command sees GPURENT_RESUME_FROM (the newest complete checkpoint, empty if none),
GPURENT_RESTART_COUNT, GPURENT_CKPT_DIR and GPURENT_RUN; "{resume}" in an argument is
replaced by the path (and dropped with its flag when there is none). docs/run.md has
PyTorch, Hugging Face, Lightning, torchrun, DeepSpeed and Megatron examples.

--log FILE keeps the command's output in FILE and ships it, encrypted, to the store
(gpurent ckpt log reads it from any machine), so the traceback of a machine that
vanished is not lost with it; the command still sees a terminal.

Exit status: 0 the command finished and its newest checkpoint is in the store (or
there is no store, or no checkpoint); 1 it failed with its restarts used up, or in a
crash loop; 2 bad usage; 3 as 0 or 75, but the newest checkpoint's upload failed, so
this machine holds the only copy; 75 stopped on a preemption notice or a scheduled
event (run it again, later or elsewhere), or because --budget was reached (run again,
it counts what was spent and starts nothing); 128+N stopped by signal N.
"gpurent run ... && shutdown -h now" stops the machine only after a 0.`,
		Example: `  gpurent run --ckpt-dir out --glob 'checkpoint-*' --store s3://bucket/runs --run llama -- \
      python train.py --output_dir out --resume_from_checkpoint {resume}`,
		RunE: func(cmd *cobra.Command, argv []string) (rerr error) {
			var file runFile
			var ix *yamlfile.Index
			if config != "" {
				data, err := readFile("--config", config, maxConfigSize)
				if err != nil {
					return err
				}
				if ix, err = yamlfile.Decode(config, data, &file); err != nil {
					return err
				}
			}
			fs := cmd.Flags()
			// bad names where a wrong value came from: the flag, or the
			// config file's line and field.
			bad := func(flag, field, format string, a ...any) error {
				if fs.Changed(flag) || ix == nil || !ix.Has(field) {
					return usagef("--%s: "+format, append([]any{flag}, a...)...)
				}
				return usageError{ix.Place(config, []yamlfile.Problem{yamlfile.Problemf(field, format, a...)})}
			}
			pick := func(flag, fromFile string, v *string) {
				if !fs.Changed(flag) && fromFile != "" {
					*v = fromFile
				}
			}
			pick("ckpt-dir", file.CkptDir, &ckptDir)
			pick("store", file.Store, &s.url)
			pick("run", file.Run, &s.run)
			pick("preemption", file.Preemption, &preemption)
			pick("metrics", file.Metrics, &metrics)
			pick("glob", file.Glob, &glob)
			pick("bwlimit", file.BWLimit, &s.bwlimit)
			pick("notify", file.Notify, &notifyFile)
			pick("log", file.Log, &logPath)
			// Durations come from the config file where the flag was not
			// given; a negative one is refused, saying what zero does
			// (log_every has its own floor, below).
			for _, d := range []struct {
				flag, field, fromFile string
				v                     *time.Duration
				parse                 func(string) (time.Duration, error)
				zero                  string // "want a positive duration such as ..., or 0 ..."
			}{
				{"log-every", "log_every", file.LogEvery, &logEvery, units.ParseDuration, ""},
				{"stall", "stall", file.Stall, &stall, units.ParseDuration, "such as 2h, or 0 to only warn"},
				{"silence", "silence", file.Silence, &silence, units.ParseDuration, "such as 30m, or 0 to only warn"},
				{"notify-every", "notify_every", file.NotifyEvery, &notifyEvery, units.ParseDuration, "such as 6h, or 0 for none"},
				{"quiet", "quiet", file.Quiet, &quiet, time.ParseDuration, "such as 5s, or 0 for none"},
			} {
				if !fs.Changed(d.flag) && d.fromFile != "" {
					v, err := d.parse(d.fromFile)
					if err != nil {
						return bad(d.flag, d.field, "%v", err)
					}
					*d.v = v
				}
				if *d.v < 0 && d.zero != "" {
					return bad(d.flag, d.field, "want a positive duration %s, got %v", d.zero, *d.v)
				}
			}
			if logEvery < 10*time.Second {
				// Each shipment is a request and an object: more often
				// than this, a week's run leaves tens of thousands.
				return bad("log-every", "log_every", "want 10s or more, got %v", logEvery)
			}
			if !fs.Changed("keep") && file.Keep != nil {
				keep = *file.Keep
			}
			if !fs.Changed("keep-local") && file.KeepLocal != nil {
				keepLocal = *file.KeepLocal
			}
			if !fs.Changed("max-restarts") && file.MaxRestarts != nil {
				maxRestarts = *file.MaxRestarts
			}
			if silence > 0 && logPath == "" {
				return bad("silence", "silence", "needs --log FILE: gpurent sees the command's output only when it keeps it")
			}
			if notifyEvery > 0 && notifyFile == "" && os.Getenv("GPURENT_NOTIFY") == "" {
				return bad("notify-every", "notify_every", "needs --notify FILE (or $GPURENT_NOTIFY): the webhook the progress goes to")
			}
			if len(argv) == 0 {
				argv = file.Command
			}
			if len(argv) == 0 {
				return usagef("no command: gpurent run [flags] -- CMD ARGS")
			}
			if dir := store.LocalDir(s.url); store.Within(dir, ckptDir) {
				return usagef("--store %s lies inside --ckpt-dir %s: every upload would look like a new checkpoint there; keep the store elsewhere", dir, ckptDir)
			}
			if keep < 0 {
				return bad("keep", "keep", "want 0 (keep all) or more, got %d", keep)
			}
			if keepLocal < 0 {
				return bad("keep-local", "keep_local", "want 0 (keep all) or more, got %d", keepLocal)
			}
			if keepLocal > 0 && s.url == "" {
				return bad("keep-local", "keep_local", "needs --store: a local checkpoint is deleted only once the store holds a newer one")
			}
			if maxRestarts < 0 {
				return bad("max-restarts", "max_restarts", "want 0 or more, got %d", maxRestarts)
			}
			if !fs.Changed("gpu-busy-min") && file.GPUBusyMin != nil {
				gpuBusyMin = *file.GPUBusyMin
			}
			if gpuBusyMin < 0 || gpuBusyMin > 100 || gpuBusyMin != gpuBusyMin {
				return bad("gpu-busy-min", "gpu_busy_min", "want a percent from 0 (never warn) to 100, got %v", gpuBusyMin)
			}
			// A glob that can match nothing would leave every checkpoint
			// unnoticed for the whole run: refused before the command
			// starts. It is matched against the names in --ckpt-dir.
			if glob != "" {
				if strings.Contains(glob, "/") {
					return bad("glob", "glob", "%q holds a /: it matches the names of the entries in --ckpt-dir, not paths; make the directory the checkpoints are saved in --ckpt-dir (--ckpt-dir out/checkpoints --glob 'step-*')", glob)
				}
				if _, err := filepath.Match(glob, ""); err != nil {
					return bad("glob", "glob", "%q: %v (a shell-style pattern, such as 'ckpt-*.pt' or 'step-[0-9]*')", glob, err)
				}
			}
			pick("price", file.Price, &priceText)
			var price hourlyPrice
			if priceText != "" {
				p, err := parsePrice(priceText)
				if err != nil && looksLikeOffer(priceText) {
					var cat *catalog.Catalog
					if cat, err = loadCatalog(g.catalogs); err != nil {
						return err
					}
					p, err = offerPrice(cat.Offers, priceText)
				}
				if err != nil {
					return bad("price", "price", "%v", err)
				}
				price = p
			}
			pick("budget", file.Budget, &budgetText)
			begun := time.Now()
			var spend budget
			if budgetText != "" {
				b, err := parseBudget(budgetText, price)
				if err != nil {
					return bad("budget", "budget", "%v", err)
				}
				spend = b
			}
			// With a price, what this session costs is recorded: in
			// --ckpt-dir and, with a store, beside the run's checkpoints
			// (ckpt runs sums it). A budget is the run's: what gpurent's
			// earlier sessions spent counts, here and with a store on other
			// machines, and a ledger that cannot be counted is exit 2;
			// without one, it only costs the record.
			var led *ledger.Ledger
			var ledErr error
			var spendStore spendRecorder
			if price.amount > 0 {
				host, _ := os.Hostname()
				if led, ledErr = ledger.Open(ckptDir, s.run, price.currency, store.NewID(begun), host, begun); ledErr != nil && spend.amount > 0 {
					return usageError{ledErr}
				}
			}
			var pre supervise.Preempter
			ep := supervise.DefaultEndpoints()
			for _, m := range []struct {
				flag     string
				url, set *string
			}{{"metadata-aws", &metaAWS, &ep.AWS}, {"metadata-gcp", &metaGCP, &ep.GCP}, {"metadata-azure", &metaAzure, &ep.Azure},
				{"metadata-alibaba", &metaAlibaba, &ep.Alibaba}, {"metadata-tencent", &metaTencent, &ep.Tencent}} {
				if *m.url == "" {
					continue
				}
				if u, err := url.Parse(*m.url); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
					return usagef("--%s: want an http:// URL, got %q", m.flag, *m.url)
				}
				*m.set = strings.TrimSuffix(*m.url, "/")
			}
			var out *runlog.Output
			var logMu sync.Mutex // lines come from the supervisor's goroutines and the GPU watch's
			logf := func(format string, a ...any) {
				logMu.Lock()
				defer logMu.Unlock()
				// Lines name checkpoints, processes and files: text, not
				// terminal controls, and one event a line (a checkpoint
				// named "a\nb" must not start a line of its own).
				line := report.Safe(fmt.Sprintf(format, a...))
				fmt.Fprintf(cmd.ErrOrStderr(), "gpurent: %s\n", line)
				if out != nil {
					out.Note(line)
				}
			}
			if price.from != "" {
				logf("the cost shown is at %s, %s", price, price.from)
			}
			if ledErr != nil {
				logf("warning: %v; this session's cost is not recorded", ledErr)
			}
			if logPath != "" {
				o, err := openOutput(cmd, logPath)
				if err != nil {
					return err
				}
				out = o
				defer out.Close(2 * time.Second)
				if st, err := os.Stat(logPath); err == nil && st.Mode().Perm()&0o077 != 0 {
					// Made by an earlier `> train.log`: kept as it is, but
					// a shared machine's other accounts read it.
					logf("warning: --log %s is readable by other users (mode %v); chmod 600 it if the output is private", logPath, st.Mode().Perm())
				}
			}
			hook, err := openWebhook(notifyFile)
			if err != nil {
				return err
			}
			event := func(kind, text, output string) {}
			endReason := ""
			var ship *runlog.Shipper
			if hook != nil {
				// Started first, so that a run that cannot start (a store
				// that does not answer on a new machine's boot) is heard of
				// too; the end is sent whatever RunE returns.
				var end func(error, string, string)
				event, end = startEvents(cmd.Context(), hook, s.run, logf)
				defer func() {
					output := ""
					if out != nil && exitStatus(rerr) == 1 {
						output = out.Tail(tailLines) // it failed: the last words say why
					}
					end(rerr, endReason, output)
				}()
			}
			// A poller whose metadata service never answers misses every
			// notice without a word: say which cloud is watched, or none.
			cloud := preemption
			switch preemption {
			case "none":
			case "auto":
				var name string
				if name, pre = supervise.Auto(cmd.Context(), ep); pre != nil {
					cloud = name
					logf("watching %s's preemption notices", name)
				} else {
					logf("no cloud metadata service answered (%s): preemption notices are not watched (--preemption none skips this check)",
						strings.Join(supervise.Clouds(), ", "))
				}
			default:
				if pre = supervise.For(preemption, ep); pre == nil {
					return bad("preemption", "preemption", "want auto, %s or none, got %q", strings.Join(supervise.Clouds(), ", "), preemption)
				}
				if !supervise.Answers(cmd.Context(), preemption, ep) {
					hint := ""
					if preemption == "aws" { // reference: resume_security.md §1a, hop limit
						hint = " (in a container, IMDSv2 needs the instance's hop limit at 2 or more)"
					}
					logf("warning: %s's metadata service does not answer: its preemption notices will be missed while it does not%s", preemption, hint)
				}
			}
			supEvent := func(kind, text string) {
				output := ""
				if out != nil && hook != nil && (kind == "restart" || kind == "stall") {
					output = out.Tail(tailLines)
				}
				event(kind, text, output)
				switch kind {
				case "restart", "notice", "stall":
					// The command's last lines (a traceback) reach the log
					// file a moment after it exits: ship them before a new
					// machine is all that is left.
					if ship != nil {
						time.AfterFunc(time.Second, ship.Kick)
					}
				}
			}
			cfg := supervise.Config{Cmd: argv, CkptDir: ckptDir, Run: s.run, Keep: keep, MaxRestarts: maxRestarts,
				Grace: grace, Poll: poll, Quiet: quiet, Glob: glob, Preemption: pre, Log: logf, Event: supEvent, Stall: stall, KeepLocal: keepLocal}
			if out != nil {
				cfg.Stdout, cfg.Stderr = out.Stdout, out.Stderr
				cfg.Output, cfg.Silence = out.LastOutput, silence
				if _, set := os.LookupEnv("PYTHONUNBUFFERED"); !out.PTY && !set {
					// On pipes Python holds stdout in 8 KiB blocks: lines
					// would reach the log minutes late, and those of a
					// trainer the OOM killer ends, never. As on a terminal,
					// each line goes when printed (PYTHONUNBUFFERED= keeps
					// the blocks).
					cfg.Env = append(cfg.Env, "PYTHONUNBUFFERED=1")
				}
				if sameDir(filepath.Dir(logPath), ckptDir) {
					// A log without ".log" (or one --glob matches) would
					// count as a checkpoint, uploaded as it grows.
					cfg.Exclude = []string{filepath.Base(logPath)}
				}
				cfg.Explain = func() []string {
					// Asked as the command has exited: the lines it
					// printed as it died are still being copied.
					time.Sleep(100 * time.Millisecond)
					return runlog.Explain(out.Tail(200))
				}
			}
			if pre != nil {
				cfg.Cloud, cfg.Notice = cloud, supervise.ShortestNotice(cloud)
			}
			if s.url != "" {
				c, err := s.crypto(true)
				if err != nil {
					return err
				}
				s.say = logf // a store's retries go where run's messages go
				st, name, closeFn, err := s.open(cmd.Context(), c, nil)
				if err != nil {
					return err
				}
				defer closeFn()
				cfg.Store = st
				logf("checkpoints from %s go to %s, run %s", ckptDir, name, s.run)
				// A local path is off the box only on a network file
				// system (NFS, a FUSE mount of a bucket, a provider's
				// shared volume); on the machine's own disks it survives
				// the command, not the machine.
				if dir := store.LocalDir(s.url); dir != "" {
					if m, ok := mounts.Read("/").Find(dir); ok && !m.Network() {
						logf("warning: the store %s is on this machine's own storage (%s on %s), not a network file system: unless that disk outlives the machine (a cloud volume kept at release), the checkpoints die with it; s3://, gs:// or azblob:// keep them off the box", dir, m.FSType, m.Source)
					}
				}
				// Found now, not at the first checkpoint hours later.
				deleted, err := st.CheckWrite(cmd.Context(), s.run)
				if err != nil {
					err = fmt.Errorf("%w; no checkpoint could be kept there (nothing was started)", err)
					if store.IsPermissionDenied(err) {
						return usageError{err}
					}
					return err
				}
				// One run per --ckpt-dir, then one session per run:
				// refused here, before anything is resumed or started.
				// The directory first: a second run there must not take
				// the run from the first and then stop on the lock.
				unlock, err := supervise.LockDir(ckptDir, s.run)
				if err != nil {
					return err
				}
				defer unlock()
				cfg.DirLocked = true
				lease, err := st.TakeLease(cmd.Context(), s.run, "gpurent run", s.takeover)
				if err != nil {
					return fmt.Errorf("%w (nothing was started)", err)
				}
				defer lease.Release(cmd.Context())
				st.Hold(lease)
				cfg.Lease = lease
				if s.takeover {
					logf("took run %s (session %s, generation %d): a session that held it commits nothing more", s.run, lease.Info().Session, lease.Info().Generation)
				}
				if !deleted && keep > 0 {
					logf("warning: the store took a write but refused to delete it (runs/%s/write-check in %s): checkpoints are uploaded, but --keep %d cannot prune old ones there (a key without delete permission)", s.run, name, keep)
				}
				if led != nil {
					spendStore = st
				}
				if led != nil && spend.amount > 0 {
					recs, err := st.Spends(cmd.Context(), s.run)
					if err != nil {
						logf("warning: %v: the budget counts the run's sessions on this machine only", err)
					} else if err := led.Merge(recs, "delete "+name+"'s runs/"+s.run+"/spend/"); err != nil {
						return usageError{err}
					}
				}
				previousLog(cmd.Context(), st, s.run, logf)
				if out != nil {
					sl := &storeLog{st: st, run: s.run, started: out.Opened}
					ship = runlog.Ship(cmd.Context(), logPath, out.Start, sl, logEvery, logSegment, logf)
					defer finishLog(cmd.Context(), out, ship, sl, logf)
				}
			} else {
				logf("warning: no --store: checkpoints stay on this machine and die with it")
			}
			if spend.amount > 0 {
				b := led.Before()
				spend.before = b.Spent
				earlier := ""
				if b.Sessions > 0 {
					where := "here"
					if b.Elsewhere > 0 {
						where = fmt.Sprintf("(%d on other machines)", b.Elsewhere)
					}
					earlier = fmt.Sprintf("; run %s has cost %.2f %s of it in %s %s since %s",
						s.run, b.Spent, price.currency, report.Count(b.Sessions, "earlier session"), where, b.Since.UTC().Format("2006-01-02 15:04 MST"))
				}
				if spend.lasts() <= spend.window() {
					// Started again after the budget stopped it (systemd's
					// Restart=always, a reboot): starting the command would
					// spend past the budget.
					reset := led.Path()
					if spendStore != nil {
						reset += " and the store's runs/" + s.run + "/spend/"
					}
					endReason = fmt.Sprintf("the --budget %s is spent: the command was not started", spend)
					logf("budget %s%s, and what is left lasts less than the %s a checkpoint is given: the command is not started (exit 75); a larger --budget counts from the same total, and removing %s counts from zero",
						spend, earlier, shortDur(spend.window()), reset)
					return exitCode(supervise.ExitStopped)
				}
				end := begun.Add(spend.lasts())
				logf("budget %s%s: at %s it is spent in %s (%s); the command is asked for a checkpoint %s before, then stopped (exit 75)",
					spend, earlier, price, shortDur(spend.lasts()), end.UTC().Format("2006-01-02 15:04 MST"), shortDur(spend.window()))
				stopIn := spend.lasts() - spend.window()
				cfg.Until, cfg.UntilWindow = begun.Add(stopIn), spend.window()
				cfg.UntilWhy = fmt.Sprintf("--budget %s: the machine has cost %s of it", spend, spend.spentBy(stopIn))
				// Told ahead, while there is time to raise the budget
				// (restart gpurent run with a larger one) or to let it end;
				// past it already, the start's line said so.
				if at := spend.until(spend.amount * 0.8); at > 0 {
					warn := time.AfterFunc(at, func() {
						text := fmt.Sprintf("the machine has cost %s of the %s budget: the command is stopped with a checkpoint in %s",
							spend.spentBy(at), spend, shortDur(stopIn-at))
						logf("%s", text)
						event("budget", text, "")
					})
					defer warn.Stop()
				}
			}
			if led != nil {
				// Kept as it is spent, so that a gpurent killed or a machine
				// that lost power loses at most one interval's cost: every
				// minute, and every 5 in the store; more often for a budget
				// of minutes. The directory is made now rather than with the
				// supervisor.
				every, storeEvery := time.Minute, 5*time.Minute
				if spend.amount > 0 {
					every, storeEvery = max(min(every, spend.window()/4), 100*time.Millisecond), max(min(storeEvery, spend.window()), time.Second)
				}
				if err := os.MkdirAll(ckptDir, 0o755); err != nil {
					return fmt.Errorf("run: %w", err)
				}
				defer recordSpend(cmd.Context(), led, spendStore, s.run, price, begun, every, storeEvery, logf)()
			}
			if glob == "" && sameDir(ckptDir, ".") {
				logf("warning: --ckpt-dir is the working directory: any file in it but code, logs, notebooks and configs counts as a checkpoint; name yours with --glob (e.g. --glob 'ckpt-*.pt')")
			}
			// A GPU that fell off the bus, an Xid, a disk failing writes:
			// causes of the failures that follow, which the command's
			// output may not name.
			var gpus *gpuWatch
			kern := startKernWatch(cmd.Context(), kernelLogPath(), "", ckptDir, logf, supEvent)
			defer kern.stop()
			explain := cfg.Explain
			cfg.Explain = func() []string {
				var causes []string
				if explain != nil {
					causes = explain()
				}
				if w := gpus.watch(); w != nil && w.Lost() != "" {
					causes = append(causes, w.Lost())
				}
				return append(causes, kern.causes()...)
			}
			sup, err := supervise.New(cfg)
			if err != nil {
				return usageError{err}
			}
			running := func() bool { return sup.Metrics.Snapshot(time.Now()).ChildUp }
			gpus = startGPUWatch(cmd.Context(), gpuBusyMin, price, running, logf, supEvent)
			defer gpus.stop()
			if hook != nil && notifyEvery > 0 {
				// A run of days is watched from a phone: every
				// --notify-every, where it stands and, with --log, its
				// last lines (a progress bar's state, the loss).
				beat := time.NewTicker(notifyEvery)
				done := make(chan struct{})
				defer func() { beat.Stop(); close(done) }()
				started := time.Now()
				go func() {
					for {
						select {
						case <-done:
							return
						case now := <-beat.C:
							output := ""
							if out != nil {
								output = out.Tail(progressLines)
							}
							event("progress", progressText(sup.Metrics.Snapshot(now), now.Sub(started), price.costOf(now.Sub(begun), spend)), output)
						}
					}
				}()
			}
			if metrics != "" {
				addr := metrics
				if strings.HasPrefix(addr, ":") {
					addr = "127.0.0.1" + addr
				}
				ln, err := net.Listen("tcp", addr)
				if err != nil {
					return usagef("--metrics %s: %v", metrics, err)
				}
				srv := &http.Server{Handler: metricsHandler(&sup.Metrics, gpus, kern, costMetric{price, begun, spend}), ReadHeaderTimeout: 5 * time.Second}
				go srv.Serve(ln)
				defer srv.Close()
				logf("metrics on http://%s/metrics", ln.Addr())
				if a, ok := ln.Addr().(*net.TCPAddr); ok && !a.IP.IsLoopback() {
					logf("warning: --metrics %s serves every machine that can reach this one, with no login (the run's name, progress, costs and GPUs for anyone); bind 127.0.0.1:%d and reach it with ssh -L %d:127.0.0.1:%d unless that is what you want", metrics, a.Port, a.Port, a.Port)
				}
			}
			if f, ok := cmd.ErrOrStderr().(*os.File); ok && !noStatus {
				status := startStatus(f, func(cols int) string {
					now := time.Now()
					return statusText(sup.Metrics.Snapshot(now), busyText(gpus), price.costOf(now.Sub(begun), spend), cols)
				})
				defer status.end()
			}
			stop := make(chan os.Signal, 1)
			sigs := []os.Signal{syscall.SIGTERM, syscall.SIGINT}
			// Under nohup SIGHUP is ignored, and asking for it would undo
			// that (signal.Notify installs a handler): leave it be.
			if !signal.Ignored(syscall.SIGHUP) {
				sigs = append(sigs, syscall.SIGHUP)
				if f, ok := cmd.ErrOrStderr().(*os.File); ok && isTerminal(f) && os.Getenv("TMUX") == "" && os.Getenv("STY") == "" {
					saved := ""
					if cfg.Store != nil {
						saved = " and its newest checkpoint uploaded"
					}
					logf("if this terminal closes (an SSH connection drops), the command is stopped%s; to keep training, run gpurent under tmux, screen or nohup", saved)
				}
			}
			sigc := make(chan os.Signal, 1)
			signal.Notify(sigc, sigs...)
			defer func() { signal.Stop(sigc); close(sigc) }()
			go func() {
				for sig := range sigc {
					select {
					case stop <- sig:
					default:
					}
					// A machine taken away may not live to the end's
					// shipment (a RunPod spot pod gets SIGKILL 5 s after
					// SIGTERM): ship what the command printed now, once
					// the supervisor has noted the signal in the log.
					if ship != nil {
						time.AfterFunc(100*time.Millisecond, ship.Kick)
					}
				}
			}()
			ex, err := sup.Run(context.WithoutCancel(cmd.Context()), stop)
			if err != nil {
				return err
			}
			if w := gpus.watch(); w != nil {
				if s := w.Summary(); s != "" {
					logf("%s", s)
				}
			}
			logf("%s", ex.Reason)
			endReason = ex.Reason
			if price.amount > 0 {
				spent := price.spent(time.Since(begun))
				if spend.before > 0 {
					spent += fmt.Sprintf("; with gpurent's earlier sessions of run %s, %s of the %s budget", s.run, spend.spentBy(time.Since(begun)), spend)
				}
				logf("%s", spent)
				endReason += "; " + spent
			}
			if ex.Code != 0 {
				return exitCode(ex.Code)
			}
			return nil
		},
	}
	s.register(cmd.Flags())
	f := cmd.Flags()
	f.StringVar(&config, "config", "", "YAML file with ckpt_dir, store, run, keep, keep_local, max_restarts, preemption, metrics, glob, quiet, bwlimit, notify, notify_every, stall, silence, log, log_every, gpu_busy_min, price, budget, command (flags override)")
	f.StringVar(&ckptDir, "ckpt-dir", "checkpoints", "directory the command writes checkpoints to")
	f.IntVar(&keep, "keep", 3, "newest checkpoints kept in the store (0: all)")
	f.IntVar(&keepLocal, "keep-local", 0, "newest checkpoints kept in --ckpt-dir: older ones are deleted once the store holds a newer one (0: all)")
	f.IntVar(&maxRestarts, "max-restarts", 10, "restarts after failures before giving up")
	f.StringVar(&preemption, "preemption", "auto", "preemption notices to watch: auto, gcp, azure, aws, alibaba, tencent or none")
	f.StringVar(&metrics, "metrics", "", "serve Prometheus metrics on this address (\":9464\" binds 127.0.0.1)")
	f.StringVar(&glob, "glob", "", "only names in --ckpt-dir matching this glob are checkpoints")
	durationVar(f, &quiet, "quiet", 5*time.Second, "a plain file or directory must be unmodified this long to count as complete")
	durationVar(f, &grace, "stop-grace", 30*time.Second, "from forwarding SIGTERM to the command to killing it")
	durationVar(f, &poll, "poll", time.Second, "how often --ckpt-dir is scanned")
	durationVar(f, &stall, "stall", 0, "restart the command when it has written no new checkpoint for this long (hung); 0 only warns, at three times the usual interval")
	durationVar(f, &silence, "silence", 0, "with --log, restart the command when it has printed nothing (and written no new checkpoint) for this long (hung); 0 only warns, at three times its longest silence")
	f.Float64Var(&gpuBusyMin, "gpu-busy-min", 50, "warn (and notify) when a GPU of this machine ran kernels less than this percent of 10 min while the command ran, 5 min after each start (NVML utilization: idle GPUs are billed too); 0 never warns (a GPU the hardware slows down for heat is warned of regardless)")
	f.BoolVar(&noStatus, "no-status", false, "no status line at the bottom of the terminal")
	f.StringVar(&priceText, "price", "", "the machine's hourly price, e.g. 2.49 (USD), 2.49USD or 18CNY, or the catalog offer rented, by the id quote prints (ID:spot for its spot price): what the run has cost so far goes in the status line, the progress notifications and the end")
	f.StringVar(&budgetText, "budget", "", "the most the machine may cost while gpurent runs the run, at --price (300, or 300USD in its currency), its earlier sessions counted (in --ckpt-dir, and with --store on other machines): a notification at 80%, and before it is spent the command is asked for a checkpoint, stopped and its checkpoint uploaded (exit 75)")
	f.StringVar(&logPath, "log", "", "append the command's output to this file and, with --store, ship it there (encrypted) every --log-every and at each restart: gpurent ckpt log reads it back")
	durationVar(f, &logEvery, "log-every", 5*time.Minute, "how often new output in --log is shipped to the store")
	durationVar(f, &notifyEvery, "notify-every", 0, "with --notify, also say every this long how the run stands (with --log, its last lines); 0: never")
	f.StringVar(&notifyFile, "notify", "", "file holding a webhook URL (Slack, Discord, Feishu/Lark, DingTalk, WeCom or any JSON endpoint; a signed DingTalk or Feishu/Lark bot's secret on the next line) told of the start, restarts, stalls, notices, a failing store and the end (default $GPURENT_NOTIFY)")
	f.StringVar(&metaAWS, "metadata-aws", "", "AWS instance metadata endpoint (default http://169.254.169.254)")
	f.StringVar(&metaGCP, "metadata-gcp", "", "GCP metadata endpoint (default http://metadata.google.internal)")
	f.StringVar(&metaAzure, "metadata-azure", "", "Azure metadata endpoint (default http://169.254.169.254; VMs outside a VNET must discover theirs)")
	f.StringVar(&metaAlibaba, "metadata-alibaba", "", "Alibaba Cloud ECS metadata endpoint (default http://100.100.100.200)")
	f.StringVar(&metaTencent, "metadata-tencent", "", "Tencent Cloud CVM metadata endpoint (default http://metadata.tencentyun.com)")
	return cmd
}

// startEvents sends run's events to hook, each naming the run and this
// host; credentials of the formats internal/tokens knows are taken out of
// the command's lines first, since a chat channel is read by more people
// than the machine. end sends the last one, with the exit status err makes (reason is
// the supervisor's line when err is only that status), and waits up to
// 15 s for the queue to empty.
func startEvents(ctx context.Context, hook *notify.Webhook, run string, logf func(string, ...any)) (event func(kind, text, output string), end func(err error, reason, output string)) {
	q := hook.Start(func(format string, a ...any) { logf("notify: "+format, a...) })
	host, _ := os.Hostname()
	post := func(kind, text, output string, code *int) {
		q.Post(notify.Event{Kind: kind, Run: run, Host: host, Time: time.Now().UTC(), ExitCode: code,
			Text: fmt.Sprintf("gpurent run %s on %s: %s", run, host, text), Output: tokens.Redact(output)})
	}
	logf("events go to %s (%s)", hook.Where(), hook.Service())
	event = func(kind, text, output string) { post(kind, text, output, nil) }
	end = func(err error, reason, output string) {
		code := exitStatus(err)
		var ec exitCode
		if err != nil && !errors.As(err, &ec) {
			reason = err.Error()
		}
		post("end", reason, output, &code)
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
		defer cancel()
		q.Close(ctx)
	}
	return event, end
}

// maxNotifySize caps the --notify file: a webhook URL and a signing
// secret fit in a few hundred bytes.
const maxNotifySize = 64 << 10

// openWebhook is where run's events go: the URL in the file --notify
// names, else $GPURENT_NOTIFY; nil for neither. The URL is a credential
// (whoever has it posts to the channel), so it is never taken from the
// command line, which every account on the machine reads with ps.
func openWebhook(path string) (*notify.Webhook, error) {
	raw, where := os.Getenv("GPURENT_NOTIFY"), "$GPURENT_NOTIFY"
	if path != "" {
		if strings.Contains(path, "://") {
			return nil, usagef("--notify: give a file that holds the webhook URL, not the URL: every account on this machine reads command lines (ps), and the URL's token posts to your channel")
		}
		data, err := readFile("--notify", path, maxNotifySize)
		if err != nil {
			return nil, err
		}
		if st, err := os.Stat(path); err == nil && st.Mode().Perm()&0o077 != 0 {
			// As with the age identity: on a shared machine another
			// account would post to the channel.
			return nil, usagef("--notify %s is readable by other users (mode %v): chmod 600 it", path, st.Mode().Perm())
		}
		raw, where = strings.TrimSpace(string(data)), "--notify "+path
		if raw == "" {
			return nil, usagef("%s: the file is empty; want the webhook URL", where)
		}
	}
	if raw == "" {
		return nil, nil
	}
	// The URL, then, for a DingTalk or Feishu/Lark bot that verifies
	// signatures, its secret on the next line.
	var lines []string
	for _, l := range strings.Split(raw, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) > 2 {
		return nil, usagef("%s: want the webhook URL and, for a signed DingTalk or Feishu/Lark bot, its secret on the next line; found %d lines", where, len(lines))
	}
	w, err := notify.New(lines[0])
	if err != nil {
		return nil, usagef("%s: %v", where, err)
	}
	if len(lines) == 2 {
		if err := w.Sign(lines[1]); err != nil {
			return nil, usagef("%s: %v", where, err)
		}
	}
	return w, nil
}

// sameDir reports whether a and b are the same directory, through symlinks.
func sameDir(a, b string) bool {
	ia, err1 := os.Stat(a)
	ib, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(ia, ib)
}

// progressLines is how many of the command's last lines a progress
// notification carries: a progress bar and the lines logged above it.
const progressLines = 3

// tailLines is how many of the command's last lines a notification of a
// restart, a stall or a failed end carries (with --log): a Python
// traceback's last frames and its error.
const tailLines = 12

// logSegment is the most one shipment of the log holds: a store request of
// a size every backend takes in one piece.
const logSegment = 8 << 20

// openOutput opens --log: the command's output is copied there as it is
// shown.
func openOutput(cmd *cobra.Command, path string) (*runlog.Output, error) {
	if strings.HasSuffix(path, string(os.PathSeparator)) {
		return nil, usagef("--log %s: want a file, not a directory", path)
	}
	stdout, ok1 := cmd.OutOrStdout().(*os.File)
	stderr, ok2 := cmd.ErrOrStderr().(*os.File)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("--log: gpurent's output is not a file")
	}
	o, err := runlog.Open(runlog.Options{Path: path, Stdout: stdout, Stderr: stderr})
	if err != nil {
		return nil, usagef("--log: %v", err)
	}
	return o, nil
}

// finishLog stops the copying and ships what is left of the log, for up to
// 20 s: what is left is small, a store that takes longer is failing, and
// the end's notification waits for this (on a preempted machine, seconds
// count).
func finishLog(ctx context.Context, out *runlog.Output, ship *runlog.Shipper, sl *storeLog, logf func(string, ...any)) {
	out.Close(2 * time.Second)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 20*time.Second)
	defer cancel()
	if err := ship.Close(ctx); err != nil {
		logf("log: the end of the output is on this machine only: %v", err)
		return
	}
	if sl.w != nil {
		logf("log: in the store as session %s of run %s (gpurent ckpt log --run %s)", sl.w.Session(), sl.run, sl.run)
	}
}

// storeLog is the run's log in the store: a session begun at the first
// shipment, so that a store that does not answer at the start costs the
// log nothing but time.
type storeLog struct {
	st      *store.Store
	run     string
	started time.Time // when the output began, the session's start
	w       *store.LogWriter
}

func (l *storeLog) Append(ctx context.Context, data []byte) error {
	if l.w == nil {
		w, err := l.st.NewLog(ctx, l.run, l.started)
		if err != nil {
			return err
		}
		l.w = w
	}
	return l.w.Append(ctx, data)
}

// previousLog prints the last lines of the run's newest log session when
// another machine shipped it: on a new machine the first question is why
// the last one stopped, and its own last lines (gpurent's among them)
// usually say. Nothing is printed when there is no such log, or the
// store is slow (it never holds up the start for long).
func previousLog(ctx context.Context, st *store.Store, run string, logf func(string, ...any)) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	ss, err := st.LogSessions(ctx, run)
	if err != nil || len(ss) == 0 {
		return
	}
	last := &ss[len(ss)-1]
	if host, _ := os.Hostname(); last.Host == host || last.Segments == 0 {
		return
	}
	const want = 10
	var text string
	first := last.Segments
	for first > 0 && first > last.Segments-3 && strings.Count(text, "\n") <= want {
		first--
		var buf bytes.Buffer
		if err := st.ReadLogSegment(ctx, last, first, &buf); err != nil {
			if !errors.Is(err, store.ErrNoIdentity) { // a machine that only pushes need not read
				logf("the previous session's log (on %s) could not be read: %v", last.Host, err)
			}
			return
		}
		text = buf.String() + text
	}
	shown := runlog.LastLines(text, want, first > 0)
	if shown == "" {
		return
	}
	logf("the previous session of run %s, on %s (started %s, last shipped %s), ended with:", run, last.Host,
		last.Started.Local().Format("2006-01-02 15:04"), last.Updated.Local().Format("2006-01-02 15:04"))
	for _, l := range strings.Split(shown, "\n") {
		logf("  | %s", l)
	}
}
