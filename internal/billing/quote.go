package billing

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gpurent/gpurent/internal/catalog"
	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/report"
	"github.com/gpurent/gpurent/internal/specs"
	"github.com/gpurent/gpurent/internal/units"
)

// Plans a bill can be for.
const (
	OnDemand     = "on_demand"
	Subscription = "subscription"
	Spot         = "spot"
)

// Item kinds, in the order bills list them.
const (
	ItemCompute = "compute"
	ItemStorage = "storage"
	ItemEgress  = "egress"
	ItemBoot    = "boot"
	ItemIP      = "ip"
)

// Item is one line of a bill.
type Item struct {
	Kind   string  `json:"kind"`
	Amount float64 `json:"amount"`
}

// Bill is what one plan of one offer costs for the profile.
type Bill struct {
	Offer    string `json:"offer"`
	Provider string `json:"provider"`
	GPU      string `json:"gpu"`
	GPUs     int    `json:"gpus"` // per instance
	// GPUMemoryGB is each GPU's memory as the offer states it, or
	// "unknown" in JSON.
	GPUMemoryGB catalog.Fee `json:"gpu_memory_gb"`
	Instances   int         `json:"instances"`
	Plan        string      `json:"plan"`
	// Interconnect is what joins the GPUs of a machine, as the offer
	// states it: nvlink, pcie, or empty where no source says.
	Interconnect string `json:"interconnect,omitempty"`
	// Hours are the compute hours billed: the task's, or with a reference
	// GPU, what this offer's GPU needs for the same work, rated as the
	// datasheet row RatedAs.
	Hours   float64   `json:"hours"`
	RatedAs string    `json:"rated_as,omitempty"`
	Detail  i18n.Text `json:"detail"`
	// Schedule is how a subscription bill assumes the hours are run:
	// "spread" evenly over the span, or "packed" into the subscribed
	// periods first. Empty on other plans.
	Schedule string  `json:"schedule,omitempty"`
	Total    float64 `json:"total"`
	// Estimate is the bill with its unknown fees at their likely values
	// (Options.Estimates); nil when none could be estimated.
	Estimate  *Estimate `json:"estimate,omitempty"`
	ListTotal float64   `json:"list_total"` // on-demand hourly × compute hours × instances: what the price page suggests
	// PerGPUHour is the total over the GPUs the task needs and its compute
	// hours: what each GPU-hour of the job costs, every fee and idle GPU
	// included, so machines of 1 and 8 GPUs compare.
	PerGPUHour  float64 `json:"per_gpu_hour"`
	HiddenShare float64 `json:"hidden_share"` // (total − list_total) / total
	Items       []Item  `json:"items"`
	// Unknown names the fees no source confirmed, counted as 0: a bill with
	// unknowns may rank cheaper than it is, and its total is a lower bound
	// (TotalIsLowerBound), never a clean total.
	Unknown           []string    `json:"unknown"`
	TotalIsLowerBound bool        `json:"total_is_lower_bound"`
	Warnings          []i18n.Text `json:"warnings"`
	// Currency is the offer's own; amounts are in the quote's currency.
	OfferCurrency string `json:"offer_currency"`
	// Source and AsOf say where the offer's prices come from and when, as
	// the catalog states them. PriceDate is the newest date AsOf states (a
	// month counts as its last day) and PriceAgeDays its age on
	// Options.Today: the least age the prices can have. Both are empty when
	// AsOf states no date or no Today was given.
	Source       string `json:"source"`
	AsOf         string `json:"as_of"`
	PriceDate    string `json:"price_date,omitempty"`
	PriceAgeDays *int   `json:"price_age_days,omitempty"`
	// SupersededBy is, on a bill priced for history (--history), the id
	// of the newer reading of the same offer.
	SupersededBy string `json:"superseded_by,omitempty"`
}

// StalePriceDays is the age past which a bill warns that its prices may
// have moved. A quarter is a policy, not a measured rate at which prices
// change: no source gives one, and the user confirms at the source either
// way; the summary line gives every offer's age.
const StalePriceDays = 90

// date fills the bill's source and price date from o, and warns when the
// prices are old or undated (priceAge).
func (b *Bill) date(o *catalog.Offer, today time.Time) {
	b.Source, b.AsOf = o.Source, o.AsOf
	var warning i18n.Text
	b.PriceDate, b.PriceAgeDays, warning = priceAge(o, today)
	if !warning.IsZero() {
		b.Warnings = append(b.Warnings, warning)
	}
}

// history marks the bill of an older reading of an offer, priced only
// when asked for history.
func (b *Bill) history(o *catalog.Offer, opt Options) {
	if by := opt.SupersededBy[o.ID]; by != "" && by != o.ID {
		b.SupersededBy = by
		b.Warnings = append(b.Warnings, i18n.Textf("history: an older reading of this offer; %s is its price now", by))
	}
}

