// Package catalog holds GPU rental offers with their whole fee schedule, not
// just the hourly price: billing increments and minimums, storage while
// running and while stopped, egress, boot fees, IP addresses, subscriptions,
// spot prices and how long a stopped instance survives.
//
// A fee nobody could confirm is unknown, never zero: Fee's zero value is
// unknown, and billing reports every unknown it had to treat as zero.
// Every offer carries the source and date of its prices.
package catalog

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/units"
	"github.com/gpurent/gpurent/internal/yamlfile"
)

// HoursPerMonth is the month every per-month price is divided by: 30 days.
const HoursPerMonth = 720

// Fee is an amount of money, or unknown. The zero value is unknown, so a fee
// left out of a catalog is never silently free.
type Fee struct {
	v     float64
	known bool
}

// Known returns a known fee of v.
func Known(v float64) Fee { return Fee{v: v, known: true} }

// Value reports the amount and whether it is known.
func (f Fee) Value() (float64, bool) { return f.v, f.known }

// Or is the amount, or def when unknown.
func (f Fee) Or(def float64) float64 {
	if f.known {
		return f.v
	}
	return def
}

// IsKnown reports whether the fee is known.
func (f Fee) IsKnown() bool { return f.known }

func (f Fee) String() string {
	if !f.known {
		return "unknown"
	}
	return strconv.FormatFloat(f.v, 'f', -1, 64)
}

// MarshalJSON writes the amount, or the string "unknown": JSON readers
// must not take an unknown fee or size for 0.
func (f Fee) MarshalJSON() ([]byte, error) {
	if !f.known {
		return []byte(`"unknown"`), nil
	}
	return json.Marshal(f.v)
}

// MarshalYAML writes the amount, or unknown: what UnmarshalYAML reads.
func (f Fee) MarshalYAML() (any, error) {
	if !f.known {
		return "unknown", nil
	}
	return f.v, nil
}

// UnmarshalYAML accepts a number or the word unknown.
func (f *Fee) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return yamlfile.Invalid(n, "want a number or unknown")
	}
	if n.Value == "unknown" {
		*f = Fee{}
		return nil
	}
	if n.Tag != "!!int" && n.Tag != "!!float" {
		return yamlfile.Invalid(n, "want a number or unknown, got %q", n.Value)
	}
	var v float64
	if err := n.Decode(&v); err != nil {
		return yamlfile.Invalid(n, "want a number or unknown, got %q", n.Value)
	}
	*f = Known(v)
	return nil
}

// Duration is a length of time, never (no end: a stopped instance the
// platform never deletes), or unknown; the zero value is unknown.
type Duration struct {
	d     time.Duration
	known bool
}

// Never is the duration without end.
var Never = Duration{d: math.MaxInt64, known: true}

// KnownDuration returns a known duration.
func KnownDuration(d time.Duration) Duration { return Duration{d: d, known: true} }

// Value reports the duration and whether it is known; never is the
// longest time.Duration.
func (d Duration) Value() (time.Duration, bool) { return d.d, d.known }

// IsKnown reports whether the duration is known.
func (d Duration) IsKnown() bool { return d.known }

// IsNever reports whether the duration has no end.
func (d Duration) IsNever() bool { return d.known && d.d == math.MaxInt64 }

func (d Duration) String() string {
	switch {
	case !d.known:
		return "unknown"
	case d.IsNever():
		return "never"
	}
	return units.FormatDuration(d.d)
}

// MarshalYAML writes the duration as UnmarshalYAML reads it: 1s, 15d,
// never or unknown.
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// UnmarshalYAML accepts Go durations with days ("1s", "15d"), never or
// unknown.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return yamlfile.Invalid(n, "want a duration (1s, 1m, 15d), never or unknown")
	}
	switch n.Value {
	case "unknown":
		*d = Duration{}
		return nil
	case "never":
		*d = Never
		return nil
	}
	v, err := units.ParseDuration(n.Value)
	if err != nil {
		return yamlfile.Invalid(n, "%v", err)
	}
	*d = KnownDuration(v)
	return nil
}

// Catalog is a set of offers and the exchange rates to compare them.
type Catalog struct {
	Version int     `yaml:"version"`
	Rates   Rates   `yaml:"exchange_rates"`
	Offers  []Offer `yaml:"offers"`
	// Refreshed counts the offers read from catalog refresh's overlay
	// (LoadOverlay), for a note.
	Refreshed int `yaml:"-"`
}

