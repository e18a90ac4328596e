package billing

import (
	"hash/fnv"
	"math"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/gpurent/gpurent/internal/catalog"
	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/report"
)

// BreakEven is how many on-demand hours a subscription period's price buys:
// above it, subscribing is cheaper.
type BreakEven struct {
	Period      string  `json:"period"`
	Hours       float64 `json:"hours"`
	HoursPerDay float64 `json:"hours_per_day"`
}

// CheckpointAdvice is the optimal interval and what the profile's costs.
type CheckpointAdvice struct {
	YoungMinutes float64 `json:"young_minutes"`
	DalyMinutes  float64 `json:"daly_minutes"`
	// LostFraction is the expected share of paid spot hours lost to
	// checkpoint writes, redone work and restarts at the profile's interval.
	LostFraction float64 `json:"lost_fraction"`
}

// SpotRisk is the Monte Carlo spread of the spot plan, in the plan's currency.
type SpotRisk struct {
	P50Cost  float64 `json:"p50_cost"`
	P90Cost  float64 `json:"p90_cost"`
	P50Hours float64 `json:"p50_hours"`
	P90Hours float64 `json:"p90_hours"`
	// DeadlineProbability is the chance to finish within the deadline; nil
	// without one.
	DeadlineProbability *float64 `json:"deadline_probability,omitempty"`
	// SpanProbability is, without a deadline, the chance to finish within
	// the span the user gave (--days); nil without one.
	SpanProbability *float64 `json:"span_probability,omitempty"`
	Trials          int      `json:"trials"`
}

// OfferPlan is the billing-mode advice for one offer.
type OfferPlan struct {
	Offer    string `json:"offer"`
	Provider string `json:"provider"`
	GPU      string `json:"gpu"`
	// GPUs, GPUMemoryGB and Instances are as in Bill: per instance, each
	// GPU's memory as the offer states it, and the instances the task rents.
	GPUs        int         `json:"gpus"`
	GPUMemoryGB catalog.Fee `json:"gpu_memory_gb"`
	Instances   int         `json:"instances"`
	// Hours are the compute hours planned: the task's, or with a reference
	// GPU (Options.Work), what this offer's GPU needs for the same work,
	// rated as the datasheet row RatedAs.
	Hours          float64            `json:"hours"`
	RatedAs        string             `json:"rated_as,omitempty"`
	BreakEven      []BreakEven        `json:"break_even"`
	Recommendation string             `json:"recommendation"`
	Reason         i18n.Text          `json:"reason"`
	Totals         map[string]float64 `json:"totals"` // expected total per plan
	// Bills are quote's bills of this offer, one per plan of Totals, in
	// the order on demand, subscription, spot: a script that follows the
	// advice sees what each total is made of without running quote again.
	Bills      []Bill            `json:"bills"`
	Checkpoint *CheckpointAdvice `json:"checkpoint"`
	Spot       *SpotRisk         `json:"spot"`
	Notes      []i18n.Text       `json:"notes,omitempty"`
	// Source, AsOf, PriceDate and PriceAgeDays are as in Bill.
	Source       string `json:"source"`
	AsOf         string `json:"as_of"`
	PriceDate    string `json:"price_date,omitempty"`
	PriceAgeDays *int   `json:"price_age_days,omitempty"`
}

// Plan is the advice for every offer of the profile's GPU.
type Plan struct {
	Currency string `json:"currency"`
	// Reference is the GPU the task's hours are on (Options.Work), empty
	// when every offer is planned for the same hours.
	Reference string      `json:"reference,omitempty"`
	Offers    []OfferPlan `json:"offers"`
	Notes     []i18n.Text `json:"notes,omitempty"` // what holds for all offers
}

// PlanOptions adjust the spot simulation.
type PlanOptions struct {
	Options
	Trials        int     // Monte Carlo trials per offer
	Seed          uint64  // the same seed gives the same figures
	DeadlineHours float64 // 0: no deadline
}

// Parallel runs f(0..n-1) over the machine's cores and returns when all
// are done; MakePlan takes it to simulate offers side by side.
func Parallel(n int, f func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	var wg sync.WaitGroup
	next := make(chan int)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				f(i)
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// offerSeed is the simulation seed of one offer: --seed mixed with the
// offer's id, so that an offer's figures depend on neither the order of
// the offers nor which others --provider or --gpu kept.
func offerSeed(seed uint64, id string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(id))
	return seed ^ h.Sum64()
}