// priceAge is the newest date o's as_of states and its age in days on
// today, with a warning when the prices are older than StalePriceDays,
// carry no date at all, or are dated after today (a slip in a catalog, or
// a clock that is wrong: no age then). Nothing when today is zero.
func priceAge(o *catalog.Offer, today time.Time) (date string, days *int, warning i18n.Text) {
	if today.IsZero() {
		return "", nil, i18n.Text{}
	}
	d, ok := o.PriceDate()
	if !ok {
		return "", nil, i18n.Textf("the source states no date for these prices (as_of: %s): confirm them there before ordering", o.AsOf)
	}
	date = d.Format(time.DateOnly)
	if d.After(today) {
		return date, nil, i18n.Textf("prices dated %s (as_of: %s), after today (%s): check the catalog's as_of and this machine's clock", date, o.AsOf, today.Format(time.DateOnly))
	}
	age := int(today.Sub(d).Hours() / 24)
	if age > StalePriceDays {
		stated := date
		if o.AsOf != date {
			stated += " (as_of: " + o.AsOf + ")"
		}
		warning = i18n.Textf("prices dated %s, %d days before today: they may have moved; confirm them at the source before ordering", stated, age)
	}
	return date, &age, warning
}

// Options adjust a quote beyond the profile.
type Options struct {
	// Currency all amounts are converted to; USD when empty.
	Currency string
	// InterruptionsPerDay overrides every offer's spot interruption rate
	// when set (the embedded catalog knows none).
	InterruptionsPerDay *float64
	// Today is the day the prices' ages are judged on (UTC midnight);
	// zero leaves them unjudged.
	Today time.Time
	// Notes are what the caller says of the offers chosen (a provider
	// named that has none of them), said first among the notes.
	Notes []i18n.Text
	// SupersededBy maps the id of an older reading of an offer to the
	// newest one's (catalog.Current): its bills say they are history.
	SupersededBy map[string]string
	// SpanGiven says the user set the span: a spot run must then finish
	// within it. A span derived from the hours stretches to the run's
	// expected wall time instead.
	SpanGiven bool
	// Work, when set, reads the hours as hours on its reference GPU: each
	// offer is priced for the hours its own GPU needs (quote --reference).
	Work *Work
	// Estimates, when set, give each bill with unknown fees an estimate,
	// which ranks it (NewEstimates).
	Estimates Estimates
}

// Quote is every bill of the profile, cheapest first.
type Quote struct {
	Currency string `json:"currency"`
	// Reference is the GPU the hours are on (--reference): each bill's
	// hours are its own GPU's for the same work.
	Reference string      `json:"reference,omitempty"`
	Rates     []i18n.Text `json:"rates,omitempty"` // the exchange rates used, as "1 USD = 6.975 CNY"
	Bills     []Bill      `json:"bills"`
	Notes     []i18n.Text `json:"notes,omitempty"` // plans not offered and why

	used map[string]i18n.Text // the rate line of each offer currency converted
}

// Top keeps the n cheapest bills (all when n is 0), and the rates of the
// currencies those bills were converted from.
func (q *Quote) Top(n int) {
	if n > 0 && len(q.Bills) > n {
		q.Bills = q.Bills[:n]
	}
	q.Rates = rateLines(q.used, q.Bills)
}

// Offers returns the offers whose GPU matches the profile's, or an error
// naming the GPU when none does; with one_machine, those that hold all the
// profile's GPUs in one instance, or an error naming the most one holds.
func Offers(p *Profile, offers []catalog.Offer) ([]catalog.Offer, error) {
	out, err := catalog.WithGPU(offers, p.GPU)
	if err == nil && p.GPUsPerNode > 0 {
		return wholeNodes(p, out)
	}
	if err != nil || !p.OneMachine {
		return out, err
	}
	var whole []catalog.Offer
	most := 0
	for _, o := range out {
		if o.GPUs >= p.GPUs {
			whole = append(whole, o)
		}
		most = max(most, o.GPUs)
	}
	if len(whole) == 0 {
		return nil, i18n.Errorf("no offer of GPU %q has %d GPUs in one machine; the most is %d", p.GPU, p.GPUs, most)
	}
	return whole, nil
}

// wholeNodes keeps the offers whose machines hold GPUsPerNode GPUs: a job
// across machines wants them whole (all of a node's NVLinks, its own
// network cards), not 64 one-GPU rentals.
func wholeNodes(p *Profile, offers []catalog.Offer) ([]catalog.Offer, error) {
	var out []catalog.Offer
	sizes := map[int]bool{}
	for _, o := range offers {
		if o.GPUs == p.GPUsPerNode {
			out = append(out, o)
		}
		sizes[o.GPUs] = true
	}
	if len(out) == 0 {
		var have []string
		for n := range sizes {
			have = append(have, strconv.Itoa(n))
		}
		slices.Sort(have)
		return nil, i18n.Errorf("no offer of GPU %q has machines of %d GPUs; they have %s", p.GPU, p.GPUsPerNode, strings.Join(have, ", "))
	}
	return out, nil
}

// WithMemory keeps the offers whose GPUs may have the profile's
// min_gpu_memory_gb (all without one): a model that does not fit is not
// trained at any price. An offer whose memory is not known, or whose model
// comes in sizes on both sides of the bound, is kept, and memoryNote says
// so; unknown is not too small. None left is an error naming the largest
// memory there is, and so is a bound that is no size (what Validate says
// of it, for callers that take the bound from a flag alone).
func WithMemory(p *Profile, offers []catalog.Offer) ([]catalog.Offer, error) {
	if err := checkMinMemory(p.MinGPUMemoryGB); err != nil {
		return nil, err
	}
	if p.MinGPUMemoryGB == 0 {
		return offers, nil
	}
	tab, err := specs.Load()
	if err != nil {
		return nil, err
	}
	var out []catalog.Offer
	largest, which := 0.0, ""
	for i := range offers {
		_, hi := catalog.MemoryGB(&offers[i], tab)
		if hi == 0 || hi >= p.MinGPUMemoryGB {
			out = append(out, offers[i])
		}
		if hi > largest {
			largest, which = hi, offers[i].GPU
		}
	}
	if len(out) == 0 && len(offers) > 0 {
		among := ""
		if p.GPU != "" {
			among = fmt.Sprintf(" among the %s of GPU %q", report.Count(len(offers), "offer"), p.GPU)
		}
		return nil, i18n.Errorf("no offer%s has GPUs of %v GB or more; the most is %v GB (%s)", among, p.MinGPUMemoryGB, largest, which)
	}
	return out, nil
}

