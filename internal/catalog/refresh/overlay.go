package refresh

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/gpurent/gpurent/internal/catalog"
	"github.com/gpurent/gpurent/internal/i18n"
)

// Update refreshes the overlay at path: the sources are read for the
// current offers (the embedded catalog with the overlay over it), what the
// overlay held and this refresh read nothing new for stays, and the new
// readings replace their offers. An overlay that cannot be read is said
// (say) and replaced. The overlay is written only when a price was read.
func Update(ctx context.Context, path string, o Options, say func(i18n.Text)) (Result, error) {
	base, _, err := catalog.LoadOverlay(path, nil)
	var kept []catalog.Offer
	if oe := (*catalog.OverlayError)(nil); errors.As(err, &oe) {
		say(i18n.Textf("the refreshed prices in %s cannot be read (%v): they are replaced", path, oe.Err))
		base, err = catalog.Default()
	} else if err == nil {
		if old, err := catalog.ReadFile(path, base.Rates); err == nil {
			kept = old.Offers
		}
	}
	if err != nil {
		return Result{}, err
	}
	r := Refresh(ctx, base.Offers, o)
	if len(r.Offers) == 0 {
		return r, nil
	}
	for _, n := range r.Offers {
		kept = slices.DeleteFunc(kept, func(k catalog.Offer) bool { return k.ID == n.ID })
	}
	kept = append(kept, r.Offers...)
	header := fmt.Sprintf("# gpurent catalog refresh, %s: prices read from the providers' sources, each offer's\n# source and as_of say where and when. quote and plan read this over the embedded\n# catalog; --offline leaves it out. Delete the file to forget it.\n", o.Now.UTC().Format(time.RFC3339))
	if err := catalog.WriteOverlay(path, header, kept); err != nil {
		return r, i18n.Errorf("the refreshed prices: %w", err)
	}
	return r, nil
}

// DiffRow is one refreshed offer beside the catalog's reading it replaces.
type DiffRow struct {
	Offer      string      `json:"offer"`
	Replaces   string      `json:"replaces"`
	Before     catalog.Fee `json:"before"`
	After      catalog.Fee `json:"after"`
	BeforeAsOf string      `json:"before_as_of"`
	AfterAsOf  string      `json:"after_as_of"`
}

// Diff compares each current reading of the overlay at path with the
// embedded catalog's offer it replaces, back through the readings earlier
// refreshes made.
func Diff(path string) ([]DiffRow, error) {
	def, err := catalog.Default()
	if err != nil {
		return nil, err
	}
	over, err := catalog.ReadFile(path, def.Rates)
	if err != nil {
		return nil, i18n.Errorf("no refreshed prices to compare (%w): run gpurent catalog refresh", err)
	}
	rows := []DiffRow{}
	current, _ := catalog.Current(over.Offers)
	for _, o := range current {
		old := o
		for len(old.Supersedes) > 0 {
			j := slices.IndexFunc(over.Offers, func(x catalog.Offer) bool { return x.ID == old.Supersedes[0] })
			if j < 0 {
				break
			}
			old = over.Offers[j]
		}
		id := old.ID
		if len(old.Supersedes) > 0 {
			id = old.Supersedes[0]
		}
		i := slices.IndexFunc(def.Offers, func(d catalog.Offer) bool { return d.ID == id })
		if i < 0 {
			continue
		}
		rows = append(rows, DiffRow{o.ID, id, def.Offers[i].OnDemand.Hourly, o.OnDemand.Hourly, def.Offers[i].AsOf, o.AsOf})
	}
	return rows, nil
}
