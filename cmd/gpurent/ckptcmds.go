package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpurent/gpurent/internal/report"
	"github.com/gpurent/gpurent/internal/store"
	"github.com/gpurent/gpurent/internal/supervise"
	"github.com/gpurent/gpurent/internal/usage"
)

// newCkptPush is ckpt push: one file or directory stored as one checkpoint.
func newCkptPush(g *globals, s *storeFlags) *cobra.Command {
	push := &cobra.Command{
		Use:   "push PATH",
		Short: "Upload a file or directory as one checkpoint",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			info, err := os.Lstat(a[0])
			if err != nil {
				return usage.Wrap(fmt.Errorf("push: %w", err))
			}
			if info.Mode()&os.ModeSymlink != 0 {
				// Pushed as it is, a link is its target's name and nothing
				// of the target's content: said, as that is rarely meant.
				target, _ := os.Readlink(a[0])
				fmt.Fprintf(cmd.ErrOrStderr(), "gpurent: warning: %s is a symlink to %s: what is stored is the link itself (a name, none of the content it leads to); push %s, or %s/ for a directory, to store the content\n",
					report.Safe(a[0]), report.Safe(target), report.Safe(target), report.Safe(a[0]))
			}
			if dir := store.LocalDir(s.URL); store.Within(dir, a[0]) {
				return usagef("push: the store %s lies inside %s, which would be pushed into itself; keep the store elsewhere", dir, a[0])
			}
			c, err := s.Crypto(true)
			if err != nil {
				return err
			}
			_, paths, err := store.Scan(a[0])
			if err != nil {
				return usage.Wrap(err)
			}
			var total int64
			for _, p := range paths {
				if st, err := os.Stat(p); err == nil {
					total += st.Size()
				}
			}
			bar := startProgress(cmd.ErrOrStderr(), "push", total)
			st, name, closeFn, err := s.Open(cmd.Context(), c, bar.add)
			if err != nil {
				bar.end()
				return err
			}
			defer closeFn()
			if !c.Encrypting() && !strings.HasPrefix(name, "file://") {
				fmt.Fprintf(cmd.ErrOrStderr(), "gpurent: warning: storing plaintext on %s: anyone with access to the store can read it\n", name)
			}
			start := time.Now()
			m, err := st.Push(cmd.Context(), a[0], s.Run)
			bar.end()
			if err != nil {
				return err
			}
			reused := ""
			if m.Reused > 0 {
				reused = fmt.Sprintf(" (%s of it unchanged since the previous checkpoint, copied in the store, not uploaded)", report.Bytes(m.Reused))
			}
			if m.Resumed > 0 {
				reused += fmt.Sprintf(" (%s of it stored by the push cut short before, not uploaded again)", report.Bytes(m.Resumed))
			}
			return writeManifest(g, m, fmt.Sprintf("pushed %s to %s run %s: %s, %s in %.1f s%s", a[0], name, s.Run, report.Count(m.Files, "entry"), report.Bytes(m.Bytes), time.Since(start).Seconds(), reused))
		},
	}
	return push
}