// memoryNote counts the offers WithMemory kept without knowing their GPUs
// hold min_gpu_memory_gb, or "".
func memoryNote(p *Profile, offers []catalog.Offer) i18n.Text {
	if p.MinGPUMemoryGB <= 0 {
		return i18n.Text{}
	}
	tab, err := specs.Load()
	if err != nil {
		return i18n.Text{}
	}
	n := 0
	for i := range offers {
		if lo, _ := catalog.MemoryGB(&offers[i], tab); lo < p.MinGPUMemoryGB {
			n++
		}
	}
	if n == 0 {
		return i18n.Text{}
	}
	return i18n.Textf("%d of %s may have GPUs of less than %v GB: the offer states no memory, and its model is not known to come only with that much or more; "+
		"confirm it at the source before ordering", n, i18n.Plural(len(offers), "%d offer", "%d offers"), p.MinGPUMemoryGB)
}

// Make computes every bill of p over offers (already matched to its GPU).
func Make(p *Profile, offers []catalog.Offer, rates catalog.Rates, opt Options) (*Quote, error) {
	cur, factors, used, err := conversions(offers, rates, opt)
	if err != nil {
		return nil, err
	}
	q := &Quote{Currency: cur, Bills: []Bill{}, used: used}
	var unrated []string
	for i := range offers {
		o := &offers[i]
		po, rated, ok := forWork(p, o, opt.Work)
		if !ok {
			unrated = append(unrated, o.GPU)
			continue
		}
		for _, b := range billsFor(po, o, opt) {
			b.RatedAs = rated
			estimate(&b, po, o, opt, rates)
			b.date(o, opt.Today)
			b.history(o, opt)
			b.scale(factors[i])
			q.Bills = append(q.Bills, b)
		}
	}
	q.Notes = offerNotes(p, offers, opt)
	q.Reference, q.Notes = workNotes(offers, opt.Work, unrated, q.Notes, func(w *Work) i18n.Text { return w.Note(p.ComputeHours) })
	if !p.Interruptible {
		q.Notes = append(q.Notes, i18n.Textf("spot not quoted: the profile is not interruptible (set interruptible: true, or --interruptible, when the job resumes from checkpoints)"))
	}
	sort.SliceStable(q.Bills, func(i, j int) bool { return q.Bills[i].rank() < q.Bills[j].rank() })
	if n := estimateNote(q, opt.Estimates); !n.IsZero() {
		q.Notes = append(q.Notes, n)
	}
	q.Rates = rateLines(used, q.Bills)
	return q, nil
}

// VariantNote says when an offer of a model the profile's GPU does not
// match (variants: the RTX 4090D beside "4090", catalog.Variants) is the
// cheaper answer to the task: its cheapest bill against cheapest, the
// cheapest of the GPU asked for (+Inf when there is none). "" otherwise.
func VariantNote(p *Profile, variants []catalog.Offer, rates catalog.Rates, opt Options, cheapest float64) i18n.Text {
	if len(variants) == 0 {
		return i18n.Text{}
	}
	opt.Notes = nil
	q, err := Make(p, variants, rates, opt)
	if err != nil || len(q.Bills) == 0 || q.Bills[0].Total >= cheapest {
		return i18n.Text{}
	}
	b := q.Bills[0]
	return i18n.Textf("the %s, which GPU %q does not match, is cheaper: %s %s on %s (%s) for this task; it is another card (compare their datasheets), priced with --gpu %q",
		b.GPU, p.GPU, report.Money(b.Total), q.Currency, b.Offer, b.Plan, b.GPU)
}

// conversions is the currency amounts are given in (opt.Currency, USD
// when empty), the factor that converts each offer's amounts to it, and
// the exchange rate used for each offer currency converted, as "1 USD =
// 6.975 CNY (as of ...)".
func conversions(offers []catalog.Offer, rates catalog.Rates, opt Options) (cur string, factors []float64, used map[string]i18n.Text, err error) {
	cur = opt.Currency
	if cur == "" {
		cur = "USD"
	}
	factors = make([]float64, len(offers))
	used = map[string]i18n.Text{}
	for i := range offers {
		o := &offers[i]
		if factors[i], err = rates.Convert(1, o.Currency, cur); err != nil {
			return "", nil, nil, i18n.Errorf("offer %s: %w", o.ID, err)
		}
		if _, seen := used[o.Currency]; o.Currency != cur && !seen {
			from, _ := rates.Convert(1, "USD", o.Currency)
			to, _ := rates.Convert(1, "USD", cur)
			used[o.Currency] = i18n.Textf("1 %s = %.6g %s (%s)", cur, from/to, o.Currency, rateAge(rates, opt.Today, o.Currency, cur))
		}
	}
	return cur, factors, used, nil
}

