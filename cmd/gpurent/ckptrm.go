package main

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/report"
	"github.com/gpurent/gpurent/internal/store"
	"github.com/gpurent/gpurent/internal/usage"
)

// newCkptRm deletes checkpoints by id: prune keeps the newest N, and a
// person sometimes wants one gone (a bad step, a planted checkpoint).
func newCkptRm(g *globals, s *storeFlags) *cobra.Command {
	rm := &cobra.Command{
		Use:   "rm ID...",
		Short: "Delete checkpoints by id (the manifest first, so each goes whole)",
		Long: `rm deletes each checkpoint named by its id (as ckpt ls shows it): its manifest first,
so it disappears whole, then its objects. Ids only, never a name or latest: a deletion
names exactly what it deletes. It needs a store key that may delete, and no identity.`,
		Args: args(func(cmd *cobra.Command, a []string) error {
			if len(a) == 0 {
				return usagef("rm: name the checkpoints to delete by id (gpurent ckpt ls shows them)")
			}
			for _, id := range a {
				if err := store.ValidID(id); err != nil {
					return usage.Wrap(err)
				}
			}
			return nil
		}),
		RunE: func(cmd *cobra.Command, a []string) error {
			return runCkptRm(cmd.Context(), g, s, a)
		},
	}
	return rm
}

// runCkptRm deletes the checkpoints named, each whole, after checking that
// the run holds every one of them.
func runCkptRm(ctx context.Context, g *globals, s *storeFlags, named []string) error {
	st, name, closeFn, err := s.OpenExisting(ctx, &store.Crypto{}, nil)
	if err != nil {
		return err
	}
	defer closeFn()
	// Every id is checked before any is deleted: a typo in the
	// second must not leave the first deleted and the command
	// failed.
	ids := slices.Compact(slices.Sorted(slices.Values(named)))
	for _, id := range ids {
		if _, err := st.Find(ctx, s.Run, id); errors.Is(err, store.ErrNoCheckpoint) {
			return noCheckpoint(ctx, st, i18n.Errorf("%w (nothing was deleted)", err), true)
		}
	}
	deleted := []string{}
	for _, id := range ids {
		m, err := st.Remove(ctx, s.Run, id)
		if err != nil {
			if len(deleted) > 0 {
				err = i18n.Errorf("%w (deleted before it: %s)", err, strings.Join(deleted, ", "))
			}
			return err
		}
		deleted = append(deleted, id)
		if g.output != report.JSON {
			what := "an unreadable manifest"
			if m.Version > 0 {
				what = report.Safe(m.Name) + ", " + report.Bytes(m.Bytes)
			}
			g.tr.Fprintf(g.stdout, "deleted checkpoint %s (%s) from %s run %s\n", id, what, name, s.Run)
		}
	}
	if g.output == report.JSON {
		return report.WriteJSON(g.stdout, ckptRmJSON{Run: s.Run, Deleted: nonNil(deleted)})
	}
	return nil
}
