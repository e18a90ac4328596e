package main

import (
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpurent/gpurent/internal/catalog"
	"github.com/gpurent/gpurent/internal/catalog/refresh"
	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/render"
	"github.com/gpurent/gpurent/internal/report"
)

func newCatalogRefresh(g *globals) *cobra.Command {
	var endpoints, only []string
	cmd := &cobra.Command{
		Use:   "refresh",
		Short: "Read today's prices from the providers' public price sources into the catalog quote and plan use",
		Long: `refresh reads today's prices of the catalog's offers from their providers' own
sources: AWS's price list (each region's EC2 file, streamed) and its Spot Instance
Advisor (each type's interruption bucket), Azure's Retail Prices API, Vast.ai's offer search (the median of verified, rentable single-GPU offers;
it needs VAST_API_KEY), RunPod's GPU catalog (RUNPOD_API_KEY) and Lambda's instance
types (LAMBDA_API_KEY). Each price read keeps its source URL and fetch time. A source
that fails leaves the others; a price of 0, not a number, or more than 5x off the
catalog's is rejected with the reason. What was read is kept in the cache directory
(` + "`gpurent catalog diff`" + ` shows it) and read over the embedded catalog by quote, plan, bench
--offer and run --price; --offline leaves it out. docs/quote.md lists the sources.`,
		Args: args(noArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runCatalogRefresh(cmd, g, endpoints, only)
		},
	}
	cmd.Flags().StringArrayVar(&endpoints, "endpoint", nil, "NAME=URL: read a source from URL instead (aws, aws-spot, azure, vast, runpod, lambda; repeatable)")
	cmd.Flags().StringSliceVar(&only, "only", nil, "read only these sources (aws, aws-spot, azure, vast, runpod, lambda)")
	return cmd
}

func runCatalogRefresh(cmd *cobra.Command, g *globals, endpoints, only []string) error {
	eps, err := refresh.ParseEndpoints(endpoints)
	if err != nil {
		return usagef("--endpoint: %w", err)
	}
	for _, s := range only {
		if !slices.Contains(refresh.Sources(), s) {
			return usagef("--only: want %s, got %q", strings.Join(refresh.Sources(), ", "), s)
		}
	}
	path, err := catalog.OverlayPath()
	if err != nil {
		return err
	}
	w := cmd.ErrOrStderr()
	say := func(t i18n.Text) { g.tr.Fprintf(w, "%s\n", t) }
	r, err := refresh.Update(cmd.Context(), path, refresh.Options{Endpoints: eps, Only: only, Now: time.Now(), Getenv: os.Getenv}, say)
	if err != nil {
		return err
	}
	render.Refreshed(w, g.tr, r, path)
	if g.output == report.JSON {
		if err := report.WriteJSON(g.stdout, r); err != nil {
			return err
		}
	}
	if len(r.Offers) == 0 && len(r.Failed) > 0 {
		if len(r.Failed) == r.Tried {
			return i18n.Errorf("no price was refreshed: every source failed")
		}
		return i18n.Errorf("no price was refreshed: none passed the checks, and a source failed")
	}
	return nil
}

func newCatalogDiff(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "diff",
		Short: "What catalog refresh changed: each refreshed price beside the catalog's",
		Args:  args(noArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			path, err := catalog.OverlayPath()
			if err != nil {
				return err
			}
			rows, err := refresh.Diff(path)
			if err != nil {
				return err
			}
			if g.output == report.JSON {
				return report.WriteJSON(g.stdout, map[string]any{"path": path, "offers": rows})
			}
			for _, r := range rows {
				g.tr.Fprintf(g.stdout, "%s: %s (%s) -> %s (%s)\n", r.Offer, r.Before, r.BeforeAsOf, r.After, r.AfterAsOf)
			}
			return nil
		},
	}
}
