package main

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/render"
	"github.com/gpurent/gpurent/internal/report"
	"github.com/gpurent/gpurent/internal/store"
	"github.com/gpurent/gpurent/internal/supervise"
)

// ckptPullOptions are ckpt pull's flags.
type ckptPullOptions struct {
	id string // --id: an id, a NAME or latest
}

// newCkptPull is ckpt pull: a checkpoint restored into a new directory.
func newCkptPull(g *globals, s *storeFlags) *cobra.Command {
	var o ckptPullOptions
	pull := &cobra.Command{
		Use:   "pull DEST",
		Short: "Restore a checkpoint to DEST (which must not exist)",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			return runCkptPull(cmd.Context(), g, s, o, a[0])
		},
	}
	pull.Flags().StringVar(&o.id, "id", "latest", "checkpoint id from ls, a NAME ls shows (the newest pushed under it, e.g. checkpoint-5000), or latest")
	return pull
}

// runCkptPull restores the checkpoint --id names into dest, which must not
// exist, and checks every file.
func runCkptPull(ctx context.Context, g *globals, s *storeFlags, o ckptPullOptions, dest string) error {
	if err := checkID(o.id); err != nil {
		return err
	}
	if _, err := os.Lstat(dest); err == nil {
		return usagef("pull: %s already exists; pull into a new path (nothing was changed)", dest)
	}
	if dir := store.LocalDir(s.URL); dir != "" && store.Within(resolvedNew(dest), dir) {
		// Files among the store's objects could be taken for a
		// killed push's leftovers, and deleted by the next prune.
		return usagef("pull: %s lies inside the store %s; pull elsewhere (nothing was changed)", dest, dir)
	}
	c, err := s.Crypto(false)
	if err != nil {
		return err
	}
	bar := render.StartProgress(g.stderr, g.tr, g.tr.T("pull"), 0)
	st, name, closeFn, err := s.OpenExisting(ctx, c, bar.Add)
	if err != nil {
		bar.End()
		return err
	}
	defer closeFn()
	if o.id, err = resolveID(ctx, g, st, s.Run, o.id, true); err != nil {
		bar.End()
		return err
	}
	if m, err := st.Find(ctx, s.Run, o.id); err == nil {
		bar.SetTotal(m.Bytes)
	}
	start := time.Now()
	m, err := st.Pull(ctx, s.Run, o.id, dest)
	bar.End()
	if errors.Is(err, store.ErrNoCheckpoint) {
		return noCheckpoint(ctx, st, err, o.id != "latest")
	}
	if err != nil {
		return err
	}
	// A DeepSpeed or Megatron checkpoint is found through a
	// tracker file beside it, which the store does not hold.
	if wrote, err := supervise.RestoreTracker(dest); err != nil {
		g.tr.Fprintf(g.stderr, "gpurent: warning: %v\n", err)
	} else if wrote != "" {
		g.tr.Fprintf(g.stderr, "gpurent: wrote %s, which the framework reads to find the checkpoint to load\n", wrote)
	}
	var earlier i18n.Text
	if got := bar.Done(); got < m.Bytes {
		// An earlier pull cut short had the rest.
		earlier = i18n.Textf(" (%s fetched now, the rest kept by an earlier try)", report.Bytes(got))
	}
	return writeManifest(g, m, i18n.Textf("pulled %s from %s run %s into %s: %s, %s%s in %.1f s, every file checked", m.ID, name, s.Run, dest,
		i18n.Plural(m.Files, "%d entry", "%d entries"), report.Bytes(m.Bytes), earlier, time.Since(start).Seconds()))
}
