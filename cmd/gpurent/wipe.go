//go:build unix

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpurent/gpurent/internal/atomicfile"
	"github.com/gpurent/gpurent/internal/audit"
	"github.com/gpurent/gpurent/internal/cliflag"
	"github.com/gpurent/gpurent/internal/gpuwipe"
	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/render"
	"github.com/gpurent/gpurent/internal/report"
	"github.com/gpurent/gpurent/internal/statedir"
	"github.com/gpurent/gpurent/internal/storeconf"
	"github.com/gpurent/gpurent/internal/usage"
	"github.com/gpurent/gpurent/internal/wipe"
)

// wipeOptions are wipe's flags.
type wipeOptions struct {
	s                                        storeFlags
	yes, docker, noOverwrite, removeIdentity bool
	gpu, gpuForce                            bool
	ckpts, exclude, oldKeep                  []string
	requireBackup, reportPath, since, root   string
	recent                                   time.Duration
}

func newWipe(g *globals) *cobra.Command {
	var o wipeOptions
	cmd := &cobra.Command{
		Use:   "wipe [PATH...]",
		Short: "Plan and carry out a verified clean-up before you release the machine",
		Long: `wipe removes what you leave on a rented machine: the data directories you name,
ML caches (Hugging Face, torch hub, pip, W&B, Triton, CUDA), credentials (AWS,
netrc/W&B, git, docker, Kaggle, gcloud, rclone, s3cmd, GitHub CLI, PyPI, npm,
Alibaba Cloud CLI and ossutil, Tencent Cloud CLI and coscmd, MinIO mc, Azure CLI,
Hugging Face token, SSH private keys, .env in this directory), shell and REPL
histories, this tenancy's idle leftovers in /tmp, /var/tmp and /dev/shm and, with
--docker, every Docker image.

It prints the plan with sizes first. Without --yes nothing is deleted: on a
terminal it asks, anywhere else it is a dry run of exactly what --yes would do.

What it never removes, on the path as resolved through links, "..", and a relative
or linked HOME, whether you named it or a variable (HF_HOME, TORCH_HOME,
PIP_CACHE_DIR, XDG_CACHE_HOME, HF_TOKEN_PATH, GPURENT_IDENTITY) points there: the
home or what holds it, /, a system directory at any depth (/etc, /usr, /var, /proc,
...; the entries of the temp directories aside), and what is kept: the age identity
(unless --remove-identity), ~/.ssh/authorized_keys, the report, and --exclude paths
(also through links). A path you chose that breaks this is refused, exit 2;
something kept inside an item stays with the directories leading to it.

A temp entry is taken only if something in it changed since the tenancy began
(--since; default when PID 1 started; unknown: none is taken), nothing changed in
the last --recent (10m), and no program uses it (cwd, root, open or mapped file,
socket). The plan says why each one is there or kept.

Each item is identified when planned (device, inode, mount id) and checked again
before it is touched, reached without following any symlink; no mount is entered or
written through (bind mounts included), symlinks are removed, never followed. On
file systems that write in place (ext2/3/4, FAT) files are overwritten once, their
allocated extents only, before unlinking; on SSDs, overlay and copy-on-write
storage only a crypto-erase is reliable, and wipe says so.

--require-backup STORE refuses to delete checkpoint directories (--ckpt, or any
directory gpurent run used) unless every file in them is in a committed checkpoint
of that store with the same bytes, and those checkpoints read back whole (a deep
verify); the dry run checks the same.

--gpu also scrubs GPU memory, after the files: for drivers and virtual GPUs that
hand one process's old data to the next, it fills the free memory of every GPU
with zeros and reads all of it back. It first reads fresh memory: where that is
all zeros the driver clears memory itself, and it says so and does nothing. A
GPU where processes hold memory is left alone (the scrub takes every free byte
for seconds, and a job still running there could crash); --gpu-force scrubs in
both cases. Memory those processes hold is theirs until they exit.

The report (removed, failed, bytes freed) is saved after every item, so a wipe
that stops half-way still says what was and was not removed. docs/audit.md has
the details.
Exit codes: 0 done or dry run, 1 something could not be removed, a GPU was not
scrubbed, or the backup check failed, 2 bad usage or a refused path.`,
		Example: `  gpurent wipe /root/autodl-tmp/data                       # dry run: the plan
  gpurent wipe /root/autodl-tmp/data --ckpt ckpts --require-backup s3://bucket/ckpt --yes
  gpurent wipe --docker --yes -o json > wipe.json
  gpurent wipe --gpu --yes                                   # also scrub free GPU memory`,
		RunE: func(cmd *cobra.Command, paths []string) error { return runWipe(cmd, g, &o, paths) },
	}
	f := cmd.Flags()
	f.BoolVar(&o.yes, "yes", false, "delete what the plan lists (without it: a dry run, or a question on a terminal)")
	f.BoolVar(&o.docker, "docker", false, "also remove every Docker image")
	f.BoolVar(&o.gpu, "gpu", false, "also fill the free memory of every GPU with zeros and read it back, where the driver does not clear memory between processes")
	f.BoolVar(&o.gpuForce, "gpu-force", false, "with --gpu: scrub also where fresh memory reads as zeros (a driver that clears it) or processes hold memory (a job still running there may crash)")
	f.BoolVar(&o.noOverwrite, "no-overwrite", false, "unlink only, even where overwriting first would mean something")
	f.StringArrayVar(&o.exclude, "exclude", nil, "leave this path alone, whether it is an item or inside one (repeatable)")
	// --keep was this flag's name; it is a count of checkpoints in run
	// and ckpt prune, so here it is refused with the new name, never
	// taken as something else.
	f.StringArrayVar(&o.oldKeep, "keep", nil, "")
	f.MarkHidden("keep")
	f.BoolVar(&o.removeIdentity, "remove-identity", false, "also remove gpurent's age identity (keep a copy elsewhere: it is the only key to your checkpoints)")
	f.StringArrayVar(&o.ckpts, "ckpt", nil, "a checkpoint directory to remove, guarded by --require-backup (repeatable)")
	f.StringVar(&o.requireBackup, "require-backup", "", "refuse to delete checkpoint directories unless every file in them is committed and verified in this store")
	f.StringVar(&o.reportPath, "report", "", "where to save the JSON report (default $XDG_STATE_HOME/gpurent/wipe-TIME.json)")
	f.StringVar(&o.s.Run, "run", "", "the store's run holding the checkpoints (default: the one gpurent run recorded in the directory)")
	f.StringVar(&o.s.Identity, "identity", "", "age identity to read the store with (default $GPURENT_IDENTITY, else $XDG_CONFIG_HOME/gpurent/identity.txt or ~/.config/gpurent/identity.txt)")
	f.BoolVar(&o.s.Insecure, "insecure", false, "allow plain http:// to a store endpoint that is not this machine")
	f.StringVar(&o.s.AuthKey, "auth-key", "", "auth key file to check checkpoints with where the identity is not here (default $GPURENT_AUTH_KEY)")
	f.BoolVar(&o.s.AllowUnauthenticated, "allow-unauthenticated", false, "count checkpoints without proof of their writer as backups (a store written before gpurent signed them)")
	f.StringVar(&o.since, "since", "", "when this tenancy began, to tell temp files from before it: a time (2026-11-30T09:00:00Z) or how long ago (2h, 3d); default: when PID 1 started")
	cliflag.DurationVar(f, &o.recent, "recent", wipe.RecentWindow, "temp entries with anything changed this recently are live work and kept (0: none)")
	f.StringVar(&o.root, "root", "", "look for temp files and mounts under this directory instead of /")
	_ = f.MarkHidden("root")
	return cmd
}

