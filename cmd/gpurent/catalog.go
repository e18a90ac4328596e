package main

import (
	"github.com/spf13/cobra"

	"github.com/gpurent/gpurent/internal/billing"
	"github.com/gpurent/gpurent/internal/catalog"
	"github.com/gpurent/gpurent/internal/render"
	"github.com/gpurent/gpurent/internal/report"
)

func newCatalog(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "catalog",
		Short: "List and check the offers gpurent prices, and print the embedded catalog",
	}
	def := &cobra.Command{
		Use:   "default",
		Short: "Print the embedded catalog, to start your own from",
		Args:  args(noArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if g.output == report.JSON {
				return writeDefaultJSON(g)
			}
			_, err := g.stdout.Write(catalog.DefaultYAML())
			return err
		},
	}
	cmd.AddCommand(newCatalogLs(g), newCatalogCheck(g), newCatalogRefresh(g), newCatalogDiff(g), def)
	group(cmd)
	return cmd
}

// catalogLsOptions are catalog ls's flags.
type catalogLsOptions struct {
	gpu       string
	minMemory float64
	providers []string
	history   bool
}

func newCatalogLs(g *globals) *cobra.Command {
	var o catalogLsOptions
	ls := &cobra.Command{
		Use:   "ls",
		Short: "List offers (the embedded catalog with any --catalog files merged over it)",
		Args:  args(noArgs),
		RunE:  func(cmd *cobra.Command, _ []string) error { return runCatalogLs(g, &o) },
	}
	ls.Flags().StringVar(&o.gpu, "gpu", "", "only offers of this GPU model")
	ls.Flags().Float64Var(&o.minMemory, "min-gpu-memory", 0, "only offers whose GPUs may have this many GB each (0: any)")
	ls.Flags().StringArrayVar(&o.providers, "provider", nil, `only this provider's offers, e.g. "RunPod", "alibaba cloud" (repeatable)`)
	ls.Flags().BoolVar(&o.history, "history", false, "also list older readings of offers that a newer reading supersedes")
	return ls
}

// runCatalogLs lists the offers that pass the filters.
func runCatalogLs(g *globals, o *catalogLsOptions) error {
	c, err := loadCatalog(g)
	if err != nil {
		return err
	}
	all := c.Offers
	current, by := catalog.Current(c.Offers)
	if !o.history {
		all = current
	}
	offers, err := catalog.WithGPU(all, o.gpu)
	if err != nil {
		return usagef("--gpu: %v", err)
	}
	if offers, err = billing.WithMemory(&billing.Profile{GPU: o.gpu, MinGPUMemoryGB: o.minMemory}, offers); err != nil {
		return usagef("--min-gpu-memory: %v", err)
	}
	if offers, err = catalog.WithProvider(offers, o.providers); err != nil {
		return usagef("--provider: %v%s", err, catalog.AmongGPU(o.gpu))
	}
	if g.output == report.JSON {
		out := catalogList{Offers: []catalogRow{}}
		for _, o := range offers {
			disk := o.Storage.IncludedDisk
			if disk == "" {
				disk = "unknown"
			}
			out.Offers = append(out.Offers, catalogRow{
				ID: o.ID, Provider: o.Provider, GPU: o.GPU, GPUs: o.GPUs, GPUMemoryGB: o.GPUMemoryGB, Currency: o.Currency, Region: o.Region,
				OnDemandHourly: o.OnDemand.Hourly, SpotHourly: spotJSON(o.Spot), Subscriptions: o.Subscriptions,
				IncludedDisk: disk, Interconnect: o.Interconnect, Source: o.Source, AsOf: o.AsOf, SupersededBy: by[o.ID],
			})
		}
		return report.WriteJSON(g.stdout, out)
	}
	return render.Catalog(g.stdout, g.tr, offers, by, c.Rates)
}

func newCatalogCheck(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "check FILE...",
		Short: "Validate catalog files: every problem with file, line and field",
		Args:  args(cobra.MinimumNArgs(1)),
		RunE:  func(cmd *cobra.Command, args []string) error { return runCatalogCheck(g, args) },
	}
}

// runCatalogCheck validates each file, merged over the embedded catalog,
// and says what its offers leave unknown: in a table as each file passes,
// so that the files before a bad one are still named as good; in JSON
// once all have passed (a bad file is exit 2 and no document).
func runCatalogCheck(g *globals, args []string) error {
	def, err := catalog.Default()
	if err != nil {
		return err
	}
	out := catalogCheck{Files: []render.CatalogFile{}}
	for _, path := range args {
		c, err := catalog.ReadFile(path, def.Rates)
		if err != nil {
			return err
		}
		if err := catalog.CheckReadings(catalog.Merge(def, c).Offers); err != nil {
			return usagef("%s: %v", path, err)
		}
		f := render.CatalogFile{Path: path, Offers: len(c.Offers), UnknownFees: map[string]int{}}
		for _, o := range c.Offers {
			if !o.GPUMemoryGB.IsKnown() {
				f.UnknownGPUMemory++
			}
			for name, fee := range map[string]catalog.Fee{"boot_fee": o.BootFee, "egress_gb": o.EgressGB, "ip_month": o.IPMonth,
				"storage.running_gb_month": o.Storage.RunningGBMonth, "storage.stopped_gb_month": o.Storage.StoppedGBMonth} {
				if !fee.IsKnown() {
					f.UnknownFees[name]++
				}
			}
		}
		out.Files = append(out.Files, f)
		if g.output != report.JSON {
			render.CatalogCheck(g.stdout, g.tr, []render.CatalogFile{f})
		}
	}
	if g.output == report.JSON {
		return report.WriteJSON(g.stdout, out)
	}
	return nil
}

// catalogCheck is catalog check -o json (docs/json.md): each file valid
// (an invalid one is exit 2 and no document), with what it leaves unknown.
type catalogCheck struct {
	Files []render.CatalogFile `json:"files"`
}

// writeDefaultJSON is catalog default -o json: the embedded catalog as
// JSON, which --catalog reads as it reads the YAML.
func writeDefaultJSON(g *globals) error {
	b, err := catalog.DefaultJSON()
	if err != nil {
		return err
	}
	_, err = g.stdout.Write(b)
	return err
}

// catalogList is catalog ls -o json (docs/json.md).
type catalogList struct {
	Offers []catalogRow `json:"offers"`
}

// catalogRow is one offer as catalog ls lists it: an unknown price or
// memory is the string "unknown", a missing spot market null.
type catalogRow struct {
	ID             string                 `json:"id"`
	Provider       string                 `json:"provider"`
	GPU            string                 `json:"gpu"`
	GPUs           int                    `json:"gpus"`
	GPUMemoryGB    catalog.Fee            `json:"gpu_memory_gb"`
	Currency       string                 `json:"currency"`
	Region         string                 `json:"region"`
	OnDemandHourly catalog.Fee            `json:"on_demand_hourly"`
	SpotHourly     any                    `json:"spot_hourly"`
	Subscriptions  []catalog.Subscription `json:"subscriptions"`
	IncludedDisk   string                 `json:"included_disk"`
	Interconnect   string                 `json:"interconnect,omitempty"`
	Source         string                 `json:"source"`
	AsOf           string                 `json:"as_of"`
	SupersededBy   string                 `json:"superseded_by,omitempty"`
}

// spotJSON is an offer's spot price (a Fee: a number or "unknown"), or
// null without a spot market.
func spotJSON(s *catalog.Spot) any {
	if s == nil {
		return nil
	}
	return s.Hourly
}
