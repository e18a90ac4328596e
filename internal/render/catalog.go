package render

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/gpurent/gpurent/internal/catalog"
	"github.com/gpurent/gpurent/internal/catalog/refresh"
	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/report"
)

// Catalog is catalog ls's table: the offers, an older reading marked with
// the id of the one that supersedes it (by), and the exchange rates' dates.
func Catalog(w io.Writer, tr *i18n.Printer, offers []catalog.Offer, by map[string]string, rates catalog.Rates) error {
	tab := report.NewTab(tr.T("ID"), tr.T("PROVIDER"), tr.T("GPU"), tr.T("MEMORY"), tr.T("CUR"), tr.T("HOURLY"), tr.T("SPOT"), tr.T("MONTH"), tr.T("AS OF"))
	// A fee no source states is "unknown" in the YAML and the JSON; in
	// the table, in the reader's language.
	fee := func(f catalog.Fee) string {
		if _, ok := f.Value(); !ok {
			return tr.T("unknown")
		}
		return f.String()
	}
	for _, o := range offers {
		spot := "-"
		if o.Spot != nil {
			spot = fee(o.Spot.Hourly)
		}
		month := "-"
		for _, s := range o.Subscriptions {
			if s.Period == catalog.PeriodMonth {
				month = fmt.Sprint(s.Price)
			}
		}
		memory := "-"
		if v, ok := o.GPUMemoryGB.Value(); ok {
			memory = fmt.Sprintf("%g GB", v)
		}
		asOf := o.AsOf
		if b := by[o.ID]; b != "" {
			asOf += tr.Tf(" (history: %s supersedes it)", b)
		}
		tab.Row(o.ID, o.Provider, fmt.Sprintf("%s x%d", o.GPU, o.GPUs), memory, o.Currency, fee(o.OnDemand.Hourly), spot, month, asOf)
	}
	if err := tab.Write(w); err != nil {
		return err
	}
	providers := map[string]bool{}
	for _, o := range offers {
		providers[o.Provider] = true
	}
	var dates []string
	for _, cur := range slices.Sorted(maps.Keys(rates.PerUSD)) {
		if cur != "USD" {
			dates = append(dates, tr.Tf("%s as of %s", cur, rates.Dated(cur)))
		}
	}
	tr.Fprintf(w, "\n%s from %s; exchange rates: %s\n", Count(tr, len(offers), "offer"), Count(tr, len(providers), "provider"), strings.Join(dates, ", "))
	return nil
}

// CatalogFile is one valid catalog file: its offers, and how many of
// them leave each fee (by its field's path) and the GPU memory unknown.
type CatalogFile struct {
	Path             string         `json:"path"`
	Offers           int            `json:"offers"`
	UnknownFees      map[string]int `json:"unknown_fees"`
	UnknownGPUMemory int            `json:"unknown_gpu_memory"`
}

// CatalogCheck is catalog check's text: each file, and what its offers
// leave unknown.
func CatalogCheck(w io.Writer, tr *i18n.Printer, files []CatalogFile) {
	for _, f := range files {
		tr.Fprintf(w, "%s: ok, %s\n", f.Path, Count(tr, f.Offers, "offer"))
		for _, n := range slices.Sorted(maps.Keys(f.UnknownFees)) {
			tr.Fprintf(w, "  %s unknown in %s (quotes count it as 0 and say so)\n", n, Count(tr, f.UnknownFees[n], "offer"))
		}
		if f.UnknownGPUMemory > 0 {
			tr.Fprintf(w, "  gpu_memory_gb unknown in %s (--gpu with a size and --min-gpu-memory go by the datasheet's rows of the model)\n", Count(tr, f.UnknownGPUMemory, "offer"))
		}
	}
}

// Refreshed is what catalog refresh read: each change, each price
// rejected and why, each source that failed, and where it was kept.
func Refreshed(w io.Writer, tr *i18n.Printer, r refresh.Result, path string) {
	figure := func(v float64) string {
		if v < 0 {
			return tr.T("unknown") // the catalog did not know it
		}
		return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.6f", v), "0"), ".")
	}
	for _, c := range r.Updated {
		tr.Fprintf(w, "%s %s: %s -> %s (%s)\n", c.Offer, c.Plan, figure(c.Before), figure(c.After), c.Source)
	}
	for _, x := range r.Rejected {
		tr.Fprintf(w, "rejected: %s: %s\n", x.Offer, x.Reason)
	}
	for _, s := range refresh.Sources() {
		if why, ok := r.Failed[s]; ok {
			tr.Fprintf(w, "failed: %s: %s\n", s, why)
		}
	}
	if len(r.Offers) > 0 {
		tr.Fprintf(w, "%s refreshed, kept in %s\n", i18n.Plural(len(r.Offers), "%d offer", "%d offers"), path)
	}
}