// Rates are units of each currency per US dollar, taken from the catalog and
// never fetched from the network, so that a quote is reproducible.
type Rates struct {
	AsOf   string
	Source string
	PerUSD map[string]float64
	// DateOf is a currency's own as_of where it has one ({rate, as_of,
	// source}), or where a merge took it from another file: rates read on
	// different days are dated each by its own day.
	DateOf map[string]string
}

// Dated is the as_of of currency c's rate.
func (r Rates) Dated(c string) string {
	if d, ok := r.DateOf[c]; ok {
		return d
	}
	return r.AsOf
}

// RateDate is the newest date a rate's as_of states (PriceDate's rule),
// and false when it states none.
func RateDate(asOf string) (time.Time, bool) { return statedDate(asOf) }

// Bounds on an exchange rate, in units per US dollar: the weakest
// currencies trade at tens of thousands to the dollar, none at a
// ten-thousandth; beyond these a rate is a typo that turns every price
// into 0 or +Inf.
const (
	minRate = 1e-4
	maxRate = 1e7
)

// onlyKeys reports whether the mapping n has no key but those named:
// yaml's Node.Decode, unlike its decoder, cannot refuse unknown fields.
func onlyKeys(n *yaml.Node, names ...string) bool {
	for i := 0; i < len(n.Content); i += 2 {
		if !slices.Contains(names, n.Content[i].Value) {
			return false
		}
	}
	return true
}

// rateEntry is a currency's rate written with its own date and source.
type rateEntry struct {
	Rate   float64 `yaml:"rate"`
	AsOf   string  `yaml:"as_of"`
	Source string  `yaml:"source"`
}

// UnmarshalYAML reads {as_of: DATE, source: TEXT, USD: 1, CNY: 7.1, ...};
// a currency may instead be {rate: 7.1, as_of: DATE, source: TEXT}.
func (r *Rates) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return yamlfile.Invalid(n, "want a mapping of currency codes to units per USD")
	}
	*r = Rates{PerUSD: map[string]float64{}, DateOf: map[string]string{}}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch k.Value {
		case "as_of":
			r.AsOf = v.Value
		case "source":
			r.Source = v.Value
		default:
			if !IsCurrency(k.Value) {
				return yamlfile.Invalid(k, "unknown field %q: want as_of, source or a currency code like CNY", k.Value)
			}
			var f float64
			if v.Kind == yaml.MappingNode {
				var e rateEntry
				if err := v.Decode(&e); err != nil || !onlyKeys(v, "rate", "as_of", "source") {
					return yamlfile.Invalid(v, "rate for %s: want {rate: NUMBER, as_of: DATE, source: TEXT}", k.Value)
				}
				if strings.TrimSpace(e.AsOf) == "" {
					return yamlfile.Invalid(v, "rate for %s: needs its as_of", k.Value)
				}
				f, r.DateOf[k.Value] = e.Rate, e.AsOf
			} else if v.Kind != yaml.ScalarNode || (v.Tag != "!!int" && v.Tag != "!!float") || v.Decode(&f) != nil {
				return yamlfile.Invalid(v, "rate for %s: want a number, got %q", k.Value, v.Value)
			}
			if math.IsNaN(f) || math.IsInf(f, 0) || f <= 0 {
				return yamlfile.Invalid(v, "rate for %s: want a positive number, got %v", k.Value, f)
			}
			if f < minRate || f > maxRate {
				return yamlfile.Invalid(v, "rate for %s: want units per US dollar from %g to %g, got %v", k.Value, minRate, maxRate, f)
			}
			if k.Value == "USD" && f != 1 {
				return yamlfile.Invalid(v, "rate for USD: rates are units per US dollar, so USD is 1, got %v", v.Value)
			}
			if _, dup := r.PerUSD[k.Value]; dup {
				return yamlfile.Invalid(k, "rate for %s given twice", k.Value)
			}
			r.PerUSD[k.Value] = f
		}
	}
	return nil
}

// IsCurrency reports whether s looks like an ISO 4217 code.
func IsCurrency(s string) bool {
	if len(s) != 3 {
		return false
	}
	for _, c := range s {
		if c < 'A' || c > 'Z' {
			return false
		}
	}
	return true
}