// MakePlan advises on every offer. Offers are simulated independently with
// seeds derived from opt.Seed and their ids, so the result does not depend
// on the order work is scheduled in; run is how the caller spreads the offers over
// goroutines (call each function once), or nil to run them in turn.
func MakePlan(p *Profile, offers []catalog.Offer, rates catalog.Rates, opt PlanOptions, run func(n int, f func(i int))) (*Plan, error) {
	cur := opt.Currency
	if cur == "" {
		cur = "USD"
	}
	plan := &Plan{Currency: cur, Offers: make([]OfferPlan, len(offers))}
	plan.Notes = offerNotes(p, offers, opt.Options)
	factors := make([]float64, len(offers))
	for i := range offers {
		f, err := rates.Convert(1, offers[i].Currency, cur)
		if err != nil {
			return nil, i18n.Errorf("offer %s: %w", offers[i].ID, err)
		}
		factors[i] = f
	}
	if run == nil {
		run = func(n int, f func(int)) {
			for i := range n {
				f(i)
			}
		}
	}
	// With a reference GPU each offer is planned for the hours its own
	// GPU needs for the work; one the datasheet cannot rate is left out,
	// and said so, rather than planned for hours that mean nothing on it.
	profiles := make([]*Profile, len(offers))
	rated := make([]string, len(offers))
	var unrated []string
	for i := range offers {
		po, r, ok := forWork(p, &offers[i], opt.Work)
		if !ok {
			unrated = append(unrated, offers[i].GPU)
		}
		profiles[i], rated[i] = po, r
	}
	run(len(offers), func(i int) {
		if profiles[i] == nil {
			return
		}
		op := planOffer(profiles[i], &offers[i], factors[i], rates, opt, offerSeed(opt.Seed, offers[i].ID))
		op.Hours, op.RatedAs = profiles[i].ComputeHours, rated[i]
		plan.Offers[i] = op
	})
	plan.Offers = slices.DeleteFunc(plan.Offers, func(o OfferPlan) bool { return o.Offer == "" })
	plan.Reference, plan.Notes = workNotes(offers, opt.Work, unrated, plan.Notes, func(w *Work) i18n.Text { return w.Note(p.ComputeHours) })
	if slices.ContainsFunc(plan.Offers, func(o OfferPlan) bool {
		return slices.ContainsFunc(o.Bills, func(b Bill) bool { return b.Estimate != nil })
	}) {
		plan.Notes = append(plan.Notes, i18n.Textf("≈ marks estimates: a fee no source states for an offer is taken at the median of what the catalog's other offers state for it, and the advice is ranked by that (gpurent quote --wide shows each fee's range; -o json's totals count it as 0)"))
	}
	// Cheapest recommendation first, by its estimate where fees are
	// unknown (as quote ranks: unknown is not zero); offers that could
	// not be priced last.
	cost := func(o OfferPlan) float64 {
		if o.Recommendation == Spot && o.Spot != nil {
			return o.Spot.P90Cost
		}
		for i := range o.Bills {
			if o.Bills[i].Plan == o.Recommendation {
				return o.Bills[i].rank()
			}
		}
		return math.Inf(1)
	}
	sort.SliceStable(plan.Offers, func(i, j int) bool { return cost(plan.Offers[i]) < cost(plan.Offers[j]) })
	return plan, nil
}

