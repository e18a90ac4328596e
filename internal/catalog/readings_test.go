package catalog

import (
	"regexp"
	"testing"
)

// TestNoStaleReadingRanksFirst: among the embedded catalog's current
// offers, one of a provider's offers of a GPU and count that is cheaper
// than another of the same, yet older or undated, is an old reading of
// it, left unlinked (issue #56: Nebius' undated 2.95 and Jarvislabs'
// 2.69 of 2026-09-20 ranked above the 4.50 and 3.49 they had become). The
// pairs known to be two products are named.
func TestNoStaleReadingRanksFirst(t *testing.T) {
	c, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	current, _ := Current(c.Offers)
	apart := map[[2]string]bool{
		// Two statistics of one market, not two readings.
		{"autodl-4090-payg-market", "autodl-4090-list-2026-10-01"}: true,
		// RunPod's Community and Secure Cloud are two products.
		{"runpod-community-h100-sxm", "runpod-secure-h100-sxm-2026-11"}:      true,
		{"runpod-community-a100-sxm-80gb", "runpod-secure-a100-sxm-2026-11"}: true,
	}
	date := regexp.MustCompile(`\d{4}-\d{2}-\d{2}`)
	when := func(o *Offer) string { return date.FindString(o.AsOf) } // "" when undated
	for i := range current {
		for j := range current {
			a, b := &current[i], &current[j]
			if i == j || a.Provider != b.Provider || a.GPU != b.GPU || a.GPUs != b.GPUs || a.Currency != b.Currency {
				continue
			}
			pa, oka := a.OnDemand.Hourly.Value()
			pb, okb := b.OnDemand.Hourly.Value()
			if !oka || !okb || pa >= pb || when(b) == "" || when(a) >= when(b) && when(a) != "" {
				continue
			}
			if apart[[2]string{a.ID, b.ID}] || apart[[2]string{b.ID, a.ID}] {
				continue
			}
			t.Errorf("%s (%v, as of %q) is cheaper than %s (%v, as of %q), and older: a reading it should supersede, or name them apart",
				a.ID, pa, a.AsOf, b.ID, pb, b.AsOf)
		}
	}
}