// Convert converts amount from one currency to another. USD is always known.
func (r Rates) Convert(amount float64, from, to string) (float64, error) {
	if from == to {
		return amount, nil
	}
	rf, err := r.rate(from)
	if err != nil {
		return 0, err
	}
	rt, err := r.rate(to)
	if err != nil {
		return 0, err
	}
	return amount / rf * rt, nil
}

func (r Rates) rate(c string) (float64, error) {
	if v, ok := r.PerUSD[c]; ok {
		return v, nil
	}
	if c == "USD" {
		return 1, nil
	}
	return 0, i18n.Errorf("no exchange rate for %s in the catalog (add it under exchange_rates)", c)
}

// What joins an instance's GPUs, as Offer.Interconnect names it.
const (
	InterconnectNVLink = "nvlink"
	InterconnectPCIe   = "pcie"
)

// Offer is one rentable instance type at one provider, priced per instance.
type Offer struct {
	ID       string `yaml:"id"`
	Provider string `yaml:"provider"`
	Instance string `yaml:"instance,omitempty"` // the provider's name for it
	GPU      string `yaml:"gpu"`                // model name as in the GPU datasheet table
	GPUs     int    `yaml:"gpus"`               // per instance
	// GPUMemoryGB is each GPU's memory as the offer states it, in the
	// vendor's GB ("80GB"), or unknown: where the model's name leaves it
	// out ("H100", "GH200"), it tells which datasheet rows the offer may
	// be, so "--gpu 'H100 80GB'" finds an "H100" of 80 GB.
	GPUMemoryGB Fee    `yaml:"gpu_memory_gb"`
	Region      string `yaml:"region,omitempty"`
	Currency    string `yaml:"currency"`
	Source      string `yaml:"source"`
	AsOf        string `yaml:"as_of"`
	Confidence  string `yaml:"confidence,omitempty"` // official or secondary
	Notes       string `yaml:"notes,omitempty"`
	// Supersedes names older readings of this same offer (the price
	// before a change, an earlier page): the newest reading is the offer,
	// and quote leaves the others out unless asked for history.
	Supersedes []string `yaml:"supersedes,omitempty"`
	// FeeSources say where fees not in Source are stated ("ip_month 3.65:
	// URL (date)"), field by field.
	FeeSources []string `yaml:"fee_sources,omitempty"`
	// Interconnect is what joins the instance's GPUs as the provider
	// states it: nvlink, pcie, or empty where no source says. It is part
	// of the order bench --offer checks, so it is never guessed from the
	// model's name; InterconnectSource says where it is stated.
	Interconnect       string `yaml:"interconnect,omitempty"`
	InterconnectSource string `yaml:"interconnect_source,omitempty"`

	OnDemand            OnDemand       `yaml:"on_demand"`
	Subscriptions       []Subscription `yaml:"subscriptions,omitempty"`
	Spot                *Spot          `yaml:"spot,omitempty"`
	BootFee             Fee            `yaml:"boot_fee"` // per start
	Storage             Storage        `yaml:"storage"`
	EgressGB            Fee            `yaml:"egress_gb"` // per GB out to the internet
	EgressMonth         *EgressMonth   `yaml:"egress_month,omitempty"`
	IPMonth             Fee            `yaml:"ip_month"`
	ReleaseAfterStopped Duration       `yaml:"release_after_stopped"`
}

// OnDemand is pay-as-you-go pricing.
type OnDemand struct {
	Hourly    Fee      `yaml:"hourly"`    // per instance-hour
	Increment Duration `yaml:"increment"` // each run is rounded up to a multiple of this
	Minimum   Duration `yaml:"minimum"`   // least time billed per start
}

// Period lengths a subscription can have.
const (
	PeriodDay   = "day"
	PeriodWeek  = "week"
	PeriodMonth = "month"
)

// PeriodDays is the length of a subscription period in days (a month is
// 30), or 0 when the period is not one of day, week, month.
func PeriodDays(p string) int {
	switch p {
	case PeriodDay:
		return 1
	case PeriodWeek:
		return 7
	case PeriodMonth:
		return 30
	}
	return 0
}

// Subscription is a prepaid period (包日/包周/包月) per instance.
type Subscription struct {
	Period string  `yaml:"period" json:"period"`
	Price  float64 `yaml:"price" json:"price"`
}

