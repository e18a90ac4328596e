package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/gpurent/gpurent/internal/render"
	"github.com/gpurent/gpurent/internal/report"
)

// ckptPruneOptions are ckpt prune's flags.
type ckptPruneOptions struct {
	keep        int  // --keep
	keepSet     bool // --keep was given: it has no default
	keepLogs    int  // --keep-logs
	keepLogsSet bool // --keep-logs was given: without it logs are left alone
	dryRun      bool // --dry-run
	removeAll   bool // --unsafe-allow-remove-all
}

// newCkptPrune is ckpt prune: a run kept to its newest checkpoints.
func newCkptPrune(g *globals, s *storeFlags) *cobra.Command {
	var o ckptPruneOptions
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
			o.keepSet = cmd.Flags().Changed("keep")
			o.keepLogsSet = cmd.Flags().Changed("keep-logs")
			return runCkptPrune(cmd.Context(), g, s, o)
		},
	}
	prune.Flags().IntVar(&o.keep, "keep", 0, "how many of the newest checkpoints to keep")
	prune.Flags().IntVar(&o.keepLogs, "keep-logs", 0, "also delete the run's log sessions but the newest N (without it, logs are left alone)")
	prune.Flags().BoolVarP(&o.dryRun, "dry-run", "n", false, "list what would be deleted and delete nothing")
	prune.Flags().BoolVar(&o.removeAll, "unsafe-allow-remove-all", false, "let --keep 0 delete every checkpoint of the run")
	return prune
}

// runCkptPrune keeps the newest --keep checkpoints of the run and deletes
// the rest, or with --dry-run says what it would delete.
func runCkptPrune(ctx context.Context, g *globals, s *storeFlags, o ckptPruneOptions) error {
	if !o.keepSet || o.keep < 0 {
		return usagef("--keep N is required (N >= 0): how many of the newest checkpoints to keep")
	}
	if o.keep == 0 && !o.removeAll && !o.dryRun {
		return usagef("--keep 0 deletes every checkpoint of run %s; add --unsafe-allow-remove-all if that is what you want (--dry-run shows them)", s.Run)
	}
	if o.keepLogsSet && o.keepLogs < 0 {
		return usagef("--keep-logs: want 0 or more log sessions to keep, got %d", o.keepLogs)
	}
	c, err := s.Crypto(false)
	if err != nil {
		return err
	}
	st, _, closeFn, err := s.OpenExisting(ctx, c, nil)
	if err != nil {
		return err
	}
	defer closeFn()
	// Logs only when asked for: they are the run's history.
	logs := []string{}
	pruneLogs := func(dry bool) error {
		if !o.keepLogsSet {
			return nil
		}
		var err error
		logs, err = st.PruneLogs(ctx, s.Run, o.keepLogs, dry)
		return err
	}
	if o.dryRun {
		p, err := st.PlanPrune(ctx, s.Run, o.keep)
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
		unauthNote(g, unauth)
		unreadableNote(g, p.Unreadable)
		if g.output == report.JSON {
			uploadsNote(g, p.UploadsErr)
			return report.WriteJSON(g.stdout, ckptPruneDryJSON{Run: s.Run, DryRun: true, WouldDelete: nonNil(ids),
				LeftoverObjects: len(p.Leftovers), IncompleteUploads: len(p.Uploads), WouldDeleteLogSessions: nonNil(logs),
				UnauthenticatedLeft: nonNil(unauth), UnreadableLeft: unreadableKeys(p.Unreadable)})
		}
		render.PrunePlanned(g.stdout, g.tr, s.Run, o.keep, p, logs)
		uploadsNote(g, p.UploadsErr)
		return nil
	}
	r, err := st.Prune(ctx, s.Run, o.keep)
	if err != nil {
		return err
	}
	if err := pruneLogs(false); err != nil {
		return err
	}
	if r.Unauthenticated == nil {
		r.Unauthenticated = []string{}
	}
	unauthNote(g, r.Unauthenticated)
	unreadableNote(g, r.Unreadable)
	if g.output == report.JSON {
		uploadsNote(g, r.UploadsErr)
		return report.WriteJSON(g.stdout, ckptPruneJSON{Run: s.Run, Deleted: nonNil(r.Checkpoints),
			LeftoverObjectsRemoved: r.Leftovers, IncompleteUploadsAborted: r.Uploads, DeletedLogSessions: nonNil(logs),
			UnauthenticatedLeft: r.Unauthenticated, UnreadableLeft: unreadableKeys(r.Unreadable)})
	}
	render.Pruned(g.stdout, g.tr, s.Run, o.keep, r, logs)
	uploadsNote(g, r.UploadsErr)
	return nil
}