// rateAge dates the rate between currencies a and b: the as_of of each
// that is not USD, and, judged on today, a warning when the older is
// more than StalePriceDays old or states no date. Exchange rates move
// as prices do, and the catalog's are never fetched.
func rateAge(rates catalog.Rates, today time.Time, a, b string) i18n.Text {
	var dates []string
	var oldest time.Time
	undated := false
	for _, c := range []string{a, b} {
		if c == "USD" {
			continue
		}
		d := rates.Dated(c)
		if !slices.Contains(dates, d) {
			dates = append(dates, d)
		}
		if t, ok := catalog.RateDate(d); !ok {
			undated = true
		} else if oldest.IsZero() || t.Before(oldest) {
			oldest = t
		}
	}
	var at any = strings.Join(dates, "")
	if len(dates) > 1 {
		at = i18n.Textf("%s and %s", dates[0], dates[1])
	}
	var tail i18n.Text
	switch {
	case today.IsZero():
	case undated:
		tail = i18n.Textf("; no date stated: exchange rates move, set your own under exchange_rates in a --catalog file")
	case oldest.After(today):
		tail = i18n.Textf("; dated after today: check the catalog's as_of and this machine's clock")
	case today.Sub(oldest).Hours()/24 > StalePriceDays:
		tail = i18n.Textf("; %d days old or more: exchange rates move, set your own under exchange_rates in a --catalog file", int(today.Sub(oldest).Hours()/24))
	}
	return i18n.Textf("as of %s%s", at, tail)
}