// Spot is interruptible pricing.
type Spot struct {
	Hourly              Fee      `yaml:"hourly"`
	InterruptionsPerDay Fee      `yaml:"interruptions_per_day"`
	Notice              Duration `yaml:"notice"`
	// Frequency is a provider's published interruption frequency, where
	// one is published (AWS's Spot Instance Advisor), nil elsewhere.
	Frequency *Frequency `yaml:"interruption_frequency,omitempty"`
}

// Frequency is a published bucket of interruption frequency: the share
// of spot capacity of the instance type reclaimed in the trailing month,
// from Low to High (High unknown for an open bucket such as ">20%").
type Frequency struct {
	Low    float64 `yaml:"monthly_low" json:"monthly_low"`
	High   Fee     `yaml:"monthly_high" json:"monthly_high"`
	Source string  `yaml:"source" json:"source"`
	AsOf   string  `yaml:"as_of" json:"as_of"`
}

// PerDay is the interruptions a day the bucket stands for, judged at its
// upper end (or its lower end for an open bucket, and then a least rate):
// a share f of a month's running instances interrupted is a Poisson rate
// of −ln(1 − f) per 30 days. least says the rate is a lower bound.
func (f *Frequency) PerDay() (perDay float64, least bool) {
	share, ok := f.High.Value()
	if !ok {
		share, least = f.Low, true
	}
	return -math.Log1p(-share) / 30, least
}

// Included disk kinds: what becomes of the disk an instance comes with
// when it is stopped.
const (
	DiskEphemeral  = "ephemeral"  // wiped on stop (instance store, local SSD, a container disk)
	DiskPersistent = "persistent" // kept, and billed while stopped
)

// EgressMonth is how the price of data transfer out changes with the
// month's volume, where a provider bills it per account and calendar
// month: a free allowance first, egress_gb up to the first tier, then
// each tier's price for what lies above its threshold.
type EgressMonth struct {
	FreeGB float64      `yaml:"free_gb,omitempty"`
	Tiers  []EgressTier `yaml:"tiers,omitempty"`
}

// EgressTier is the price per GB of a month's egress above AboveGB.
type EgressTier struct {
	AboveGB float64 `yaml:"above_gb"`
	Price   float64 `yaml:"price"`
}

// MonthCost is what gb of egress in one month costs at first per GB
// (egress_gb) under the schedule m (nil: first for every GB).
func (m *EgressMonth) MonthCost(gb, first float64) float64 {
	if m == nil {
		return gb * first
	}
	billable := func(lo, hi float64) float64 { // GB in [lo, hi) above the free allowance
		lo, hi = math.Max(lo, m.FreeGB), math.Min(hi, gb)
		return math.Max(0, hi-lo)
	}
	price, from, cost := first, 0.0, 0.0
	for _, t := range m.Tiers {
		cost += billable(from, t.AboveGB) * price
		price, from = t.Price, t.AboveGB
	}
	return cost + billable(from, math.Inf(1))*price
}

// Storage is the disk fee schedule, per GB-month above what is included.
//
// IncludedDisk says whether the included disk survives a stop: ephemeral
// (AWS instance store, Google local SSD, a RunPod container disk) or
// persistent, "" where no source says. Data kept on an ephemeral disk is
// lost on stop, so a task with stopped time keeps its data on a volume,
// billed at running_gb_month and stopped_gb_month for all of it.
//
// SharedGBMonth is the rate of a network volume that several instances
// mount (a RunPod network volume), billed alike running or stopped;
// unknown where no source states one, and then the disk's rates stand in.
type Storage struct {
	IncludedGB     Fee    `yaml:"included_gb"`
	IncludedDisk   string `yaml:"included_disk,omitempty"`
	RunningGBMonth Fee    `yaml:"running_gb_month"`
	StoppedGBMonth Fee    `yaml:"stopped_gb_month"`
	SharedGBMonth  Fee    `yaml:"shared_gb_month"`
}

// Bounds on an offer, well past any real one, so that a typo is an error
// naming its field rather than +Inf in a bill.
const (
	maxAmount = 1e9                 // any price or fee, in the offer's currency
	maxGPUs   = 1024                // per instance: a rack of 72 is the most sold
	maxBilled = 31 * 24 * time.Hour // a billing increment or minimum
	// MaxOffers bounds a catalog file: the embedded one has 127.
	MaxOffers = 10000
)