func planOffer(p *Profile, o *catalog.Offer, factor float64, rates catalog.Rates, opt PlanOptions, seed uint64) OfferPlan {
	op := OfferPlan{Offer: o.ID, Provider: o.Provider, GPU: o.GPU, GPUs: o.GPUs, GPUMemoryGB: o.GPUMemoryGB, Instances: instances(p, o),
		BreakEven: []BreakEven{}, Totals: map[string]float64{}, Bills: []Bill{}, Source: o.Source, AsOf: o.AsOf}
	var stale i18n.Text
	if op.PriceDate, op.PriceAgeDays, stale = priceAge(o, opt.Today); !stale.IsZero() {
		op.Notes = append(op.Notes, stale)
	}
	if by := opt.SupersededBy[o.ID]; by != "" && by != o.ID {
		op.Notes = append(op.Notes, i18n.Textf("history: an older reading of this offer; %s is its price now", by))
	}
	hourly, odOK := o.OnDemand.Hourly.Value()
	if odOK {
		for _, s := range o.Subscriptions {
			h := s.Price / hourly
			op.BreakEven = append(op.BreakEven, BreakEven{Period: s.Period, Hours: h, HoursPerDay: h / float64(catalog.PeriodDays(s.Period))})
		}
	}
	bills := billsFor(p, o, opt.Options)
	byPlan := map[string]Bill{}
	for _, b := range bills {
		estimate(&b, p, o, opt.Options, rates)
		b.date(o, opt.Today)
		b.history(o, opt.Options)
		b.scale(factor)
		byPlan[b.Plan] = b
		op.Totals[b.Plan] = b.Total
		op.Bills = append(op.Bills, b)
	}
	r, rateKnown := spotRun(p, o, opt.Options)

	// Checkpoint interval: for offers sold as spot, with a known
	// interruption rate and checkpoint settings.
	_, hasSpot := byPlan[Spot]
	if c := p.Checkpoint; hasSpot && c != nil && rateKnown && r.Rate > 0 && c.Write == 0 {
		// Young's and Daly's interval grows with the write time: at 0 it
		// is 0, checkpointing without pause, which is no advice.
		op.Notes = append(op.Notes, i18n.Textf("no checkpoint advice: it needs the time to write one checkpoint (--ckpt-write)"))
	} else if c := p.Checkpoint; hasSpot && c != nil && rateKnown && r.Rate > 0 {
		iv := OptimalInterval(c.Write.Hours(), 1/r.Rate)
		op.Checkpoint = &CheckpointAdvice{YoungMinutes: iv.Young * 60, DalyMinutes: iv.Daly * 60, LostFraction: r.LostFraction()}
	} else if hasSpot && rateKnown && r.Rate == 0 {
		op.Notes = append(op.Notes, i18n.Textf("no checkpoint advice: at 0 interruptions a day the Young and Daly intervals are unbounded; checkpoints then guard against crashes only"))
	} else if hasSpot && rateKnown {
		op.Notes = append(op.Notes, i18n.Textf("no checkpoint advice: it needs checkpoint settings (--ckpt-every, --ckpt-write)"))
	} else if hasSpot {
		op.Notes = append(op.Notes, i18n.Textf("no checkpoint advice: it needs checkpoint settings and a known interruption rate (--interruptions-per-day)"))
	}

	// Spot risk by Monte Carlo, priced like the spot bill. A run must end
	// by the deadline, and within a span the user gave: --deadline lies
	// within --days, so the deadline is the limit where there is one.
	limit := opt.DeadlineHours
	if limit == 0 && opt.SpanGiven {
		limit = float64(p.SpanDays) * 24
	}
	if sb, ok := byPlan[Spot]; ok && rateKnown && opt.Trials > 0 {
		spotHourly, _ := o.Spot.Hourly.Value()
		n := float64(sb.Instances)
		var boot float64
		if v, ok := o.BootFee.Value(); ok {
			boot = v * n * factor
		}
		// Storage depends on hours only through running vs stopped rates;
		// the simulation prices compute, boot fees per restart, and keeps the
		// expected bill's other items fixed.
		fixed := sb.Total - sb.Items[0].Amount - sb.Items[3].Amount + boot*float64(p.Starts)
		trials, note := simTrials(r, opt.Trials)
		if !note.IsZero() {
			op.Notes = append(op.Notes, note)
		}
		if trials > 0 {
			risk := MonteCarlo(r, Cost{Fixed: fixed, PerHour: spotHourly * n * factor, PerInterruption: boot}, trials, seed, limit)
			op.Spot = &SpotRisk{P50Cost: risk.P50Cost, P90Cost: risk.P90Cost, P50Hours: risk.P50Hours, P90Hours: risk.P90Hours, Trials: trials}
			pr := risk.DeadlineProb
			switch {
			case opt.DeadlineHours > 0:
				op.Spot.DeadlineProbability = &pr
			case limit > 0:
				op.Spot.SpanProbability = &pr
			}
		}
	}
	// Why a spot price this offer has is not judged, for the reason.
	var spotWhy i18n.Text
	switch {
	case !p.Interruptible || o.Spot == nil || !o.Spot.Hourly.IsKnown():
	case !hasSpot:
		spotWhy = i18n.Textf("spot is not quoted: at this interruption rate the run would practically never finish (see the note)")
		if h, _ := r.Expected(); !neverFinishes(h) {
			spotWhy = i18n.Textf("spot is not quoted: with its interruptions the run expects %s of wall time, more than the span (see the note)", hoursText(h))
		}
	case !rateKnown:
		spotWhy = i18n.Textf("spot is not judged without an interruption rate (--interruptions-per-day)")
	case floorRate(o, opt.Options):
		// The open bucket's lower end: every figure of the run is the
		// best it can be, and buying on it would be buying on luck.
		spotWhy = i18n.Textf("spot is not judged on an interruption rate known only as a floor (AWS's \">20%%\" bucket); give yours with --interruptions-per-day")
	default:
		spotWhy = missesDeadline(op.Spot, r, limit, opt.DeadlineHours > 0)
	}
	op.Recommendation, op.Reason = recommend(p, op, byPlan, rateKnown, spotWhy)
	if _, priced := byPlan[Spot]; priced && !spotWhy.IsZero() && op.Recommendation != "" && !strings.Contains(op.Reason.String(), spotWhy.String()) {
		op.Reason = i18n.Textf("%s; not spot: %s", op.Reason, spotWhy)
	}
	return op
}

