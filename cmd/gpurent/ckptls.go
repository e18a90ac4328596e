package main

import (
	"context"
	"maps"
	"slices"

	"github.com/spf13/cobra"

	"github.com/gpurent/gpurent/internal/render"
	"github.com/gpurent/gpurent/internal/report"
)

// newCkptLs is ckpt ls: a run's checkpoints.
func newCkptLs(g *globals, s *storeFlags) *cobra.Command {
	ls := &cobra.Command{
		Use:   "ls",
		Short: "List the committed checkpoints of a run",
		Args:  args(noArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runCkptLs(cmd.Context(), g, s)
		},
	}
	return ls
}

// runCkptLs lists the run's committed checkpoints.
func runCkptLs(ctx context.Context, g *globals, s *storeFlags) error {
	c, err := s.Crypto(false) // the auth keys here, to mark what they do not sign
	if err != nil {
		return err
	}
	st, _, closeFn, err := s.OpenExisting(ctx, c, nil)
	if err != nil {
		return err
	}
	defer closeFn()
	ms, bad, err := st.ListAll(ctx, s.Run)
	if err != nil {
		return err
	}
	unreadableNote(g, bad)
	unauth, checked := st.Unauthenticated(ms)
	if g.output == report.JSON {
		return report.WriteJSON(g.stdout, ckptLsJSON{Run: s.Run, Checkpoints: nonNil(summaries(ms)), Unreadable: unreadableKeys(bad),
			Unauthenticated: nonNil(slices.Sorted(maps.Keys(unauth))), AuthChecked: checked})
	}
	return render.Checkpoints(g.stdout, g.tr, s.Run, ms, runsHint(ctx, st), unauth, checked)
}