// Validate reports every problem in c as paths into the YAML document.
// Offer currencies must have a rate in c or in also (the catalog c will be
// merged over), so a user file may price in CNY on the embedded rates.
func (c *Catalog) Validate(also Rates) []yamlfile.Problem {
	rates := Rates{PerUSD: map[string]float64{}}
	for _, r := range []Rates{also, c.Rates} {
		for k, v := range r.PerUSD {
			rates.PerUSD[k] = v
		}
	}
	var ps []yamlfile.Problem
	if c.Version != 1 {
		ps = append(ps, yamlfile.Problemf("version", "want version: 1, got %d", c.Version))
	}
	if len(c.Offers) == 0 {
		ps = append(ps, yamlfile.Problemf("offers", "no offers"))
	}
	if len(c.Offers) > MaxOffers {
		return append(ps, yamlfile.Problemf("offers", "want at most %d offers, got %d", MaxOffers, len(c.Offers)))
	}
	seen := map[string]int{}
	for i, o := range c.Offers {
		p := fmt.Sprintf("offers[%d]", i)
		if j, dup := seen[o.ID]; dup && o.ID != "" {
			ps = append(ps, yamlfile.Problemf(p+".id", "duplicate id %q (also offers[%d])", o.ID, j))
		}
		seen[o.ID] = i
		ps = append(ps, o.validate(p, rates)...)
	}
	return ps
}