// runWipe plans the clean-up, shows the plan and, with --yes or a yes on
// the terminal, carries it out, the report saved after every item.
func runWipe(cmd *cobra.Command, g *globals, o *wipeOptions, paths []string) error {
	ctx := cmd.Context()
	if o.gpuForce && !o.gpu {
		return usagef("--gpu-force: it forces --gpu's scrub; give --gpu too")
	}
	plan, err := planWipe(ctx, o, paths)
	if err != nil {
		return err
	}
	w := cmd.ErrOrStderr()
	if g.output != report.JSON {
		w = g.stdout
	}
	var gpus []wipe.GPU
	if o.gpu {
		var note i18n.Text
		if gpus, note = gpuwipe.Plan(ctx); !note.IsZero() {
			plan.Warnings = append(plan.Warnings, note)
		}
	}
	render.WipePlan(w, g.tr, plan)
	render.WipeGPUs(w, g.tr, gpus)

	execute := o.yes
	if !o.yes {
		if in, ok := cmd.InOrStdin().(*os.File); ok && isTerminal(in) && (len(plan.Items) > 0 || len(gpus) > 0) {
			execute = confirm(in, cmd.ErrOrStderr(), g.tr, plan, len(gpus))
		}
	}
	if !execute {
		// The dry run checks the backup as --yes would, and says
		// what the store lacks (exit 1, as the real run would).
		if o.requireBackup != "" {
			if _, err := checkBackups(ctx, &o.s, o.requireBackup, plan, w, g.tr); err != nil {
				return i18n.Errorf("%w (dry run: nothing was deleted)", err)
			}
		}
		if len(gpus) > 0 {
			g.tr.Fprintf(cmd.ErrOrStderr(), "dry run: nothing was deleted or scrubbed; run again with --yes to delete and scrub what is listed\n")
		} else {
			g.tr.Fprintf(cmd.ErrOrStderr(), "dry run: nothing was deleted; run again with --yes to delete what is listed\n")
		}
		if g.output == report.JSON {
			r := wipe.DryRun(plan, time.Now().UTC())
			r.GPUs = gpus
			return report.WriteJSON(g.stdout, r)
		}
		return nil
	}

	var frozen func(string, uint64, int64, time.Time, time.Time) (bool, bool)
	if o.requireBackup != "" {
		backed, err := checkBackups(ctx, &o.s, o.requireBackup, plan, w, g.tr)
		if err != nil {
			return err
		}
		frozen = wipe.FrozenFor(backed)
	}
	if err := os.MkdirAll(filepath.Dir(o.reportPath), 0o700); err != nil {
		return i18n.Errorf("wipe report: %w", err)
	}
	// Saved under its resolved name, the one the plan keeps: a ".."
	// after a link, or a directory on the way that the wipe
	// removes, cannot send a later save elsewhere.
	if dir, err := filepath.EvalSymlinks(filepath.Dir(o.reportPath)); err == nil {
		if abs, err := filepath.Abs(dir); err == nil {
			o.reportPath = filepath.Join(abs, filepath.Base(o.reportPath))
		}
	}
	r, err := wipe.Run(ctx, plan, wipe.Exec{Docker: wipe.DockerCLI, Frozen: frozen, Save: func(r *wipe.Report) error { return saveReport(o.reportPath, r) },
		Done: func(it wipe.Result) {
			if it.Status == wipe.Removed {
				g.tr.Fprintf(w, "removed %s (%s)\n", report.Safe(render.WipeTarget(it)), report.Bytes(it.Freed))
			}
		}})
	// The GPUs last, once the files are gone: a scrub holds every free
	// byte of a GPU for seconds, and who holds memory is asked again.
	if o.gpu && err != nil {
		r.GPUs = gpuwipe.NotRun(gpus)
		_ = saveReport(o.reportPath, r) // the wipe's own error is the one to report
	}
	if o.gpu && err == nil {
		var serr error
		r.GPUs = gpuwipe.Scrub(ctx, gpus, o.gpuForce, func(gs []wipe.GPU) {
			r.GPUs = gs
			if e := saveReport(o.reportPath, r); e != nil && serr == nil {
				serr = e
			}
		})
		err = serr
		render.WipeGPUs(w, g.tr, r.GPUs)
	}
	render.WipeOutcome(w, g.tr, r, o.reportPath)
	if g.output == report.JSON {
		if jerr := report.WriteJSON(g.stdout, r); jerr != nil && err == nil {
			err = jerr
		}
	}
	if err != nil {
		return err
	}
	if r.Failed > 0 {
		return i18n.Errorf("wipe: %d of %s could not be removed completely; see %s", r.Failed, report.Count(len(r.Items), "item"), o.reportPath)
	}
	if n := gpuwipe.Failed(r.GPUs); n > 0 {
		return i18n.Errorf("wipe: the free memory of %d of %s was not scrubbed; see %s", n, report.Count(len(r.GPUs), "GPU"), o.reportPath)
	}
	return nil
}

