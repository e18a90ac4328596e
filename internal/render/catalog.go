package render

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/gpurent/gpurent/internal/catalog"
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
