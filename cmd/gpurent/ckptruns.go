package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/gpurent/gpurent/internal/ledger"
	"github.com/gpurent/gpurent/internal/render"
	"github.com/gpurent/gpurent/internal/report"
	"github.com/gpurent/gpurent/internal/store"
)

// newCkptRuns is ckpt runs: the store's runs and what they hold.
func newCkptRuns(g *globals, s *storeFlags) *cobra.Command {
	runs := &cobra.Command{
		Use:   "runs",
		Short: "List the runs in the store, with their checkpoints, the newest one's name and time, their logs and the bytes they hold",
		Args:  args(noArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runCkptRuns(cmd.Context(), g, s)
		},
	}
	return runs
}

// runCkptRuns lists the store's runs with what they hold and cost.
func runCkptRuns(ctx context.Context, g *globals, s *storeFlags) error {
	st, name, closeFn, err := s.OpenExisting(ctx, &store.Crypto{}, nil)
	if err != nil {
		return err
	}
	defer closeFn()
	rs, err := st.Runs(ctx)
	if err != nil {
		return err
	}
	// A manifest that cannot be read costs its name, not the
	// listing: the runs and their bytes are what this is for.
	nameErr := st.NameNewest(ctx, rs)
	if nameErr != nil {
		g.tr.Fprintf(g.stderr, "gpurent: warning: not every newest checkpoint is named: %v\n", nameErr)
	}
	rows, costErr := runCosts(ctx, st, rs)
	if costErr != nil {
		g.tr.Fprintf(g.stderr, "gpurent: warning: not every run's cost is known: %v\n", costErr)
	}
	if g.output == report.JSON {
		return report.WriteJSON(g.stdout, ckptRunsJSON{Store: name, Runs: nonNil(rows)})
	}
	return render.Runs(g.stdout, g.tr, name, rows)
}

// runCosts adds to each run what its sessions recorded it cost, reading
// the records of the runs that have any. A run whose records cannot be
// read or counted has no cost, and the first such error is returned.
func runCosts(ctx context.Context, st *store.Store, rs []store.RunInfo) ([]render.RunRow, error) {
	rows := make([]render.RunRow, len(rs))
	var first error
	for i, r := range rs {
		rows[i].RunInfo = r
		if r.SpendSessions == 0 {
			continue
		}
		recs, err := st.RunSpends(ctx, r)
		if err == nil {
			rows[i].Cost, err = ledger.Costs(recs, r.Run)
		}
		if err != nil && first == nil {
			first = err
		}
	}
	return rows, first
}