// planWipe makes the plan: what is removed, and what is kept and why.
func planWipe(ctx context.Context, o *wipeOptions, paths []string) (*wipe.Plan, error) {
	if len(o.oldKeep) > 0 {
		return nil, usagef("--keep %s: wipe's flag for a path to leave alone is --exclude (--keep is a count of checkpoints in run and ckpt prune)", o.oldKeep[0])
	}
	if err := notThere("--report", o.reportPath); err != nil {
		return nil, err
	}
	var err error
	e := wipe.Env{Root: "/", UID: os.Getuid(), Lookup: os.LookupEnv, Docker: wipe.DockerCLI, Recent: o.recent}
	if o.recent < 0 {
		return nil, usagef("--recent %s: a duration of zero or more (0: keep nothing for being recent)", o.recent)
	}
	if o.recent == 0 {
		e.Recent = -1 // none, as asked
	}
	if o.root != "" {
		if e.Root, err = dirFlag("--root", o.root); err != nil {
			return nil, err
		}
	}
	if o.since != "" {
		if e.Since, err = parseSince(o.since, time.Now()); err != nil {
			return nil, usage.Wrap(err)
		}
	} else if t, ok := audit.TenancyStart(e.Root); ok {
		e.Since = t
	}
	if e.Home, err = os.UserHomeDir(); err != nil {
		// The plan is mostly the home's: histories, caches, keys.
		return nil, usagef("wipe: HOME is not set, and the plan needs the home directory whose histories, caches and keys it clears: set HOME (nothing was deleted)")
	}
	if e.Cwd, err = os.Getwd(); err != nil {
		return nil, i18n.Errorf("wipe: %w", err)
	}
	if exe, err := os.Executable(); err == nil {
		e.Exe, _ = filepath.EvalSymlinks(exe)
	}
	wo := wipe.Options{Docker: o.docker, NoOverwrite: o.noOverwrite, Exclude: o.exclude}
	wo.Checkpoints = append(wo.Checkpoints, o.ckpts...)
	for _, p := range paths {
		// A directory gpurent run watched is checkpoint data.
		if wipe.RunOf(p) != "" {
			wo.Checkpoints = append(wo.Checkpoints, p)
		} else {
			wo.Data = append(wo.Data, p)
		}
	}
	if o.removeIdentity {
		var fromEnv bool
		if wo.Identity, fromEnv = storeconf.IdentityPath(); fromEnv {
			wo.IdentityVars = []string{"GPURENT_IDENTITY"}
		}
	} else {
		wo.KeptIdentity, _ = storeconf.IdentityPath()
	}
	// The report is kept whatever the plan holds: it is chosen
	// before the plan, so that an item holding it leaves it.
	if o.reportPath == "" {
		if o.reportPath, err = defaultWipeReport(); err != nil {
			return nil, err
		}
	}
	wo.Report = o.reportPath
	plan, err := wipe.Make(ctx, e, wo)
	if errors.Is(err, wipe.ErrRefused) {
		return nil, usage.Wrap(i18n.Errorf("wipe: %w (nothing was deleted)", err))
	}
	if err != nil {
		return nil, err
	}
	// Checkpoints are guarded wherever the plan finds them: named,
	// or a run's directory inside a temp or data item.
	ckptDirs := plan.CheckpointDirs()
	if o.requireBackup != "" && len(ckptDirs) == 0 {
		return nil, usagef("--require-backup: no checkpoint directory to guard; name it with --ckpt DIR")
	}
	if len(ckptDirs) > 0 && o.requireBackup == "" {
		plan.Warnings = append(plan.Warnings, i18n.Textf("checkpoint data is deleted without checking a backup (%s): add --require-backup STORE", strings.Join(ckptDirs, ", ")))
	}
	return plan, nil
}