// DeadlineConfidence is the share of spot runs that must finish by
// --deadline for spot to be bought: the same 90% at which plan judges
// spot's cost (its P90), so a deadline met in most runs but missed in one
// of five is not a plan.
const DeadlineConfidence = 0.9

// missesDeadline says why spot cannot be bought for a deadline it would
// miss too often, or "": by the simulated share of runs that finish in
// time, or where the runs were not simulated, by the expected wall time.
func missesDeadline(risk *SpotRisk, r Run, deadline float64, isDeadline bool) i18n.Text {
	if deadline <= 0 {
		return i18n.Text{}
	}
	what := i18n.Textf("the deadline")
	if !isDeadline {
		what = i18n.Textf("the end of the span (--days)")
	}
	if risk != nil && (risk.DeadlineProbability != nil || risk.SpanProbability != nil) {
		pr := risk.DeadlineProbability
		if pr == nil {
			pr = risk.SpanProbability
		}
		if *pr < DeadlineConfidence {
			return i18n.Textf("spot finishes by %s in only %s of simulated runs (bought at %s or more)", what, report.Percent(*pr), report.Percent(DeadlineConfidence))
		}
		return i18n.Text{}
	}
	if h, _ := r.Expected(); h > deadline {
		return i18n.Textf("spot expects %s of wall time, past %s (%s)", hoursText(h), what, hoursText(deadline))
	}
	return i18n.Text{}
}

// simBudget bounds the interruptions one offer's Monte Carlo draws, about
// 0.1 s of one core (docs/BENCHMARKS.md): a trial steps from interruption
// to interruption, and a segment longer than the time between
// interruptions is redone e^(λT) − 1 times on average, which grows without
// bound (300 h checkpointed every 12 h at one interruption an hour expects
// 4.4 million interruptions a run, and 10000 trials would take hours).
// minTrials is the fewest trials whose P90 is still worth printing.
const (
	simBudget = 1e7
	minTrials = 100
)

// simTrials is how many of the asked trials fit simBudget, and a note
// when that is fewer, or none: then the spot plan is judged on its
// expected cost, which already says what such a run costs.
func simTrials(r Run, asked int) (int, i18n.Text) {
	_, fails := r.Expected()
	fit := simBudget / (fails + 1)
	if float64(asked) <= fit {
		return asked, i18n.Text{}
	}
	if int(fit) < minTrials {
		return 0, i18n.Textf("spot risk not simulated: a run expects %.3g interruptions, too many to draw %d times; judged on the expected cost instead: checkpoint more often (see the Young and Daly interval)", fails, asked)
	}
	return int(fit), i18n.Textf("spot risk from %d trials, not %d: a run expects %.3g interruptions", int(fit), asked, fails)
}

