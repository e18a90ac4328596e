//go:build unix

package main

import (
	"context"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpurent/gpurent/internal/catalog"
	"github.com/gpurent/gpurent/internal/release"
	"github.com/gpurent/gpurent/internal/report"
	"github.com/gpurent/gpurent/internal/wipe"
)

// releaseOptions are release's flags.
type releaseOptions struct {
	s                               storeFlags
	stop, destroy, yes, dryRun      bool
	wipe, nothingToKeep             bool
	ckptDir, provider, offer, expID string
	endpoints                       []string
	diskGB                          float64
}

func newRelease(g *globals) *cobra.Command {
	var o releaseOptions
	cmd := &cobra.Command{
		Use:   "release --stop|--destroy",
		Short: "Stop the meter: stop or destroy this machine once its work is safe in the store",
		Long: `release ends a rental from inside the machine, in this order: the work is safe
(with --store, every file in --ckpt-dir is in a committed checkpoint, read back
and hashed, as wipe --require-backup checks), optionally --wipe, then one request
to the provider that stops (--stop: the disks stay, and bill) or destroys
(--destroy: nothing more is billed, the disks are gone) this machine and no other.

The provider is found from inside: RunPod (RUNPOD_POD_ID, RUNPOD_API_KEY), Vast.ai
(CONTAINER_ID, CONTAINER_API_KEY), Lambda (LAMBDA_API_KEY: the instance with this
machine's address), AWS (IMDSv2 and the instance role), GCP (the metadata server
and the service account), Azure (IMDS and the managed identity; --stop
deallocates, since a VM shut down from inside keeps billing compute). AutoDL
documents no way from inside: release says what to do in the console, exit 1.
docs/release.md has what each keeps and bills, with the providers' pages.

Without --yes it is a dry run: it prints the request it would make, the
credential masked, and sends nothing.`,
		Example: `  gpurent release --store s3://bucket/runs --run llama --ckpt-dir out --destroy --yes
  gpurent release --stop --offer runpod-a100-80gb-secure --disk 200`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runRelease(cmd, g, &o) },
	}
	f := cmd.Flags()
	o.s.register(f)
	f.BoolVar(&o.stop, "stop", false, "stop the machine: compute stops billing, its disks stay and bill")
	f.BoolVar(&o.destroy, "destroy", false, "destroy the machine: nothing more is billed, its disks are gone (needs --store, or --nothing-to-keep)")
	f.BoolVar(&o.yes, "yes", false, "carry it out; without, a dry run")
	f.BoolVar(&o.dryRun, "dry-run", false, "print the request it would make, credential masked, and send nothing")
	f.BoolVar(&o.wipe, "wipe", false, "before the request, wipe the machine as gpurent wipe --ckpt DIR --require-backup STORE --yes would (needs --store)")
	f.BoolVar(&o.nothingToKeep, "nothing-to-keep", false, "destroy without --store: nothing on this machine is worth keeping")
	f.StringVar(&o.ckptDir, "ckpt-dir", "", "the checkpoint directory that must be safe in --store first (needed with --store)")
	f.StringVar(&o.provider, "provider", "", "the provider, instead of finding it: runpod, vast, lambda, autodl, aws, gcp or azure")
	f.StringArrayVar(&o.endpoints, "endpoint", nil, "NAME=URL: ask URL instead of a provider's API or metadata service (runpod, vast, lambda, aws, aws-metadata, gcp, gcp-metadata, azure, azure-metadata; repeatable)")
	f.StringVar(&o.offer, "offer", "", "the catalog offer rented (an id quote prints): what stopping costs a day")
	f.Float64Var(&o.diskGB, "disk", 0, "GB of disk a stop keeps (default: the offer's included disk)")
	f.StringVar(&o.expID, "id", "", "refuse unless the provider's id of this machine is this one (Lambda: the instance to terminate, where its public address is not on this machine)")
	return cmd
}

func runRelease(cmd *cobra.Command, g *globals, o *releaseOptions) error {
	w, lines := cmd.OutOrStdout(), cmd.OutOrStdout()
	if g.output == report.JSON {
		lines = cmd.ErrOrStderr() // stdout holds the one document
	}
	switch {
	case o.stop == o.destroy:
		return usagef("want --stop or --destroy (one of them)")
	case o.yes && o.dryRun:
		return usagef("--yes and --dry-run: choose one")
	case !(o.diskGB >= 0 && o.diskGB <= 1e7): // NaN too
		return usagef("--disk: want GB from 0 to 10000000, got %v", o.diskGB)
	case o.destroy && o.s.URL == "" && !o.nothingToKeep:
		return usagef("--destroy: the disks go with the machine; give --store and --ckpt-dir to prove the work is safe, or --nothing-to-keep")
	case o.s.URL != "" && o.ckptDir == "":
		return usagef("--store: name the checkpoint directory that must be safe in it with --ckpt-dir")
	case o.wipe && o.s.URL == "":
		return usagef("--wipe: needs --store: the wipe removes --ckpt-dir, and only once the store holds every file of it")
	case o.provider != "" && !slices.Contains(release.Providers(), o.provider):
		return usagef("--provider: want one of %s, got %q", strings.Join(release.Providers(), ", "), o.provider)
	}
	eps, err := release.ParseEndpoints(o.endpoints)
	if err != nil {
		return usagef("--endpoint: %w", err)
	}
	r := release.Request{Action: release.Stop, Yes: o.yes, DiskGB: o.diskGB, JSON: g.output == report.JSON}
	if o.destroy {
		r.Action = release.Destroy
	}
	if o.offer != "" {
		cat, err := loadCatalog(g)
		if err != nil {
			return err
		}
		if r.Offer, err = catalog.ByID(cat.Offers, o.offer); err != nil {
			return usagef("--offer: %w", err)
		}
	}
	if o.s.URL != "" {
		dir, err := filepath.Abs(o.ckptDir)
		if err != nil {
			return usagef("--ckpt-dir: %w", err)
		}
		r.Safe = func(ctx context.Context) error {
			plan := &wipe.Plan{Items: []wipe.Item{{Kind: wipe.Checkpoints, Path: dir}}}
			_, err := checkBackups(ctx, &o.s, o.s.URL, plan, lines, g.tr)
			return err
		}
	}
	if o.wipe {
		// As gpurent wipe with its defaults would; its lines with the
		// rest, never a second document on stdout.
		gw := *g
		gw.output, gw.stdout = report.Table, lines
		r.Wipe = func(context.Context) error {
			return runWipe(cmd, &gw, &wipeOptions{s: o.s, ckpts: []string{o.ckptDir}, requireBackup: o.s.URL, yes: true, recent: wipe.RecentWindow}, nil)
		}
	}
	return release.Run(cmd.Context(), release.Options{Provider: o.provider, Endpoints: eps, ID: o.expID}, r, w, cmd.ErrOrStderr(), g.tr)
}