// confirm asks whether to carry out the plan: yes goes on, and in Chinese
// 是 too; anything else, or nothing, is no.
func confirm(in io.Reader, w io.Writer, tr *i18n.Printer, p *wipe.Plan, gpus int) bool {
	if gpus > 0 {
		tr.Fprintf(w, "delete these %s (%s) and scrub the free memory of %s? type yes to go on: ", render.Count(tr, len(p.Items), "item"), report.Bytes(p.Bytes), render.Count(tr, gpus, "GPU"))
	} else {
		tr.Fprintf(w, "delete these %s (%s)? type yes to go on: ", render.Count(tr, len(p.Items), "item"), report.Bytes(p.Bytes))
	}
	line, _ := bufio.NewReader(in).ReadString('\n')
	switch strings.TrimSpace(line) {
	case "yes":
		return true
	case "是":
		return tr.Lang() == i18n.Chinese
	}
	return false
}

// checkBackups runs the backup check on every checkpoint directory of the
// plan; any failure refuses the whole wipe before anything is deleted, and
// so does a file that appeared or changed in one during the checks. What
// it returns freezes the directories: the removal takes only the files
// judged (wipe.FrozenFor).
// What the wipe leaves (kept paths, mounts) is not judged.
func checkBackups(ctx context.Context, s *storeFlags, url string, plan *wipe.Plan, w io.Writer, tr *i18n.Printer) ([]wipe.Backed, error) {
	s.URL, s.Workers, s.Grace = url, 4, 0 // 0: no grace period (it only reads)
	s.PartSize, s.PartConcurrency, s.Version = "8MiB", 4, version
	c, err := s.Crypto(false)
	if err != nil {
		return nil, err
	}
	kept := func(path string) bool { return !plan.Removes(path) }
	var backed []wipe.Backed
	runFlag := s.Run
	for _, dir := range plan.CheckpointDirs() {
		s.Run = runFlag
		if s.Run == "" {
			if s.Run = wipe.RunOf(dir); s.Run == "" {
				s.Run = "default"
			}
		}
		st, name, closeFn, err := s.OpenExisting(ctx, c, nil)
		if err != nil {
			return nil, err
		}
		b, err := wipe.CheckBackup(ctx, st, s.Run, dir, kept)
		closeFn()
		if err != nil {
			return nil, i18n.Errorf("wipe refused, nothing was deleted: %s: %w", dir, err)
		}
		backed = append(backed, b)
		tr.Fprintf(w, "backup checked: every file in %s (%s, %s) is in %s of run %s in %s, the newest %s as %s, read back and hashed\n",
			dir, render.Count(tr, b.Files, "file"), report.Bytes(b.Bytes), i18n.Plural(len(b.IDs), "%d committed checkpoint", "%d committed checkpoints"), b.Run, name, b.Checkpoint, b.ID)
	}
	// The directories checked first must still be as judged once the
	// last is checked: nothing new may be wiped unchecked.
	for _, b := range backed {
		if err := b.Unchanged(kept); err != nil {
			return nil, i18n.Errorf("wipe refused, nothing was deleted: %w", err)
		}
	}
	return backed, nil
}

func defaultWipeReport() (string, error) {
	dir, err := statedir.Dir()
	if err != nil {
		return "", i18n.Errorf("wipe report: %w", err)
	}
	return filepath.Join(dir, "wipe-"+time.Now().UTC().Format("20060102T150405Z")+".json"), nil
}

// saveReport replaces the report atomically: an interrupted wipe leaves
// the report as it was, never a torn one.
func saveReport(path string, r *wipe.Report) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Write(path, append(b, '\n'), 0o600); err != nil {
		return i18n.Errorf("wipe report: %w", err)
	}
	return nil
}