// recommend picks the cheapest plan that can be trusted: spot only when the
// job is interruptible and its interruption rate is known, judged by its P90
// cost when simulated, so a cheap average does not hide a bad tail.
// spotWhy says why the offer's spot price is left out, if it is (no
// interruption rate, or a run that would never finish): the reason names
// it, since "the only plan with a known price" would contradict the spot
// price the offer lists.
func recommend(p *Profile, op OfferPlan, bills map[string]Bill, rateKnown bool, spotWhy i18n.Text) (string, i18n.Text) {
	cost := map[string]float64{}
	for plan, b := range bills {
		cost[plan] = b.Total
	}
	if _, ok := cost[Spot]; ok {
		switch {
		case !rateKnown || !spotWhy.IsZero():
			delete(cost, Spot)
		case op.Spot != nil:
			cost[Spot] = op.Spot.P90Cost
		}
	}
	best, bestCost := "", math.Inf(1)
	for _, plan := range []string{OnDemand, Subscription, Spot} {
		if c, ok := cost[plan]; ok && c < bestCost {
			best, bestCost = plan, c
		}
	}
	switch best {
	case "":
		if !spotWhy.IsZero() {
			return "", i18n.Textf("spot is the only price known for this offer, and %s", spotWhy)
		}
		return "", i18n.Textf("no plan could be priced")
	case OnDemand:
		if len(op.BreakEven) > 0 {
			be := op.BreakEven[0]
			for _, x := range op.BreakEven {
				if x.Period == catalog.PeriodMonth {
					be = x
				}
			}
			perDay := p.ComputeHours / float64(p.SpanDays)
			if perDay >= be.HoursPerDay || p.ComputeHours >= be.Hours {
				// Enough hours, but a period longer than the task's span
				// is paid whole for days it does not use.
				return OnDemand, i18n.Textf("a %s costs more than paying as you go for these %s h over %s: the span is shorter than the period, which is paid whole",
					periodText(be.Period), trimFloat(p.ComputeHours), i18n.Plural(p.SpanDays, "%d day", "%d days"))
			}
			return OnDemand, i18n.Textf("you run %s h a day; a %s pays off above %s h a day (%.0f h a %s): pay as you go",
				trimFloat(perDay), periodText(be.Period), trimFloat(be.HoursPerDay), be.Hours, periodText(be.Period))
		}
		if len(cost) == 1 && !spotWhy.IsZero() {
			return OnDemand, i18n.Textf("on demand is the only plan judged: %s", spotWhy)
		}
		if len(cost) == 1 {
			return OnDemand, i18n.Textf("on demand is the only plan with a known price for this offer")
		}
		return OnDemand, i18n.Textf("no subscription or usable spot price beats it for this task")
	case Subscription:
		b := bills[Subscription]
		if od, ok := cost[OnDemand]; ok && b.Schedule == SchedulePacked {
			return Subscription, i18n.Textf("%s costs %.2f vs %.2f on demand, with the hours run inside the subscribed days rather than evenly over %d days", b.Detail, b.Total, od, p.SpanDays)
		}
		if od, ok := cost[OnDemand]; ok {
			return Subscription, i18n.Textf("%s costs %.2f vs %.2f on demand: %s h over %d days is above the break-even", b.Detail, b.Total, od, trimFloat(p.ComputeHours), p.SpanDays)
		}
		return Subscription, i18n.Textf("%s: the offer's on-demand price is unknown (no source states one), so the subscription is the plan priced", b.Detail)
	default:
		other := math.Inf(1)
		for _, plan := range []string{OnDemand, Subscription} {
			if c, ok := cost[plan]; ok {
				other = math.Min(other, c)
			}
		}
		if math.IsInf(other, 1) {
			return Spot, i18n.Textf("spot is the only price known for this offer")
		}
		if p.Checkpoint == nil {
			return Spot, i18n.Textf("even at its P90 cost (%.2f) spot beats %.2f, each interruption restarting the job from the beginning", bestCost, other)
		}
		return Spot, i18n.Textf("even at its P90 cost (%.2f) spot beats %.2f, and the job resumes from checkpoints", bestCost, other)
	}
}

// periodCount is n periods of a subscription: "2 months", "1 week".
func periodCount(n int, period string) i18n.Text {
	switch period {
	case catalog.PeriodDay:
		return i18n.Plural(n, "%d day", "%d days")
	case catalog.PeriodWeek:
		return i18n.Plural(n, "%d week", "%d weeks")
	}
	return i18n.Plural(n, "%d month", "%d months")
}

// periodText is a subscription period as a word of a message.
func periodText(period string) i18n.Text {
	switch period {
	case catalog.PeriodDay:
		return i18n.Textf("day")
	case catalog.PeriodWeek:
		return i18n.Textf("week")
	}
	return i18n.Textf("month")
}
