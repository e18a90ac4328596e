package billing

import (
	"slices"
	"strings"

	"github.com/gpurent/gpurent/internal/catalog"
	"github.com/gpurent/gpurent/internal/i18n"
)

// Range is what the sourced values of one fee across the catalog's
// offers span, in USD: an unknown fee is likely somewhere in it.
type Range struct {
	Low, Mid, High float64 // the least, the median, the most
	N              int     // offers that state the fee
}

// Estimates are the ranges of the fees an offer may leave unknown, by the
// fee's name in Bill.Unknown.
type Estimates map[string]Range

// estimable are the fees an estimate fills, with the item they bill in.
var estimable = map[string]int{
	"storage.running_gb_month": 1, "storage.stopped_gb_month": 1,
	"egress_gb": 2, "boot_fee": 3, "ip_month": 4,
}

// minSourced is the fewest sourced values a range is drawn from.
const minSourced = 3

// NewEstimates draws each estimable fee's range from the offers that
// state it (a stated 0, as "no boot fee", counts: it is a value), in USD.
// A fee fewer than minSourced offers state has no range: it stays
// unknown, counted as 0.
func NewEstimates(offers []catalog.Offer, rates catalog.Rates) Estimates {
	vals := map[string][]float64{}
	for i := range offers {
		o := &offers[i]
		for name, f := range feesOf(o) {
			v, ok := f.Value()
			if !ok {
				continue
			}
			usd, err := rates.Convert(v, o.Currency, "USD")
			if err != nil {
				continue
			}
			vals[name] = append(vals[name], usd)
		}
	}
	est := Estimates{}
	for name, vs := range vals {
		if len(vs) < minSourced {
			continue
		}
		slices.Sort(vs)
		mid := vs[len(vs)/2]
		if len(vs)%2 == 0 {
			mid = (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2
		}
		est[name] = Range{Low: vs[0], Mid: mid, High: vs[len(vs)-1], N: len(vs)}
	}
	return est
}

func feesOf(o *catalog.Offer) map[string]catalog.Fee {
	return map[string]catalog.Fee{
		"storage.running_gb_month": o.Storage.RunningGBMonth, "storage.stopped_gb_month": o.Storage.StoppedGBMonth,
		"egress_gb": o.EgressGB, "boot_fee": o.BootFee, "ip_month": o.IPMonth,
	}
}

// Estimate is a bill with its unknown fees at their likely values: the
// median of the range (Total, Items), and its ends.
type Estimate struct {
	Total float64  `json:"total"`
	Low   float64  `json:"low"`
	High  float64  `json:"high"`
	Fees  []string `json:"fees"` // the fees estimated
	Items []Item   `json:"items"`
}

// filled is o with the unknown fees named in names at pick's end of
// their range, converted to o's currency.
func filled(o *catalog.Offer, est Estimates, names []string, rates catalog.Rates, pick func(Range) float64) catalog.Offer {
	f := *o
	for _, n := range names {
		r := est[n]
		v, err := rates.Convert(pick(r), "USD", o.Currency)
		if err != nil {
			continue
		}
		switch n {
		case "storage.running_gb_month":
			f.Storage.RunningGBMonth = catalog.Known(v)
		case "storage.stopped_gb_month":
			f.Storage.StoppedGBMonth = catalog.Known(v)
		case "egress_gb":
			f.EgressGB = catalog.Known(v)
		case "boot_fee":
			f.BootFee = catalog.Known(v)
		case "ip_month":
			f.IPMonth = catalog.Known(v)
		}
	}
	return f
}

// estimate fills b (a bill of offer o under p) with its estimate, where
// b counted an estimable fee as 0.
func estimate(b *Bill, p *Profile, o *catalog.Offer, opt Options, rates catalog.Rates) {
	if opt.Estimates == nil {
		return
	}
	var names []string
	for _, u := range b.Unknown {
		n, _, _ := strings.Cut(u, " ")
		if _, ok := estimable[n]; ok && opt.Estimates[n].N > 0 && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return
	}
	at := func(pick func(Range) float64) *Bill {
		fo := filled(o, opt.Estimates, names, rates, pick)
		for _, x := range billsFor(p, &fo, opt) {
			if x.Plan == b.Plan {
				return &x
			}
		}
		return nil
	}
	mid, low, high := at(func(r Range) float64 { return r.Mid }), at(func(r Range) float64 { return r.Low }), at(func(r Range) float64 { return r.High })
	if mid == nil || low == nil || high == nil {
		return
	}
	b.Estimate = &Estimate{Total: mid.Total, Low: low.Total, High: high.Total, Fees: names, Items: mid.Items}
}

// rank is what a bill is ranked by: its estimate where it has one, so
// that an offer whose fees are unknown does not rank first on the zeros
// counted for them.
func (b *Bill) rank() float64 {
	if b.Estimate != nil {
		return b.Estimate.Total
	}
	return b.Total
}

// BeyondEstimate is "≥" when b has unknown fees its estimate did not fill
// (an increment, a minimum) that may make it dearer still, else "".
func (b *Bill) BeyondEstimate() string {
	var rest []string
	for _, u := range b.Unknown {
		if n, _, _ := strings.Cut(u, " "); b.Estimate == nil || !slices.Contains(b.Estimate.Fees, n) {
			rest = append(rest, n)
		}
	}
	if lowerBound(rest) {
		return "≥"
	}
	return ""
}

// EstimatedItem reports whether item k of b is estimated.
func (b *Bill) EstimatedItem(k int) bool {
	if b.Estimate == nil {
		return false
	}
	for _, n := range b.Estimate.Fees {
		if estimable[n] == k {
			return true
		}
	}
	return false
}

// estimateNote says how the estimates were drawn.
func estimateNote(q *Quote, est Estimates) i18n.Text {
	var names []string
	for _, b := range q.Bills {
		if b.Estimate != nil {
			for _, n := range b.Estimate.Fees {
				if !slices.Contains(names, n) {
					names = append(names, n)
				}
			}
		}
	}
	if len(names) == 0 {
		return i18n.Text{}
	}
	slices.Sort(names)
	var parts []string
	for _, n := range names {
		r := est[n]
		parts = append(parts, i18n.Textf("%s %s-%s USD (median %s of %d)", n, trimFloat(r.Low), trimFloat(r.High), trimFloat(r.Mid), r.N).String())
	}
	return i18n.Textf("≈ marks estimates: a fee no source states for an offer is taken at the median of what the catalog's other offers state for it, and the bills are ranked by that (--wide shows the RANGE, the fee at the least and the most they state; -o json's total counts it as 0): %s", strings.Join(parts, "; "))
}