// newCkptPull is ckpt pull: a checkpoint restored into a new directory.
func newCkptPull(g *globals, s *storeFlags) *cobra.Command {
	var id string
	pull := &cobra.Command{
		Use:   "pull DEST",
		Short: "Restore a checkpoint to DEST (which must not exist)",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			if err := checkID(id); err != nil {
				return err
			}
			if _, err := os.Lstat(a[0]); err == nil {
				return usagef("pull: %s already exists; pull into a new path (nothing was changed)", a[0])
			}
			if dir := store.LocalDir(s.URL); dir != "" && store.Within(resolvedNew(a[0]), dir) {
				// Files among the store's objects could be taken for a
				// killed push's leftovers, and deleted by the next prune.
				return usagef("pull: %s lies inside the store %s; pull elsewhere (nothing was changed)", a[0], dir)
			}
			c, err := s.Crypto(false)
			if err != nil {
				return err
			}
			bar := startProgress(cmd.ErrOrStderr(), "pull", 0)
			st, name, closeFn, err := s.OpenExisting(cmd.Context(), c, bar.add)
			if err != nil {
				bar.end()
				return err
			}
			defer closeFn()
			if id, err = resolveID(cmd.Context(), cmd.ErrOrStderr(), st, s.Run, id, true); err != nil {
				bar.end()
				return err
			}
			if m, err := st.Find(cmd.Context(), s.Run, id); err == nil {
				bar.total.Store(m.Bytes)
			}
			start := time.Now()
			m, err := st.Pull(cmd.Context(), s.Run, id, a[0])
			bar.end()
			if errors.Is(err, store.ErrNoCheckpoint) {
				return noCheckpoint(cmd.Context(), st, err, id != "latest")
			}
			if err != nil {
				return err
			}
			// A DeepSpeed or Megatron checkpoint is found through a
			// tracker file beside it, which the store does not hold.
			if wrote, err := supervise.RestoreTracker(a[0]); err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "gpurent: warning: %v\n", err)
			} else if wrote != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "gpurent: wrote %s, which the framework reads to find the checkpoint to load\n", wrote)
			}
			size := report.Bytes(m.Bytes)
			if got := bar.done.Load(); got < m.Bytes {
				// An earlier pull cut short had the rest.
				size += fmt.Sprintf(" (%s fetched now, the rest kept by an earlier try)", report.Bytes(got))
			}
			return writeManifest(g, m, fmt.Sprintf("pulled %s from %s run %s into %s: %s, %s in %.1f s, every file checked", m.ID, name, s.Run, a[0], report.Count(m.Files, "entry"), size, time.Since(start).Seconds()))
		},
	}
	pull.Flags().StringVar(&id, "id", "latest", "checkpoint id from ls, a NAME ls shows (the newest pushed under it, e.g. checkpoint-5000), or latest")
	return pull
}

// newCkptLs is ckpt ls: a run's checkpoints.
func newCkptLs(g *globals, s *storeFlags) *cobra.Command {
	ls := &cobra.Command{
		Use:   "ls",
		Short: "List the committed checkpoints of a run",
		Args:  args(noArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, _, closeFn, err := s.OpenExisting(cmd.Context(), &store.Crypto{}, nil)
			if err != nil {
				return err
			}
			defer closeFn()
			ms, bad, err := st.ListAll(cmd.Context(), s.Run)
			if err != nil {
				return err
			}
			unreadableNote(cmd.ErrOrStderr(), bad)
			if g.output == report.JSON {
				if ms == nil {
					ms = []*store.Manifest{}
				}
				return report.WriteJSON(g.stdout, ckptLsJSON{Run: s.Run, Checkpoints: nonNil(summaries(ms)), Unreadable: unreadableKeys(bad)})
			}
			// ENTRIES, not FILES: the count holds the directories, the
			// checkpoint's own among them, as push and pull say.
			// NAME is what was pushed (checkpoint-5000, last.ckpt): the
			// ids alone do not say which step each one holds.
			tab := report.NewTab("ID", "NAME", "CREATED", "ENTRIES", "SIZE", "ENCRYPTED", "HOST")
			for _, m := range ms {
				name := report.Safe(m.Name)
				if name == "" {
					name = "-"
				}
				tab.Row(m.ID, name, m.Created.Local().Format("2006-01-02 15:04:05"), fmt.Sprint(m.Files), report.Bytes(m.Bytes), fmt.Sprint(m.Encrypted), report.Safe(m.Host))
			}
			if err := tab.Write(g.stdout); err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "\n%s in run %s\n", report.Count(len(ms), "checkpoint"), s.Run)
			if len(ms) == 0 {
				fmt.Fprintln(g.stdout, runsHint(cmd.Context(), st))
			}
			return nil
		},
	}
	return ls
}