func (o *Offer) validate(p string, rates Rates) []yamlfile.Problem {
	var ps []yamlfile.Problem
	bad := func(field, format string, args ...any) {
		ps = append(ps, yamlfile.Problemf(p+"."+field, format, args...))
	}
	// In the order the message lists them: the same file gives the same
	// errors, in the same order, every time.
	for _, f := range []struct{ field, v string }{{"id", o.ID}, {"provider", o.Provider}, {"gpu", o.GPU}, {"currency", o.Currency}, {"source", o.Source}, {"as_of", o.AsOf}} {
		if strings.TrimSpace(f.v) == "" {
			bad(f.field, "missing; every offer needs id, provider, gpu, currency, source and as_of")
		}
	}
	if o.GPUs < 1 || o.GPUs > maxGPUs {
		bad("gpus", "want 1 to %d GPUs per instance, got %d", maxGPUs, o.GPUs)
	}
	if v, ok := o.GPUMemoryGB.Value(); ok && (math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 || v > 1e4) {
		bad("gpu_memory_gb", "want a positive size in GB (at most 10000) or unknown, got %v", v)
	}
	if o.Currency != "" {
		if !IsCurrency(o.Currency) {
			bad("currency", "want a currency code like USD or CNY, got %q", o.Currency)
		} else if _, err := rates.rate(o.Currency); err != nil {
			bad("currency", "%v", err)
		}
	}
	if o.Confidence != "" && o.Confidence != "official" && o.Confidence != "secondary" {
		bad("confidence", "want official or secondary, got %q", o.Confidence)
	}
	fee := func(field string, f Fee) {
		switch v, ok := f.Value(); {
		case ok && (math.IsNaN(v) || math.IsInf(v, 0) || v < 0):
			bad(field, "want a non-negative amount or unknown, got %v", v)
		case ok && v > maxAmount:
			bad(field, "want at most %g, got %v", maxAmount, v)
		}
	}
	fee("on_demand.hourly", o.OnDemand.Hourly)
	fee("boot_fee", o.BootFee)
	fee("storage.included_gb", o.Storage.IncludedGB)
	fee("storage.running_gb_month", o.Storage.RunningGBMonth)
	fee("storage.stopped_gb_month", o.Storage.StoppedGBMonth)
	fee("storage.shared_gb_month", o.Storage.SharedGBMonth)
	switch o.Storage.IncludedDisk {
	case "", "unknown", DiskEphemeral, DiskPersistent:
	default:
		bad("storage.included_disk", "want ephemeral, persistent or unknown, got %q", o.Storage.IncludedDisk)
	}
	switch {
	case o.Interconnect != "" && o.Interconnect != InterconnectNVLink && o.Interconnect != InterconnectPCIe:
		bad("interconnect", "want nvlink or pcie (or leave it out where no source says), got %q", o.Interconnect)
	case o.Interconnect != "" && strings.TrimSpace(o.InterconnectSource) == "":
		bad("interconnect_source", "missing; an interconnect needs the page that states it")
	case o.Interconnect != "" && o.GPUs < 2:
		bad("interconnect", "a %d-GPU instance has no GPUs to join", o.GPUs)
	}
	for i, id := range o.Supersedes {
		if strings.TrimSpace(id) == "" || id == o.ID {
			bad(fmt.Sprintf("supersedes[%d]", i), "want the id of an older reading of this offer, got %q", id)
		}
	}
	fee("egress_gb", o.EgressGB)
	if m := o.EgressMonth; m != nil {
		if !o.EgressGB.IsKnown() {
			bad("egress_month", "a monthly schedule needs egress_gb, the first tier's price")
		}
		if math.IsNaN(m.FreeGB) || math.IsInf(m.FreeGB, 0) || m.FreeGB < 0 {
			bad("egress_month.free_gb", "want a non-negative size, got %v", m.FreeGB)
		}
		prev := 0.0
		for i, t := range m.Tiers {
			tp := fmt.Sprintf("egress_month.tiers[%d]", i)
			if math.IsNaN(t.AboveGB) || math.IsInf(t.AboveGB, 0) || t.AboveGB <= prev {
				bad(tp+".above_gb", "want a size above the previous tier's (%v), got %v", prev, t.AboveGB)
			}
			if math.IsNaN(t.Price) || math.IsInf(t.Price, 0) || t.Price < 0 {
				bad(tp+".price", "want a non-negative price, got %v", t.Price)
			}
			prev = math.Max(prev, t.AboveGB)
		}
	}
	fee("ip_month", o.IPMonth)
	if d, ok := o.OnDemand.Increment.Value(); ok && d <= 0 {
		bad("on_demand.increment", "want a positive increment such as 1s, got %v", o.OnDemand.Increment)
	}
	for _, d := range []struct {
		field string
		v     Duration
	}{{"on_demand.increment", o.OnDemand.Increment}, {"on_demand.minimum", o.OnDemand.Minimum}} {
		if v, ok := d.v.Value(); ok && (d.v.IsNever() || v > maxBilled) {
			bad(d.field, "want at most %s (a month), got %v", units.FormatDuration(maxBilled), d.v)
		}
	}
	if v, ok := o.OnDemand.Hourly.Value(); ok && v == 0 {
		bad("on_demand.hourly", "zero price: write unknown if the price is not known")
	}
	periods := map[string]bool{}
	for i, s := range o.Subscriptions {
		sp := fmt.Sprintf("subscriptions[%d]", i)
		if PeriodDays(s.Period) == 0 {
			bad(sp+".period", "unknown period %q: want day, week or month", s.Period)
		} else if periods[s.Period] {
			bad(sp+".period", "period %q given twice", s.Period)
		}
		periods[s.Period] = true
		if math.IsNaN(s.Price) || math.IsInf(s.Price, 0) || s.Price <= 0 || s.Price > maxAmount {
			bad(sp+".price", "want a positive price of at most %g, got %v", maxAmount, s.Price)
		}
	}
	if o.Spot != nil {
		fee("spot.hourly", o.Spot.Hourly)
		fee("spot.interruptions_per_day", o.Spot.InterruptionsPerDay)
		if v, ok := o.Spot.Hourly.Value(); ok && v == 0 {
			bad("spot.hourly", "zero price: write unknown if the price is not known")
		}
		if f := o.Spot.Frequency; f != nil {
			hi, hiOK := f.High.Value()
			switch {
			case math.IsNaN(f.Low) || f.Low < 0 || f.Low >= 1:
				bad("spot.interruption_frequency.monthly_low", "want a share from 0 to below 1, got %v", f.Low)
			case hiOK && (math.IsNaN(hi) || hi < f.Low || hi >= 1):
				bad("spot.interruption_frequency.monthly_high", "want a share from monthly_low to below 1, or unknown, got %v", hi)
			case strings.TrimSpace(f.Source) == "" || strings.TrimSpace(f.AsOf) == "":
				bad("spot.interruption_frequency", "needs its source and as_of")
			}
		}
	}
	if !o.OnDemand.Hourly.IsKnown() && len(o.Subscriptions) == 0 && (o.Spot == nil || !o.Spot.Hourly.IsKnown()) {
		bad("on_demand.hourly", "offer has no price: give on_demand.hourly, a subscription or spot.hourly")
	}
	return ps
}

