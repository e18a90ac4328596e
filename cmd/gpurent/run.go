//go:build unix

package main

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpurent/gpurent/internal/catalog"
	"github.com/gpurent/gpurent/internal/cliflag"
	"github.com/gpurent/gpurent/internal/release"
	"github.com/gpurent/gpurent/internal/runner"
	"github.com/gpurent/gpurent/internal/store"
	"github.com/gpurent/gpurent/internal/units"
	"github.com/gpurent/gpurent/internal/usage"
	"github.com/gpurent/gpurent/internal/userfile"
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
	WhenDone    string   `yaml:"when_done"`
	IdleStop    string   `yaml:"idle_stop"`
	Command     []string `yaml:"command"`
}

// runOptions are gpurent run's flags: the session's options, the store's
// flags and the config file they may come from.
type runOptions struct {
	runner.Options
	store     storeFlags
	config    string
	endpoints []string
}

func newRun(g *globals) *cobra.Command {
	var o runOptions
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
crash loop; 2 bad usage; 74 as 0 or 75, but the newest checkpoint's upload failed, so
this machine holds the only copy; 75 stopped on a preemption notice or a scheduled
event (run it again, later or elsewhere), because --budget was reached (run again,
it counts what was spent and starts nothing), or idle (--idle-stop); 128+N stopped
by signal N.

--when-done stop|destroy stops the meter once the work is safe: after a 0 (never
after a failure unless --when-done-on-failure; never a destroy while the store
lacks the newest checkpoint), one request to the provider for this machine, said
in the run's log in the store and to --notify. The provider and the request are
checked before the command starts (gpurent release has the list).`,
		Example: `  gpurent run --ckpt-dir out --glob 'checkpoint-*' --store s3://bucket/runs --run llama -- \
      python train.py --output_dir out --resume_from_checkpoint {resume}`,
		RunE: func(cmd *cobra.Command, argv []string) error {
			return runRun(cmd, g, &o, argv)
		},
	}
	o.register(cmd.Flags())
	return cmd
}

// register adds run's flags.
func (o *runOptions) register(f *pflag.FlagSet) {
	s, r := &o.store, &o.Options
	s.register(f)
	f.StringVar(&o.config, "config", "", "YAML file with ckpt_dir, store, run, keep, keep_local, max_restarts, preemption, metrics, glob, quiet, bwlimit, notify, notify_every, stall, silence, log, log_every, gpu_busy_min, price, budget, when_done, idle_stop, command (flags override)")
	f.StringVar(&r.CkptDir, "ckpt-dir", "checkpoints", "directory the command writes checkpoints to")
	f.IntVar(&r.Keep, "keep", 3, "newest checkpoints kept in the store (0: all)")
	f.IntVar(&r.KeepLocal, "keep-local", 0, "newest checkpoints kept in --ckpt-dir: older ones are deleted once the store holds a newer one (0: all)")
	f.IntVar(&r.MaxRestarts, "max-restarts", 10, "restarts after failures before giving up")
	f.StringVar(&r.Preemption, "preemption", "auto", "preemption notices to watch: auto, gcp, azure, aws, alibaba, tencent or none")
	f.StringVar(&r.Metrics, "metrics", "", "serve Prometheus metrics on this address (\":9464\" binds 127.0.0.1)")
	f.StringVar(&r.Glob, "glob", "", "only names in --ckpt-dir matching this glob are checkpoints")
	cliflag.DurationVar(f, &r.Quiet, "quiet", 5*time.Second, "a plain file or directory must be unmodified this long to count as complete")
	cliflag.DurationVar(f, &r.Grace, "stop-grace", 30*time.Second, "from forwarding SIGTERM to the command to killing it")
	cliflag.DurationVar(f, &r.Poll, "poll", time.Second, "how often --ckpt-dir is scanned")
	cliflag.DurationVar(f, &r.Stall, "stall", 0, "restart the command when it has written no new checkpoint for this long (hung); 0 only warns, at three times the usual interval")
	cliflag.DurationVar(f, &r.Silence, "silence", 0, "with --log, restart the command when it has printed nothing (and written no new checkpoint) for this long (hung); 0 only warns, at three times its longest silence")
	f.Float64Var(&r.GPUBusyMin, "gpu-busy-min", 50, "warn (and notify) when a GPU of this machine ran kernels less than this percent of 10 min while the command ran, 5 min after each start (NVML utilization: idle GPUs are billed too); 0 never warns (a GPU the hardware slows down for heat is warned of regardless)")
	f.BoolVar(&r.NoStatus, "no-status", false, "no status line at the bottom of the terminal")
	f.StringVar(&r.Price, "price", "", "the machine's hourly price, e.g. 2.49 (USD), 2.49USD or 18CNY, or the catalog offer rented, by the id quote prints (ID:spot for its spot price): what the run has cost so far goes in the status line, the progress notifications and the end")
	f.StringVar(&r.Budget, "budget", "", "the most the machine may cost while gpurent runs the run, at --price (300, or 300USD in its currency), its earlier sessions counted (in --ckpt-dir, and with --store on other machines): a notification at 80%, and before it is spent the command is asked for a checkpoint, stopped and its checkpoint uploaded (exit 75)")
	f.StringVar(&r.Log, "log", "", "append the command's output to this file and, with --store, ship it there (encrypted) every --log-every and at each restart: gpurent ckpt log reads it back")
	cliflag.DurationVar(f, &r.LogEvery, "log-every", 5*time.Minute, "how often new output in --log is shipped to the store")
	cliflag.DurationVar(f, &r.NotifyEvery, "notify-every", 0, "with --notify, also say every this long how the run stands (with --log, its last lines); 0: never")
	f.StringVar(&r.Notify, "notify", "", "file holding a webhook URL (Slack, Discord, Feishu/Lark, DingTalk, WeCom or any JSON endpoint; a signed DingTalk or Feishu/Lark bot's secret on the next line) told of the start, restarts, stalls, notices, a failing store and the end (default $GPURENT_NOTIFY)")
	f.StringVar(&r.WhenDone, "when-done", "", "stop or destroy this machine once the command exited 0 and its newest checkpoint is in the store (gpurent release; destroy needs --store)")
	f.BoolVar(&r.WhenDoneOnFailure, "when-done-on-failure", false, "release as --when-done says after a failure too (never a destroy while the store lacks the newest checkpoint)")
	cliflag.DurationVar(f, &r.IdleStop, "idle-stop", 0, "with --log, when the command has printed nothing, written no checkpoint and kept no GPU above --gpu-busy-min this long: ask it for a checkpoint, stop it and release the machine as --when-done says (default stop); 0: never")
	f.StringVar(&r.Release.Provider, "provider", "", "the provider --when-done and --idle-stop release through, instead of finding it: runpod, vast, lambda, autodl, aws, gcp or azure")
	f.StringArrayVar(&o.endpoints, "endpoint", nil, "NAME=URL: ask URL instead of a provider's API or metadata service when releasing (as gpurent release; repeatable)")
	f.StringVar(&r.Metadata.AWS, "metadata-aws", "", "AWS instance metadata endpoint (default http://169.254.169.254)")
	f.StringVar(&r.Metadata.GCP, "metadata-gcp", "", "GCP metadata endpoint (default http://metadata.google.internal)")
	f.StringVar(&r.Metadata.Azure, "metadata-azure", "", "Azure metadata endpoint (default http://169.254.169.254; VMs outside a VNET must discover theirs)")
	f.StringVar(&r.Metadata.Alibaba, "metadata-alibaba", "", "Alibaba Cloud ECS metadata endpoint (default http://100.100.100.200)")
	f.StringVar(&r.Metadata.Tencent, "metadata-tencent", "", "Tencent Cloud CVM metadata endpoint (default http://metadata.tencentyun.com)")
}

// runRun merges the config file into the flags not given, and runs the
// session. A wrong value is named where it came from: the flag, or the
// config file's line and field.
func runRun(cmd *cobra.Command, g *globals, o *runOptions, argv []string) error {
	var file runFile
	var ix *yamlfile.Index
	if o.config != "" {
		data, err := readFile("--config", o.config, maxConfigSize)
		if err != nil {
			return err
		}
		if ix, err = yamlfile.Decode(o.config, data, &file); err != nil {
			return err
		}
	}
	fs := cmd.Flags()
	badFlag := func(flag string, err error) error {
		field := strings.ReplaceAll(flag, "-", "_")
		if fs.Changed(flag) || ix == nil || !ix.Has(field) {
			return usagef("--%s: %w", flag, err)
		}
		return usage.Wrap(ix.Place(o.config, []yamlfile.Problem{yamlfile.Problemf(field, "%v", err)}))
	}
	r, s := &o.Options, &o.store
	pick := func(flag, fromFile string, v *string) {
		if !fs.Changed(flag) && fromFile != "" {
			*v = fromFile
		}
	}
	pick("ckpt-dir", file.CkptDir, &r.CkptDir)
	pick("store", file.Store, &s.URL)
	pick("run", file.Run, &s.Run)
	pick("preemption", file.Preemption, &r.Preemption)
	pick("metrics", file.Metrics, &r.Metrics)
	pick("glob", file.Glob, &r.Glob)
	pick("bwlimit", file.BWLimit, &s.BWLimit)
	pick("notify", file.Notify, &r.Notify)
	pick("log", file.Log, &r.Log)
	pick("price", file.Price, &r.Price)
	pick("budget", file.Budget, &r.Budget)
	pick("when-done", file.WhenDone, &r.WhenDone)
	// Durations read as the flags read them (units.ParseDuration): with
	// days, so stall: 1d and --stall 1d mean one thing.
	for _, d := range []struct {
		flag, fromFile string
		v              *time.Duration
	}{
		{"log-every", file.LogEvery, &r.LogEvery},
		{"stall", file.Stall, &r.Stall},
		{"silence", file.Silence, &r.Silence},
		{"notify-every", file.NotifyEvery, &r.NotifyEvery},
		{"quiet", file.Quiet, &r.Quiet},
		{"idle-stop", file.IdleStop, &r.IdleStop},
	} {
		if !fs.Changed(d.flag) && d.fromFile != "" {
			v, err := units.ParseDuration(d.fromFile)
			if err != nil {
				return badFlag(d.flag, err)
			}
			*d.v = v
		}
	}
	for _, n := range []struct {
		flag     string
		fromFile *int
		v        *int
	}{{"keep", file.Keep, &r.Keep}, {"keep-local", file.KeepLocal, &r.KeepLocal}, {"max-restarts", file.MaxRestarts, &r.MaxRestarts}} {
		if !fs.Changed(n.flag) && n.fromFile != nil {
			*n.v = *n.fromFile
		}
	}
	if !fs.Changed("gpu-busy-min") && file.GPUBusyMin != nil {
		r.GPUBusyMin = *file.GPUBusyMin
	}
	r.Command = argv
	if len(argv) == 0 {
		r.Command = file.Command
	}
	r.StoreURL, r.Run, r.Takeover = s.URL, s.Run, s.Takeover
	// --metadata-* name the same services preemption notices come from;
	// --endpoint, given later, wins.
	var named []string
	for _, m := range []struct{ cloud, url string }{{"aws", r.Metadata.AWS}, {"gcp", r.Metadata.GCP}, {"azure", r.Metadata.Azure}} {
		if m.url == "" {
			continue
		}
		if _, err := release.ParseEndpoints([]string{m.cloud + "-metadata=" + m.url}); err != nil {
			return usagef("--metadata-%s: want an http:// URL, got %q", m.cloud, m.url)
		}
		named = append(named, m.cloud+"-metadata="+m.url)
	}
	eps, err := release.ParseEndpoints(append(named, o.endpoints...))
	if err != nil {
		return usagef("--endpoint: %w", err)
	}
	r.Release.Endpoints = eps
	r.Offers = func() ([]catalog.Offer, error) {
		cat, err := loadCatalog(g)
		if err != nil {
			return nil, err
		}
		return cat.Offers, nil
	}
	r.OpenStore = func(ctx context.Context, say func(string, ...any)) (*store.Store, string, func(), error) {
		c, err := s.Crypto(true)
		if err != nil {
			return nil, "", nil, err
		}
		s.Say = say
		return s.Open(ctx, c, nil)
	}
	r.Stdout, r.Stderr, r.ExitCode, r.Printer = cmd.OutOrStdout(), cmd.ErrOrStderr(), exitStatus, g.tr
	code, err := runner.Run(cmd.Context(), *r)
	if oe := (*runner.OptionError)(nil); errors.As(err, &oe) {
		return badFlag(oe.Flag, oe.Err)
	}
	if err != nil {
		return err
	}
	if code != 0 {
		return exitCode(code)
	}
	return nil
}

// readFile reads a file the user named with flag, no larger than max
// bytes (userfile.Read: a FIFO, a device or a file over the cap is
// refused, never waited on or read to its end). A file that cannot be
// read is bad usage, and the message names the flag.
func readFile(flag, path string, max int64) ([]byte, error) {
	data, err := userfile.Read(path, max)
	if err != nil {
		return nil, usagef("%s: %w", flag, err)
	}
	return data, nil
}

// maxConfigSize caps --config: a few dozen settings take a
// few KiB, so 1 MiB is no real file's size.
const maxConfigSize = 1 << 20