// newCkptVerify is ckpt verify: a run's checkpoints checked, shallow or deep.
func newCkptVerify(g *globals, s *storeFlags) *cobra.Command {
	var id string
	var deep bool
	verify := &cobra.Command{
		Use:   "verify",
		Short: "Check that checkpoints are whole (--deep: read, decrypt and hash every byte)",
		Args:  args(noArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkID(id); err != nil {
				return err
			}
			c, err := s.Crypto(false)
			if err != nil {
				return err
			}
			st, _, closeFn, err := s.OpenExisting(cmd.Context(), c, nil)
			if err != nil {
				return err
			}
			defer closeFn()
			vid := id
			if vid == "latest" && !cmd.Flags().Changed("id") {
				vid = ""
			}
			if vid, err = resolveID(cmd.Context(), cmd.ErrOrStderr(), st, s.Run, vid, false); err != nil {
				return err
			}
			if !deep && c.CheckAuth && len(c.Auth) == 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "gpurent: note: no identity or auth key here, so whether each checkpoint is the owner's (not planted) is not checked; pass --identity FILE or --auth-key FILE to check it\n")
			}
			ms, probs, err := st.Verify(cmd.Context(), s.Run, vid, deep)
			if errors.Is(err, store.ErrNoCheckpoint) {
				return noCheckpoint(cmd.Context(), st, err, vid != "" && vid != "latest")
			}
			if err != nil {
				return err
			}
			if len(ms) == 0 {
				// Nothing to check is not a pass: a mistyped run name must
				// not read as "the checkpoints are safe, release the machine".
				probs = append(probs, store.Problem{Msg: fmt.Sprintf("run %s has no checkpoint; %s", s.Run, runsHint(cmd.Context(), st))})
			}
			if g.output == report.JSON {
				if probs == nil {
					probs = []store.Problem{}
				}
				if err := report.WriteJSON(g.stdout, ckptVerifyJSON{Run: s.Run, Checked: len(ms), Deep: deep, Problems: probs}); err != nil {
					return err
				}
			} else {
				for _, p := range probs {
					if p.ID == "" {
						fmt.Fprintln(g.stdout, report.Safe(p.Msg))
						continue
					}
					fmt.Fprintf(g.stdout, "%s %s: %s\n", p.ID, report.Safe(p.Path), report.Safe(p.Msg))
				}
				kind := "objects present with their sizes"
				if deep {
					kind = "every byte decrypted and hashed"
				}
				fmt.Fprintf(g.stdout, "%s checked (%s): %s\n", report.Count(len(ms), "checkpoint"), kind, report.Count(len(probs), "problem"))
			}
			if len(probs) > 0 {
				return exitCode(exitFailure)
			}
			return nil
		},
	}
	verify.Flags().BoolVar(&deep, "deep", false, "read every object, decrypt it and compare its SHA-256")
	verify.Flags().StringVar(&id, "id", "latest", "only this checkpoint: an id, a NAME ls shows, or latest (default: all of the run)")
	return verify
}