// CheckReadings checks what supersedes says across a whole (merged)
// catalog: each older reading named is an offer of the same provider and
// GPU, not dated after the reading that supersedes it, and no offer is
// superseded in a cycle (which would leave out every reading of it).
func CheckReadings(offers []Offer) error {
	byID := map[string]*Offer{}
	for i := range offers {
		byID[offers[i].ID] = &offers[i]
	}
	var errs []string
	next := map[string]string{}
	for i := range offers {
		o := &offers[i]
		for _, id := range o.Supersedes {
			old, ok := byID[id]
			switch {
			case !ok:
				errs = append(errs, fmt.Sprintf("offer %s supersedes %q, which no offer is", o.ID, id))
				continue
			case old.Provider != o.Provider || old.GPU != o.GPU || old.GPUs != o.GPUs:
				errs = append(errs, fmt.Sprintf("offer %s (%s, %d× %s) supersedes %s (%s, %d× %s): a reading of another offer", o.ID, o.Provider, o.GPUs, o.GPU, id, old.Provider, old.GPUs, old.GPU))
			}
			if nd, ok := o.PriceDate(); ok {
				if od, ok := old.PriceDate(); ok && od.After(nd) {
					errs = append(errs, fmt.Sprintf("offer %s (%s) supersedes %s, a newer reading (%s)", o.ID, nd.Format(time.DateOnly), id, od.Format(time.DateOnly)))
				}
			}
			next[id] = o.ID
		}
	}
	for start := range next {
		seen := map[string]bool{start: true}
		for at := next[start]; at != ""; at = next[at] {
			if seen[at] {
				errs = append(errs, fmt.Sprintf("offer %s is superseded in a cycle: one reading must be the newest", start))
				break
			}
			seen[at] = true
		}
	}
	if len(errs) == 0 {
		return nil
	}
	slices.Sort(errs)
	errs = slices.Compact(errs)
	return i18n.Errorf("supersedes: %s", strings.Join(errs, "; "))
}

// Parse decodes and validates one catalog file on its own. Errors name
// file, line and field.
func Parse(file string, data []byte) (*Catalog, error) { return ParseOver(file, data, Rates{}) }

// ParseOver is Parse for a catalog to be merged over one with rates base.
func ParseOver(file string, data []byte, base Rates) (*Catalog, error) {
	var c Catalog
	ix, err := yamlfile.Decode(file, data, &c)
	if err != nil {
		return nil, err
	}
	if err := ix.Place(file, c.Validate(base)); err != nil {
		return nil, err
	}
	return &c, nil
}

// Merge lays over on top of base: an offer with an equal id replaces the
// base one in place, new offers are appended, and over's exchange rates
// replace base's currency by currency. Neither input is modified.
func Merge(base, over *Catalog) *Catalog {
	out := &Catalog{Version: base.Version, Rates: Rates{AsOf: base.Rates.AsOf, Source: base.Rates.Source, PerUSD: map[string]float64{}, DateOf: map[string]string{}}}
	for c, v := range base.Rates.PerUSD {
		out.Rates.PerUSD[c], out.Rates.DateOf[c] = v, base.Rates.Dated(c)
	}
	if len(over.Rates.PerUSD) > 0 {
		// Each rate keeps the date of the file it comes from: the base's
		// that over leaves alone are not as new as over's.
		for c, v := range over.Rates.PerUSD {
			out.Rates.PerUSD[c], out.Rates.DateOf[c] = v, over.Rates.Dated(c)
		}
		out.Rates.AsOf, out.Rates.Source = over.Rates.AsOf, over.Rates.Source
	}
	out.Offers = append(out.Offers, base.Offers...)
	at := map[string]int{}
	for i, o := range out.Offers {
		at[o.ID] = i
	}
	for _, o := range over.Offers {
		if i, ok := at[o.ID]; ok {
			out.Offers[i] = o
			continue
		}
		at[o.ID] = len(out.Offers)
		out.Offers = append(out.Offers, o)
	}
	return out
}