// rateLines are the rates of used that bills were converted with, sorted:
// a rate no bill shown needed is not shown.
func rateLines(used map[string]i18n.Text, bills []Bill) []i18n.Text {
	var out []i18n.Text
	for _, b := range bills {
		if line, ok := used[b.OfferCurrency]; ok && !slices.ContainsFunc(out, func(t i18n.Text) bool { return t.String() == line.String() }) {
			out = append(out, line)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

func (b *Bill) scale(f float64) {
	b.Total *= f
	b.ListTotal *= f
	b.PerGPUHour *= f
	for i := range b.Items {
		b.Items[i].Amount *= f
	}
	if e := b.Estimate; e != nil {
		e.Total, e.Low, e.High = e.Total*f, e.Low*f, e.High*f
		for i := range e.Items {
			e.Items[i].Amount *= f
		}
	}
}

// uploadNote says what the checkpoint uploads add to egress, or "" when
// the profile has no checkpoint size.
func uploadNote(p *Profile) i18n.Text {
	n, gb := p.Uploads()
	if n == 0 {
		return i18n.Text{}
	}
	return i18n.Textf("egress includes %d checkpoint uploads of %g GB (%g GB) to a store outside the provider: one every %s of compute, as gpurent run streams them; a store in the provider's own region may not bill them",
		n, p.Checkpoint.SizeGB, gb, units.FormatDuration(time.Duration(p.Checkpoint.Every)))
}

// egressMonths is how many calendar months the task's egress falls in,
// for providers that bill it by month: the span in 30-day months, at
// least one. The task's egress is spread evenly over them.
func egressMonths(p *Profile) int {
	return max(1, int(math.Ceil(float64(p.SpanDays)/30)))
}

// egressNote says how egress is priced on the offers that bill it by
// month (a free allowance, cheaper tiers), or "" when none of them does
// or the task sends nothing out.
func egressNote(p *Profile, offers []catalog.Offer) i18n.Text {
	if p.egressGB() <= 0 {
		return i18n.Text{}
	}
	var providers, free []string
	for _, o := range offers {
		if o.EgressMonth != nil && !slices.Contains(providers, o.Provider) {
			providers = append(providers, o.Provider)
			if o.EgressMonth.FreeGB > 0 {
				free = append(free, fmt.Sprintf("%s: %g GB", o.Provider, o.EgressMonth.FreeGB))
			}
		}
	}
	if len(providers) == 0 {
		return i18n.Text{}
	}
	m := egressMonths(p)
	n := i18n.Textf("%s bill egress by each month's volume, in tiers: the task's %g GB counts as %g GB in each of %s (spread evenly over the span)",
		strings.Join(providers, ", "), p.egressGB(), p.egressGB()/float64(m), i18n.Plural(m, "%d month", "%d months"))
	if len(free) > 0 {
		n = i18n.Textf("%s%s", n, i18n.Textf("; a month's free allowance (%s) is the account's, shared by all its services and regions: what other work used that month is billed", strings.Join(free, ", ")))
	}
	return n
}

// splitNote says how many offers spread the profile's GPUs over several
// instances, and what that means, or "" when none does. A bill totals the
// instances' prices, so 16 single-GPU machines can top a ranking that a
// job splitting one model over 16 GPUs could never use well.
func splitNote(p *Profile, offers []catalog.Offer) i18n.Text {
	split, most := 0, 0
	for i := range offers {
		if instances(p, &offers[i]) > 1 {
			split++
		}
		most = max(most, offers[i].GPUs)
	}
	if split == 0 {
		return i18n.Text{}
	}
	n := i18n.Textf("%d of %s need several instances for %d GPUs: their GPUs sit in separate machines and talk over the network, "+
		"which a job that splits one model across GPUs (tensor or pipeline parallel, FSDP) feels; the catalog does not record the network between instances",
		split, i18n.Plural(len(offers), "%d offer", "%d offers"), p.GPUs)
	if most < p.GPUs {
		n = i18n.Textf("%s%s", n, i18n.Textf("; no offer here has %d GPUs in one instance (the most is %d)", p.GPUs, most))
	}
	return n
}

// offerNotes are what quote and plan say of the offers as a whole: GPU
// memory not known to suffice, GPUs split over machines or left idle,
// uploads counted as egress, tiered egress, spot prices missing.
func offerNotes(p *Profile, offers []catalog.Offer, opt Options) []i18n.Text {
	notes := slices.Clone(opt.Notes)
	for _, n := range []i18n.Text{memoryNote(p, offers), splitNote(p, offers), idleNote(p, offers), uploadNote(p), egressNote(p, offers), writeNote(p)} {
		if !n.IsZero() {
			notes = append(notes, n)
		}
	}
	return append(notes, spotNotes(p, offers, opt)...)
}

// writeNote warns when one checkpoint takes longer to write than the
// work between two: the job would spend more time saving than working,
// which is most often a slip (the interval is work between checkpoints,
// not the time from one to the next).
func writeNote(p *Profile) i18n.Text {
	c := p.Checkpoint
	if c == nil || c.Write <= c.Every {
		return i18n.Text{}
	}
	return i18n.Textf("a checkpoint write (%s, --ckpt-write) is longer than the work between two (%s, --ckpt-every): the job would spend more time saving than working; check both, or checkpoint less often",
		c.Write, c.Every)
}

// idleNote says how many offers rent more GPUs than the profile needs,
// or "" when none does. Such an offer is sold by the whole machine: an
// 8-GPU server quoted for a 1-GPU task bills all eight, which its row in
// a ranking of totals beside single GPUs does not say.
func idleNote(p *Profile, offers []catalog.Offer) i18n.Text {
	over, most := 0, 0
	for i := range offers {
		if idle := instances(p, &offers[i])*offers[i].GPUs - p.GPUs; idle > 0 {
			over++
			most = max(most, idle)
		}
	}
	if over == 0 {
		return i18n.Text{}
	}
	return i18n.Textf("%d of %s rent more GPUs than the task's %d (up to %d more, idle but billed): such an offer is sold by the whole machine, "+
		"and its bill is the machine's; a job that can use them all is compared fairly with --gpus set to their count",
		over, i18n.Plural(len(offers), "%d offer", "%d offers"), p.GPUs, most)
}

// instances is how many instances of o the profile needs.
func instances(p *Profile, o *catalog.Offer) int {
	return (p.GPUs + o.GPUs - 1) / o.GPUs
}

// lowerBound reports whether counting the unknown fees as 0 makes a
// bill the least it can be: any unknown fee does, but an unknown included
// disk, counted as none, bills more storage, not less.
func lowerBound(unknown []string) bool {
	return slices.ContainsFunc(unknown, func(n string) bool { return n != "storage.included_gb" })
}

// usage collects the unknown fees a bill had to count as zero, and what
// the bill assumed that its user should know (notes).
type usage struct {
	unknown []string
	notes   []i18n.Text
}

// fee is the amount of f, noting it when unknown and it matters (want).
func (u *usage) fee(name string, f catalog.Fee, matters bool) float64 {
	v, ok := f.Value()
	if !ok {
		if matters {
			u.unknown = append(u.unknown, name)
		}
		return 0
	}
	return v
}

// names are the unknown fees' field names, without explanations.
func (u *usage) names() []string {
	out := make([]string, len(u.unknown))
	for i, n := range u.unknown {
		out[i], _, _ = strings.Cut(n, " ")
	}
	return out
}

func (u *usage) warnings() []i18n.Text {
	out := []i18n.Text{}
	if len(u.unknown) > 0 {
		names := make([]i18n.Text, len(u.unknown))
		for i, n := range u.unknown {
			names[i] = i18n.Data(n) // field paths, and one with a note
		}
		out = append(out, i18n.Textf("unknown, computed as 0: %s", i18n.Join(names, ", ")))
	}
	return append(out, u.notes...)
}

// shared are the fees every plan pays the same way.
type shared struct {
	extraGB float64 // disk above what is included, per instance
	runGB   float64 // per GB-hour while running
	stopGB  float64 // per GB-hour while stopped
	egress  float64 // for the whole task
	ip      float64 // for the whole span, per instance
	boot    float64 // per start
}

// sharedFees are the fees of o that every plan pays alike, for a task
// stopped stoppedHours in all, or restarted (interrupted spot runs).
func sharedFees(p *Profile, o *catalog.Offer, u *usage, stoppedHours float64, restarted bool) shared {
	var s shared
	inc := u.fee("storage.included_gb", o.Storage.IncludedGB, p.DiskGB > 0)
	// Data kept across a stop cannot stay on a disk that a stop wipes: it
	// lives on a volume, billed running and stopped, all of it.
	// A span derived from the hours ends with the last of them: the rest
	// of its last day is no stop.
	stops := (stoppedHours > 1e-9 && !p.spanDerived) || p.Starts > 1 || restarted
	switch d := o.Storage.IncludedDisk; {
	case p.SharedDisk && p.DiskGB > 0:
		// A network volume is its own disk: none of it is included.
		inc = 0
	case !stops || p.DiskGB <= 0 || d == catalog.DiskPersistent:
	case d == catalog.DiskEphemeral:
		if inc > 0 {
			u.notes = append(u.notes, i18n.Textf("the included %s GB disk is ephemeral (wiped on stop): the task's %s GB kept across stops is billed as a volume, at storage.running_gb_month and storage.stopped_gb_month", trimFloat(inc), trimFloat(p.DiskGB)))
		}
		inc = 0
	case inc > 0:
		u.unknown = append(u.unknown, "storage.included_disk (whether the included disk survives a stop)")
	}
	s.extraGB = math.Max(0, p.DiskGB-inc)
	if rate, ok := o.Storage.SharedGBMonth.Value(); ok && p.SharedDisk && p.DiskGB > 0 {
		// A network volume has its own rate, the same stopped or not.
		s.runGB, s.stopGB = rate/catalog.HoursPerMonth, rate/catalog.HoursPerMonth
	} else {
		if p.SharedDisk && p.DiskGB > 0 {
			u.notes = append(u.notes, i18n.Textf("no network-volume rate is known for this offer: the shared disk is priced at its disk's rates"))
		}
		s.runGB = u.fee("storage.running_gb_month", o.Storage.RunningGBMonth, s.extraGB > 0) / catalog.HoursPerMonth
		s.stopGB = u.fee("storage.stopped_gb_month", o.Storage.StoppedGBMonth, s.extraGB > 0 && stoppedHours > 0) / catalog.HoursPerMonth
	}
	months := float64(egressMonths(p))
	s.egress = months * o.EgressMonth.MonthCost(p.egressGB()/months, u.fee("egress_gb", o.EgressGB, p.egressGB() > 0))
	s.boot = u.fee("boot_fee", o.BootFee, true)
	s.ip = u.fee("ip_month", o.IPMonth, true) * float64(p.SpanDays) / 30
	return s
}

func newBill(p *Profile, o *catalog.Offer, plan string) Bill {
	return Bill{Offer: o.ID, Provider: o.Provider, GPU: o.GPU, GPUs: o.GPUs, GPUMemoryGB: o.GPUMemoryGB, Instances: instances(p, o), Plan: plan, OfferCurrency: o.Currency, Hours: p.ComputeHours, Interconnect: o.Interconnect}
}

// finish totals the items and fills list_total and hidden_share.
func (b *Bill) finish(items [5]float64, listHourly float64, p *Profile) {
	n := float64(b.Instances)
	kinds := [5]string{ItemCompute, ItemStorage, ItemEgress, ItemBoot, ItemIP}
	b.Items = make([]Item, len(kinds))
	b.Total = 0
	for i, k := range kinds {
		amt := items[i]
		if k != ItemEgress && !(k == ItemStorage && p.SharedDisk) {
			amt *= n // per-instance fees; egress is for the task's data, a shared disk is one
		}
		b.Items[i] = Item{Kind: k, Amount: amt}
		b.Total += amt
	}
	b.ListTotal = listHourly * p.ComputeHours * n
	if gh := float64(p.GPUs) * p.ComputeHours; gh > 0 {
		b.PerGPUHour = b.Total / gh
	}
	if b.Total > 0 {
		b.HiddenShare = (b.Total - b.ListTotal) / b.Total
	}
}

// listHourly is the hourly price the offer's page suggests: on demand, or
// for subscription-only offers the cheapest period's price per hour.
func listHourly(o *catalog.Offer) (float64, i18n.Text) {
	if v, ok := o.OnDemand.Hourly.Value(); ok {
		return v, i18n.Text{}
	}
	best := math.Inf(1)
	for _, s := range o.Subscriptions {
		best = math.Min(best, s.Price/float64(catalog.PeriodDays(s.Period)*24))
	}
	if math.IsInf(best, 1) {
		return 0, i18n.Text{}
	}
	return best, i18n.Textf("list_total uses the subscription's price per hour: the offer's on-demand price is unknown")
}

func billsFor(p *Profile, o *catalog.Offer, opt Options) []Bill {
	var out []Bill
	if b, ok := onDemandBill(p, o); ok {
		out = append(out, b)
	}
	if b, ok := subscriptionBill(p, o, false); ok {
		out = append(out, b)
	}
	if p.Interruptible {
		if b, ok := spotBill(p, o, opt); ok {
			out = append(out, b)
		}
	}
	return out
}

// releaseWarning warns when each stopped gap outlasts the platform's patience.
func releaseWarning(p *Profile, o *catalog.Offer, runningHours float64) []i18n.Text {
	rel, ok := o.ReleaseAfterStopped.Value()
	if !ok {
		return nil
	}
	gap := (float64(p.SpanDays)*24 - runningHours) / float64(p.Starts)
	if gap <= rel.Hours() {
		return nil
	}
	return []i18n.Text{i18n.Textf("each stopped gap of %.1f h exceeds release_after_stopped %s: the platform deletes the stopped instance and its disk (this bill counts the disk as kept: start it again sooner, or keep the data elsewhere)", gap, o.ReleaseAfterStopped)}
}

// onDemandBill: each of the starts runs lasts compute_hours/starts, rounded
// up to the increment and at least the minimum.
func onDemandBill(p *Profile, o *catalog.Offer) (Bill, bool) {
	hourly, ok := o.OnDemand.Hourly.Value()
	if !ok {
		return Bill{}, false
	}
	b := newBill(p, o, OnDemand)
	var u usage
	run := p.ComputeHours / float64(p.Starts)
	billed := run
	if inc, ok := o.OnDemand.Increment.Value(); ok {
		h := inc.Hours()
		billed = math.Ceil(run/h-1e-9) * h
	} else {
		u.unknown = append(u.unknown, i18n.Key("on_demand.increment (no rounding applied)"))
	}
	if m, ok := o.OnDemand.Minimum.Value(); ok {
		billed = math.Max(billed, m.Hours())
	} else {
		u.unknown = append(u.unknown, "on_demand.minimum")
	}
	stopped := float64(p.SpanDays)*24 - p.ComputeHours
	s := sharedFees(p, o, &u, stopped, false)
	items := [5]float64{
		billed * float64(p.Starts) * hourly,
		s.extraGB * (s.runGB*p.ComputeHours + s.stopGB*stopped),
		s.egress,
		s.boot * float64(p.Starts),
		s.ip,
	}
	b.finish(items, hourly, p)
	b.Detail = i18n.Textf("%d × %s billed (%s increment)", p.Starts, hoursText(billed), o.OnDemand.Increment)
	b.Unknown, b.Warnings = u.names(), append(u.warnings(), releaseWarning(p, o, p.ComputeHours)...)
	b.TotalIsLowerBound = lowerBound(b.Unknown)
	return b, true
}

// rate is the spot interruption rate per hour for the whole job, and whether
// it is known: --interruptions-per-day, else the offer's own rate, else
// the provider's published frequency judged at its upper end.
func rate(p *Profile, o *catalog.Offer, opt Options) (float64, bool) {
	perDay, ok := 0.0, false
	if opt.InterruptionsPerDay != nil {
		perDay, ok = *opt.InterruptionsPerDay, true
	} else if o.Spot != nil {
		if perDay, ok = o.Spot.InterruptionsPerDay.Value(); !ok && o.Spot.Frequency != nil {
			perDay, _ = o.Spot.Frequency.PerDay()
			ok = true
		}
	}
	return perDay / 24 * float64(instances(p, o)), ok
}

// floorRate reports whether the offer's spot interruption rate is only a
// floor: an open published bucket (">20%") read at its lower end.
func floorRate(o *catalog.Offer, opt Options) bool {
	if opt.InterruptionsPerDay != nil || o.Spot == nil || o.Spot.InterruptionsPerDay.IsKnown() || o.Spot.Frequency == nil {
		return false
	}
	_, least := o.Spot.Frequency.PerDay()
	return least
}

// frequencyNote says where a spot bill's interruption rate comes from
// when it is the provider's published frequency, or "".
func frequencyNote(o *catalog.Offer, opt Options) i18n.Text {
	if opt.InterruptionsPerDay != nil || o.Spot == nil || o.Spot.InterruptionsPerDay.IsKnown() || o.Spot.Frequency == nil {
		return i18n.Text{}
	}
	f := o.Spot.Frequency
	perDay, least := f.PerDay()
	bucket := i18n.Textf("%s to %s", report.Percent(f.Low), report.Percent(f.High.Or(0)))
	judged := i18n.Textf("its upper end")
	if least {
		// "over %v", not "over %s": render's "over %s" is a span of days,
		// another phrase in other languages.
		bucket, judged = i18n.Textf("over %v", report.Percent(f.Low)), i18n.Textf("its lower end, so the bill is the least it can be")
	}
	return i18n.Textf("interruption rate from %s (%s): %s of this instance type's spot capacity reclaimed in a month, judged at %s, %.3g interruptions a day per instance if interruptions arrive at random; --interruptions-per-day overrides it",
		f.Source, f.AsOf, bucket, judged, perDay)
}

// spotRun is the profile's job as a Run on offer o. Without checkpoint
// settings an interruption restarts the job from the beginning.
func spotRun(p *Profile, o *catalog.Offer, opt Options) (Run, bool) {
	lambda, known := rate(p, o, opt)
	r := Run{Work: p.ComputeHours, Every: p.ComputeHours, Rate: lambda}
	if c := p.Checkpoint; c != nil {
		r.Every = math.Min(c.Every.Hours(), p.ComputeHours)
		r.Write = c.Write.Hours()
		r.Restart = c.Restart.Hours()
	}
	return r, known
}

// neverFinishes: a spot run expecting more than ten million hours (over a
// thousand years) practically never finishes; it gets no bill.
func neverFinishes(hours float64) bool {
	return math.IsInf(hours, 0) || math.IsNaN(hours) || hours > 1e7
}

// overrunsSpan reports whether a spot run expecting hours of wall time
// cannot finish within the span the user gave: its bill would price a
// run that does not fit, and its stopped storage as none.
func overrunsSpan(p *Profile, opt Options, hours float64) bool {
	return opt.SpanGiven && hours > float64(p.SpanDays)*24+1e-9
}

// spotNotes name the offers whose spot plan is not quoted, because the
// run would never finish on them or not within the span given, so that
// their missing rows have a reason.
func spotNotes(p *Profile, offers []catalog.Offer, opt Options) []i18n.Text {
	if !p.Interruptible {
		return nil
	}
	var ids, over []string
	longest := 0.0
	for i := range offers {
		o := &offers[i]
		if o.Spot == nil || !o.Spot.Hourly.IsKnown() {
			continue
		}
		r, _ := spotRun(p, o, opt)
		h, _ := r.Expected()
		switch {
		case neverFinishes(h):
			ids = append(ids, o.ID)
		case overrunsSpan(p, opt, h):
			over = append(over, o.ID)
			longest = math.Max(longest, h)
		}
	}
	var notes []i18n.Text
	if len(over) > 0 {
		notes = append(notes, i18n.Textf("spot not quoted on %s (%s): with its interruptions the run expects up to %s of wall time, more than the span of %s (%d h); a longer --days prices it",
			i18n.Plural(len(over), "%d offer", "%d offers"), strings.Join(over, ", "), hoursText(longest), i18n.Plural(p.SpanDays, "%d day", "%d days"), p.SpanDays*24))
	}
	if n := neverNote(p, ids); !n.IsZero() {
		notes = append(notes, n)
	}
	return notes
}

// neverNote says why the spot plans of ids are not quoted: the run would
// practically never finish on them.
func neverNote(p *Profile, ids []string) i18n.Text {
	if len(ids) == 0 {
		return i18n.Text{}
	}
	why := i18n.Textf(", each checkpoint interval being interrupted before it ends almost surely; checkpoint more often (gpurent plan gives the Young and Daly interval)")
	if p.Checkpoint == nil {
		// The usual cause: the run was priced as one piece because no
		// checkpoint settings were given, not because it checkpoints too
		// rarely.
		why = i18n.Textf(": with no checkpoint settings, each interruption restarts it from the beginning, and it is interrupted before it ends almost surely; a job that checkpoints is priced with --ckpt-every, --ckpt-write and --ckpt-restart")
	}
	return i18n.Textf("spot not quoted on %s (%s): at the interruption rate a run would practically never finish%s",
		i18n.Plural(len(ids), "%d offer", "%d offers"), strings.Join(ids, ", "), why)
}

// spotBill prices the expected hours of the run, work lost to
// interruptions and restarts included, at the spot price; each interruption
// is a further start.
func spotBill(p *Profile, o *catalog.Offer, opt Options) (Bill, bool) {
	if o.Spot == nil || !o.Spot.Hourly.IsKnown() {
		return Bill{}, false
	}
	hourly, _ := o.Spot.Hourly.Value()
	var u usage
	r, known := spotRun(p, o, opt)
	if !known {
		u.unknown = append(u.unknown, "spot.interruptions_per_day (pass --interruptions-per-day)")
	}
	hours, fails := r.Expected()
	if neverFinishes(hours) || overrunsSpan(p, opt, hours) {
		return Bill{}, false // said once for all offers by spotNote
	}
	b := newBill(p, o, Spot)
	stopped := math.Max(0, float64(p.SpanDays)*24-hours)
	s := sharedFees(p, o, &u, stopped, fails > 0)
	if span := float64(p.SpanDays) * 24; hours > span {
		s.ip *= hours / span // the instance is kept as long as the run lasts
	}
	items := [5]float64{
		hours * hourly,
		s.extraGB * (s.runGB*hours + s.stopGB*stopped),
		s.egress,
		s.boot * (float64(p.Starts) + fails),
		s.ip,
	}
	lh, _ := listHourly(o)
	b.finish(items, lh, p)
	b.Detail = i18n.Textf("expected %s incl. %s lost to %.1f interruptions", hoursText(hours), hoursText(hours-p.ComputeHours), fails)
	if !known {
		// "0 h lost to 0.0 interruptions" would state as a figure what no
		// source gave: the bill is the least it can be.
		b.Detail = i18n.Textf("%s if never interrupted (interruption rate unknown)", hoursText(hours))
	}
	b.Unknown, b.Warnings = u.names(), u.warnings()
	b.TotalIsLowerBound = lowerBound(b.Unknown)
	if n := frequencyNote(o, opt); !n.IsZero() {
		b.Warnings = append(b.Warnings, n)
		if floorRate(o, opt) {
			b.TotalIsLowerBound = true // an open bucket's lower end: more interruptions cost more
		}
	}
	if c := p.Checkpoint; c != nil && (c.Write == 0 || c.Restart == 0) {
		// Left out, they count as 0: the bill is then the cheapest it can
		// be, and says so.
		var w i18n.Text
		switch {
		case c.Write == 0 && c.Restart == 0:
			w = i18n.Textf("no --ckpt-write or --ckpt-restart: counted as 0, as if a checkpoint were safe the moment it is written and the work resumed the moment it was interrupted; this spot bill is the least it can be")
		case c.Write == 0:
			w = i18n.Textf("no --ckpt-write: counted as 0, as if a checkpoint were safe the moment it is written; this spot bill is the least it can be")
		default:
			w = i18n.Textf("no --ckpt-restart: counted as 0, as if the work resumed the moment it was interrupted; this spot bill is the least it can be")
		}
		b.Warnings = append(b.Warnings, w)
		b.TotalIsLowerBound = true
	}
	if p.Checkpoint == nil {
		b.Warnings = append(b.Warnings, i18n.Textf("no checkpoint settings: each interruption restarts the job from the beginning"))
	} else if n, ok := o.Spot.Notice.Value(); ok && p.Checkpoint.Write.Hours() > n.Hours() {
		b.Warnings = append(b.Warnings, i18n.Textf("a checkpoint write (%s) is longer than the %s interruption notice: only periodic checkpoints protect the work", p.Checkpoint.Write, o.Spot.Notice))
	}
	b.Warnings = append(b.Warnings, releaseWarning(p, o, hours)...)
	return b, true
}

// hoursText prints hours compactly: "300 h", "12.5 h", "0.25 h".
func hoursText(h float64) string {
	return fmt.Sprintf("%s h", trimFloat(h))
}

func trimFloat(v float64) string {
	s := fmt.Sprintf("%.2f", v)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	if s == "-0" {
		return "0"
	}
	return s
}