// newCkptPrune is ckpt prune: a run kept to its newest checkpoints.
func newCkptPrune(g *globals, s *storeFlags) *cobra.Command {
	var (
		keep, keepLogs int
		dryRun         bool
		removeAll      bool
	)
	prune := &cobra.Command{
		Use:   "prune",
		Short: "Keep the newest N checkpoints of a run and delete the rest, and leftovers of killed pushes",
		Long: `prune keeps the newest --keep checkpoints of the run and deletes the older
ones, each manifest first so that a checkpoint disappears whole, and what
pushes killed before they committed left (silent for longer than --grace: a
push that is still running rewrites its heartbeat, runs/RUN/uploads/ID.json, and
its age is read on the store's clock, so a slow upload or a machine whose clock
is ahead is never taken for a dead one): their data and, on S3, their unfinished
multipart uploads, whose parts S3 bills and no listing shows.

--keep-logs N also deletes the run's log sessions (gpurent run --log) but the
newest N; without it logs are left alone, since they are the run's history.

--dry-run lists what would be deleted and deletes nothing. --keep 0 deletes
every checkpoint of the run, so it also needs --unsafe-allow-remove-all (as
restic's forget does): a slip of the keyboard must not empty a run.`,
		Example: `  gpurent ckpt prune --store s3://bucket/ckpt --run exp1 --keep 3 --dry-run
  gpurent ckpt prune --store s3://bucket/ckpt --run exp1 --keep 3
  gpurent ckpt prune --store s3://bucket/ckpt --run old --keep 0 --keep-logs 0 --unsafe-allow-remove-all`,
		Args: args(noArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("keep") || keep < 0 {
				return usagef("--keep N is required (N >= 0): how many of the newest checkpoints to keep")
			}
			if keep == 0 && !removeAll && !dryRun {
				return usagef("--keep 0 deletes every checkpoint of run %s; add --unsafe-allow-remove-all if that is what you want (--dry-run shows them)", s.Run)
			}
			if cmd.Flags().Changed("keep-logs") && keepLogs < 0 {
				return usagef("--keep-logs: want 0 or more log sessions to keep, got %d", keepLogs)
			}
			c, err := s.Crypto(false)
			if err != nil {
				return err
			}
			st, _, closeFn, err := s.OpenExisting(cmd.Context(), c, nil)
			if err != nil {
				return err
			}
			defer closeFn()
			// Logs only when asked for: they are the run's history.
			logs := []string{}
			pruneLogs := func(dry bool) error {
				if !cmd.Flags().Changed("keep-logs") {
					return nil
				}
				var err error
				logs, err = st.PruneLogs(cmd.Context(), s.Run, keepLogs, dry)
				return err
			}
			if dryRun {
				p, err := st.PlanPrune(cmd.Context(), s.Run, keep)
				if err != nil {
					return err
				}
				if err := pruneLogs(true); err != nil {
					return err
				}
				ids := []string{}
				for _, m := range p.Checkpoints {
					ids = append(ids, m.ID)
				}
				unauth := []string{}
				for _, m := range p.Unauthenticated {
					unauth = append(unauth, m.ID)
				}
				unauthNote(cmd.ErrOrStderr(), unauth)
				unreadableNote(cmd.ErrOrStderr(), p.Unreadable)
				if g.output == report.JSON {
					uploadsNote(cmd.ErrOrStderr(), p.UploadsErr)
					return report.WriteJSON(g.stdout, ckptPruneDryJSON{Run: s.Run, DryRun: true, WouldDelete: nonNil(ids),
						LeftoverObjects: len(p.Leftovers), IncompleteUploads: len(p.Uploads), WouldDeleteLogSessions: nonNil(logs),
						UnauthenticatedLeft: nonNil(unauth), UnreadableLeft: unreadableKeys(p.Unreadable)})
				}
				for _, m := range p.Checkpoints {
					fmt.Fprintf(g.stdout, "would delete %s  %s  %s\n", m.ID, report.Safe(m.Name), report.Bytes(m.Bytes))
				}
				for _, l := range logs {
					fmt.Fprintf(g.stdout, "would delete log session %s\n", l)
				}
				fmt.Fprintf(g.stdout, "dry run: would keep the newest %d of run %s, delete %s%s and remove %s%s; nothing was deleted\n",
					keep, s.Run, report.Count(len(ids), "checkpoint"), logsText(logs), report.Count(len(p.Leftovers), "leftover object"), uploadsText(len(p.Uploads), "abort"))
				uploadsNote(cmd.ErrOrStderr(), p.UploadsErr)
				return nil
			}
			r, err := st.Prune(cmd.Context(), s.Run, keep)
			if err != nil {
				return err
			}
			if err := pruneLogs(false); err != nil {
				return err
			}
			if r.Unauthenticated == nil {
				r.Unauthenticated = []string{}
			}
			unauthNote(cmd.ErrOrStderr(), r.Unauthenticated)
			unreadableNote(cmd.ErrOrStderr(), r.Unreadable)
			if g.output == report.JSON {
				uploadsNote(cmd.ErrOrStderr(), r.UploadsErr)
				return report.WriteJSON(g.stdout, ckptPruneJSON{Run: s.Run, Deleted: nonNil(r.Checkpoints),
					LeftoverObjectsRemoved: r.Leftovers, IncompleteUploadsAborted: r.Uploads, DeletedLogSessions: nonNil(logs),
					UnauthenticatedLeft: r.Unauthenticated, UnreadableLeft: unreadableKeys(r.Unreadable)})
			}
			for _, d := range r.Checkpoints {
				fmt.Fprintf(g.stdout, "deleted %s\n", d)
			}
			for _, l := range logs {
				fmt.Fprintf(g.stdout, "deleted log session %s\n", l)
			}
			fmt.Fprintf(g.stdout, "kept the newest %d of run %s; deleted %s%s; removed %s%s\n", keep, s.Run,
				report.Count(len(r.Checkpoints), "checkpoint"), logsText(logs), report.Count(r.Leftovers, "leftover object"), uploadsText(r.Uploads, "aborted"))
			uploadsNote(cmd.ErrOrStderr(), r.UploadsErr)
			return nil
		},
	}
	prune.Flags().IntVar(&keep, "keep", 0, "how many of the newest checkpoints to keep")
	prune.Flags().IntVar(&keepLogs, "keep-logs", 0, "also delete the run's log sessions but the newest N (without it, logs are left alone)")
	prune.Flags().BoolVarP(&dryRun, "dry-run", "n", false, "list what would be deleted and delete nothing")
	prune.Flags().BoolVar(&removeAll, "unsafe-allow-remove-all", false, "let --keep 0 delete every checkpoint of the run")
	return prune
}

