// Package refresh reads today's prices from the providers' public
// price sources (AWS's price list and Spot Instance Advisor, Azure's
// Retail Prices API, Vast.ai's offer search, RunPod's GPU catalog,
// Lambda's instance types) and makes new readings of the catalog's offers
// from them:
// gpurent catalog refresh writes those to an overlay that quote and plan
// read over the embedded catalog. A source that fails leaves the others;
// a price that cannot be right (zero, not a number, more than 5x off the
// reading it replaces) is rejected with the reason, never written.
package refresh

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/gpurent/gpurent/internal/catalog"
	"github.com/gpurent/gpurent/internal/endpoint"
	"github.com/gpurent/gpurent/internal/i18n"
)

// Sources are the price sources refresh reads, by the name --endpoint
// takes, with their default base URLs.
var defaults = map[string]string{
	"aws":      "https://pricing.us-east-1.amazonaws.com",
	"aws-spot": "https://spot-bid-advisor.s3.amazonaws.com",
	"azure":    "https://prices.azure.com",
	"vast":     "https://console.vast.ai",
	"runpod":   "https://api.runpod.io",
	"lambda":   "https://cloud.lambda.ai",
}

// Sources lists the sources' names, sorted.
func Sources() []string {
	names := make([]string, 0, len(defaults))
	for n := range defaults {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// ParseEndpoints reads --endpoint NAME=URL values.
func ParseEndpoints(vals []string) (map[string]string, error) {
	return endpoint.Parse(vals, Sources())
}

// Options say where to read and when it is.
type Options struct {
	// Endpoints override the sources' base URLs by name.
	Endpoints map[string]string
	// Only, when set, names the sources to read (Sources names).
	Only []string
	// Client sends the requests; nil: one with a 10 min timeout (AWS's
	// price list for a region is hundreds of MB).
	Client *http.Client
	// Now stamps the readings.
	Now time.Time
	// Getenv reads the keys of the sources that need one (VAST_API_KEY,
	// RUNPOD_API_KEY, LAMBDA_API_KEY);
	// nil: none is read.
	Getenv func(string) string
}

func (o *Options) base(name string) string {
	if u := o.Endpoints[name]; u != "" {
		return u
	}
	return defaults[name]
}

func (o *Options) client() *http.Client {
	if o.Client != nil {
		return o.Client
	}
	return &http.Client{Timeout: 10 * time.Minute}
}

// Rejected is a price read but not written, and why.
type Rejected struct {
	Offer  string `json:"offer"`
	Reason string `json:"reason"`
}

// Result is what a refresh read.
type Result struct {
	// Offers are the new readings: an offer of AWS or Azure with its id,
	// a Vast.ai median as a new reading that supersedes the last.
	Offers   []catalog.Offer `json:"-"`
	Updated  []Change        `json:"updated"`
	Rejected []Rejected      `json:"rejected"`
	// Failed are the sources that could not be read, with why; the
	// others' prices are kept. Tried counts the sources asked.
	Failed map[string]string `json:"failed"`
	Tried  int               `json:"tried"`
}

// Change is one price before and after.
type Change struct {
	Offer string `json:"offer"`
	// Plan is what changed: on_demand or spot, spot_interruption_low, or
	// a fee (storage_gb_month, egress_gb).
	Plan string `json:"plan"`
	// Before is -1 where the catalog did not know it.
	Before float64 `json:"before"`
	After  float64 `json:"after"`
	Source string  `json:"source"`
}

// price is one price a source read for an offer.
type price struct {
	offer          string
	onDemand, spot float64
	hasOD, hasSpot bool   // read (a 0 read is rejected, not skipped)
	source         string // the URL it was read from
	id             string // the new reading's id, when not the offer's own
	supersedes     string
	// missing says why the source had no price for the offer.
	missing string
	// freq is a spot interruption bucket read (the Spot Advisor's),
	// which has its own date and leaves the offer's prices and as_of.
	freq *catalog.Frequency
	// fees are fees read with the prices, written into the same reading.
	fees []fee
}

// fee is one fee a source read: storage_gb_month (running and stopped
// alike) or egress_gb. Unlike a price, 0 is a value (a host that charges
// nothing for bandwidth).
type fee struct {
	name  string
	value float64
}

// source reads the prices of the offers it knows from one provider.
type source struct {
	name    string
	applies func(o *catalog.Offer) bool
	read    func(ctx context.Context, o *Options, offers []catalog.Offer) ([]price, error)
}

var sources = []source{
	{"aws", func(o *catalog.Offer) bool { return o.Provider == "AWS" && o.Instance != "" && o.Region != "" }, readAWS},
	{"aws-spot", spotAdvisorApplies, readSpotAdvisor},
	{"azure", func(o *catalog.Offer) bool { return o.Provider == "Azure" && o.Instance != "" && o.Region != "" }, readAzure},
	{"vast", func(o *catalog.Offer) bool { return o.Provider == "Vast.ai" && vastName(o) != "" }, readVast},
	{"runpod", runpodApplies, readRunPod},
	{"lambda", lambdaApplies, readLambda},
}

// Refresh reads every source for the current readings of offers.
func Refresh(ctx context.Context, offers []catalog.Offer, o Options) Result {
	current, _ := catalog.Current(offers)
	byID := map[string]*catalog.Offer{}
	for i := range current {
		byID[current[i].ID] = &current[i]
	}
	r := Result{Failed: map[string]string{}, Updated: []Change{}, Rejected: []Rejected{}}
	for _, s := range sources {
		if len(o.Only) > 0 && !slices.Contains(o.Only, s.name) {
			continue
		}
		var mine []catalog.Offer
		for i := range current {
			if s.applies(&current[i]) {
				mine = append(mine, current[i])
			}
		}
		if len(mine) == 0 {
			continue
		}
		r.Tried++
		prices, err := s.read(ctx, &o, mine)
		if err != nil {
			r.Failed[s.name] = err.Error()
		}
		for _, p := range prices {
			r.apply(byID[p.offer], p, o.Now)
		}
	}
	return r
}

// maxChange is how far a price may move from the reading it replaces:
// beyond it, a unit or parsing mistake is likelier than the market
// (SkyPilot's catalogs have carried both).
const maxChange = 5.0

// check says why a price read cannot be written, or "".
func check(read, before float64, known bool) string {
	switch {
	case math.IsNaN(read) || math.IsInf(read, 0):
		return "not a number"
	case read <= 0:
		return fmt.Sprintf("a price of %v", read)
	case known && before > 0 && (read > before*maxChange || read < before/maxChange):
		return fmt.Sprintf("%v is more than %vx off the catalog's %v", read, maxChange, before)
	}
	return ""
}

// apply makes the new reading of base from p, or records why not.
func (r *Result) apply(base *catalog.Offer, p price, now time.Time) {
	if base == nil {
		return
	}
	if p.missing != "" {
		r.Rejected = append(r.Rejected, Rejected{base.ID, p.missing})
		return
	}
	if p.freq != nil {
		r.applyFrequency(base, p)
		return
	}
	rejectedBefore, updatedBefore := len(r.Rejected), len(r.Updated)
	o := *base
	changed := false
	before, known := base.OnDemand.Hourly.Value()
	if p.hasOD {
		if why := check(p.onDemand, before, known); why != "" {
			r.Rejected = append(r.Rejected, Rejected{base.ID, "on_demand: " + why})
		} else {
			o.OnDemand.Hourly, changed = catalog.Known(p.onDemand), true
			r.Updated = append(r.Updated, Change{base.ID, "on_demand", before, p.onDemand, p.source})
		}
	}
	if p.hasSpot && base.Spot != nil {
		before, known := base.Spot.Hourly.Value()
		if why := check(p.spot, before, known); why != "" {
			r.Rejected = append(r.Rejected, Rejected{base.ID, "spot: " + why})
		} else {
			s := *base.Spot
			s.Hourly, o.Spot, changed = catalog.Known(p.spot), &s, true
			r.Updated = append(r.Updated, Change{base.ID, "spot", before, p.spot, p.source})
		}
	}
	if !changed {
		return
	}
	for _, f := range p.fees {
		r.applyFee(&o, base, f, p.source)
	}
	fetched := now.UTC().Format(time.RFC3339)
	updated := len(r.Updated) - updatedBefore
	if all := p.hasOD && (base.Spot == nil || p.hasSpot) && len(r.Rejected) == rejectedBefore; all {
		o.Source = p.source + " (fetched " + fetched + " by gpurent catalog refresh)"
		o.AsOf, o.Confidence = now.UTC().Format("2006-01-02"), "official"
	} else {
		// A price not read keeps its date: the offer's as_of stays the
		// oldest of its prices, so their age is never understated.
		var plans []string
		for _, c := range r.Updated[len(r.Updated)-updated:] {
			plans = append(plans, c.Plan)
		}
		o.Notes = strings.TrimSpace(o.Notes + " " + strings.Join(plans, " and ") + " refreshed " + fetched + " from " + p.source + "; the rest as of " + base.AsOf + ".")
	}
	if p.id != "" && p.id != base.ID {
		o.ID, o.Supersedes = p.id, []string{p.supersedes}
		for i := range r.Updated {
			if r.Updated[i].Offer == base.ID {
				r.Updated[i].Offer = p.id
			}
		}
	}
	r.Offers = append(r.Offers, o)
}

// applyFee writes f into o, the new reading of base, or records why not.
func (r *Result) applyFee(o *catalog.Offer, base *catalog.Offer, f fee, source string) {
	if math.IsNaN(f.value) || math.IsInf(f.value, 0) || f.value < 0 {
		r.Rejected = append(r.Rejected, Rejected{base.ID, fmt.Sprintf("%s: %v", f.name, f.value)})
		return
	}
	var at *catalog.Fee
	switch f.name {
	case "storage_gb_month":
		at = &o.Storage.RunningGBMonth
		o.Storage.StoppedGBMonth = catalog.Known(f.value)
	case "egress_gb":
		at = &o.EgressGB
	default:
		return
	}
	before, known := at.Value()
	if !known {
		before = -1
	}
	*at = catalog.Known(f.value)
	r.Updated = append(r.Updated, Change{base.ID, f.name, before, f.value, source})
}

// applyFrequency sets base's spot interruption bucket, in the new reading
// this refresh already made of it (its prices) or a copy: the bucket has
// its own as_of, so the offer's prices keep theirs.
func (r *Result) applyFrequency(base *catalog.Offer, p price) {
	if base.Spot == nil {
		return
	}
	i := slices.IndexFunc(r.Offers, func(o catalog.Offer) bool { return o.ID == base.ID })
	if i < 0 {
		r.Offers = append(r.Offers, *base)
		i = len(r.Offers) - 1
	}
	o := &r.Offers[i]
	s := *o.Spot
	before := -1.0
	if s.Frequency != nil {
		before = s.Frequency.Low
	}
	s.Frequency, o.Spot = p.freq, &s
	r.Updated = append(r.Updated, Change{base.ID, "spot_interruption_low", before, p.freq.Low, p.source})
}

// dated is an id's date suffix, which a new reading replaces.
var dated = regexp.MustCompile(`-\d{4}-\d{2}-\d{2}$`)

// readingID is the id of a new reading of base made on now.
func readingID(base string, now time.Time) string {
	return dated.ReplaceAllString(base, "") + "-" + now.UTC().Format("2006-01-02")
}

// get fetches u and hands its body to read, which must not hold it whole.
func get(ctx context.Context, o *Options, u string, read func(io.Reader) error) error {
	return fetch(ctx, o, http.MethodGet, u, nil, nil, read)
}

// fetch sends one request; the header's values (a key) appear in no error.
func fetch(ctx context.Context, o *Options, method, u string, body []byte, h map[string]string, read func(io.Reader) error) error {
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	for k, v := range h {
		req.Header.Set(k, v)
	}
	resp, err := o.client().Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
		return i18n.Errorf("%s: HTTP %d %s", u, resp.StatusCode, strings.Join(strings.Fields(string(b)), " "))
	}
	if err := read(resp.Body); err != nil {
		return i18n.Errorf("%s: %w", u, err)
	}
	return nil
}