// newCkptRuns is ckpt runs: the store's runs and what they hold.
func newCkptRuns(g *globals, s *storeFlags) *cobra.Command {
	runs := &cobra.Command{
		Use:   "runs",
		Short: "List the runs in the store, with their checkpoints, the newest one's name and time, their logs and the bytes they hold",
		Args:  args(noArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, name, closeFn, err := s.OpenExisting(cmd.Context(), &store.Crypto{}, nil)
			if err != nil {
				return err
			}
			defer closeFn()
			rs, err := st.Runs(cmd.Context())
			if err != nil {
				return err
			}
			// A manifest that cannot be read costs its name, not the
			// listing: the runs and their bytes are what this is for.
			nameErr := st.NameNewest(cmd.Context(), rs)
			if nameErr != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "gpurent: warning: not every newest checkpoint is named: %v\n", nameErr)
			}
			rows, costErr := runCosts(cmd.Context(), st, rs)
			if costErr != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "gpurent: warning: not every run's cost is known: %v\n", costErr)
			}
			if g.output == report.JSON {
				return report.WriteJSON(g.stdout, ckptRunsJSON{Store: name, Runs: nonNil(rows)})
			}
			tab := report.NewTab("RUN", "CHECKPOINTS", "NEWEST", "NAME", "CREATED", "LOGS", "STORED", "COST")
			var total int64
			costs := false
			for _, r := range rows {
				newest, newestName, created := "-", "-", "-"
				if r.Newest != "" {
					newest, created = r.Newest, r.NewestCreated.Local().Format("2006-01-02 15:04:05")
				}
				if r.NewestName != "" {
					newestName = report.Safe(r.NewestName)
				}
				cost := "-"
				if len(r.Cost) > 0 {
					cost, costs = costText(r.Cost), true
				} else if r.SpendSessions > 0 {
					cost = "?"
				}
				tab.Row(r.Run, fmt.Sprint(r.Checkpoints), newest, newestName, created, fmt.Sprint(r.LogSessions), report.Bytes(r.StoredBytes), cost)
				total += r.StoredBytes
			}
			if err := tab.Write(g.stdout); err != nil {
				return err
			}
			// The store bills by the month what is left in it: the sum is
			// the line to read before forgetting an old run there.
			fmt.Fprintf(g.stdout, "\n%s in %s, %s stored\n", report.Count(len(rs), "run"), name, report.Bytes(total))
			if costs {
				fmt.Fprintln(g.stdout, "COST: each gpurent run session's --price times the time it ran, as the sessions recorded; storage, egress and the hours without gpurent are not in it")
			}
			return nil
		},
	}
	return runs
}
