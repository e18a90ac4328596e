package billing

import (
	"math"

	"github.com/gpurent/gpurent/internal/catalog"
	"github.com/gpurent/gpurent/internal/i18n"
)

// Schedules a subscription bill can assume.
const (
	// ScheduleSpread runs the hours evenly over the span's days.
	ScheduleSpread = "spread"
	// SchedulePacked runs them inside the subscribed periods first, up to
	// 24 h a day, and the rest on demand: 600 h in 40 days fit in one
	// month's 包月, which spread evenly (15 h a day) never pays off.
	SchedulePacked = "packed"
)

// cover is one way of paying for the span with prepaid periods and
// on-demand hours.
type cover struct {
	schedule string
	counts   map[string]int // periods bought
	subDays  int            // days of the span inside them
	odHours  float64        // hours paid on demand
	compute  float64
	storage  float64
	starts   float64 // boot fees paid
}

func (c cover) total(boot float64) float64 { return c.compute + c.storage + c.starts*boot }

func (c cover) periods() bool { return len(c.counts) > 0 }

// subscriptionBill is the cheapest cover of the span that a subscription
// gives, over two schedules: the hours spread evenly over the span
// (spreadCover) and the hours packed into the periods (packedCover). With
// force it must buy a period (quote --budget asks what a subscription buys
// even where paying as you go is cheaper); without it the bill is offered
// only when a period is the cheapest way.
func subscriptionBill(p *Profile, o *catalog.Offer, force bool) (Bill, bool) {
	if len(o.Subscriptions) == 0 {
		return Bill{}, false
	}
	var u usage
	s := sharedFees(p, o, &u, float64(p.SpanDays)*24-p.ComputeHours, false)
	hourly, odOK := o.OnDemand.Hourly.Value()
	if !odOK {
		hourly = math.Inf(1)
	}
	best, ok := spreadCover(p, o, s, hourly, force)
	spread := best
	if pc, pok := packedCover(p, o, s, hourly, force); pok && (!ok || pc.total(s.boot) < best.total(s.boot)-1e-9) {
		best, ok = pc, true
	}
	if !ok || !best.periods() {
		return Bill{}, false
	}
	b := newBill(p, o, Subscription)
	b.Schedule = best.schedule
	items := [5]float64{best.compute, best.storage, s.egress, s.boot * best.starts, s.ip}
	lh, note := listHourly(o)
	b.finish(items, lh, p)
	var parts []i18n.Text
	for _, per := range []string{catalog.PeriodMonth, catalog.PeriodWeek, catalog.PeriodDay} {
		if n := best.counts[per]; n > 0 {
			parts = append(parts, periodCount(n, per))
		}
	}
	inside := p.ComputeHours - best.odHours
	if best.schedule == SchedulePacked {
		parts[len(parts)-1] = i18n.Textf("%s (%s run inside, %s a day)", parts[len(parts)-1], hoursText(inside), hoursText(inside/float64(best.subDays)))
	}
	if best.odHours > 0 {
		parts = append(parts, i18n.Textf("%s on demand", hoursText(best.odHours)))
	}
	b.Detail = i18n.Join(parts, " + ")
	b.Unknown, b.Warnings = u.names(), u.warnings()
	b.TotalIsLowerBound = lowerBound(b.Unknown)
	if !note.IsZero() {
		b.Warnings = append(b.Warnings, note)
	}
	if best.schedule == SchedulePacked {
		alt := i18n.Textf("paying as you go")
		if spread.periods() {
			alt = i18n.Textf("the cheapest subscription bill")
		}
		w := i18n.Textf("schedule: the bill assumes the hours run inside the %s subscribed (%s a day) rather than evenly over the %s",
			i18n.Plural(best.subDays, "%d day", "%d days"), hoursText(inside/float64(best.subDays)), i18n.Plural(p.SpanDays, "%d day", "%d days"))
		if spread.periods() || odOK {
			if sp := spreadTotal(p, o, s, hourly, spread); !math.IsInf(sp, 1) {
				w = i18n.Textf("%s%s", w, i18n.Textf("; spread evenly, %s costs %.2f %s more", alt, sp-best.total(s.boot), o.Currency))
			}
		}
		b.Warnings = append(b.Warnings, w)
		if gap := float64(p.SpanDays-best.subDays)*24 - best.odHours; gap > 0 {
			if rel, known := o.ReleaseAfterStopped.Value(); known && gap > rel.Hours() {
				b.Warnings = append(b.Warnings, i18n.Textf("the %.1f h stopped after the subscription exceed release_after_stopped %s: the platform deletes the stopped instance and its disk", gap, o.ReleaseAfterStopped))
			}
		}
	} else if best.odHours > 0 || best.subDays < p.SpanDays {
		b.Warnings = append(b.Warnings, releaseWarning(p, o, p.ComputeHours)...)
	}
	return b, true
}

// spreadTotal is what the spread schedule costs, or paying as you go all
// along when it buys no period; +Inf when neither is priced.
func spreadTotal(p *Profile, o *catalog.Offer, s shared, hourly float64, spread cover) float64 {
	if spread.periods() {
		return spread.total(s.boot)
	}
	if math.IsInf(hourly, 1) {
		return math.Inf(1)
	}
	stopped := float64(p.SpanDays)*24 - p.ComputeHours
	return p.ComputeHours*hourly + s.extraGB*(s.runGB*p.ComputeHours+s.stopGB*stopped) + s.boot*float64(p.Starts)
}

// spreadCover spreads the hours evenly over the span's days: a day is
// either inside a subscribed period (the instance is kept: storage at the
// running rate all day, no stopped storage) or paid on demand (its share
// of hours, without rounding, plus stopped storage for the rest of the
// day). A dynamic programme over days finds the cheapest cover, and with
// force the cheapest that buys a period; periods may overrun the span's
// end. hourly is +Inf when the offer has no on-demand price.
func spreadCover(p *Profile, o *catalog.Offer, s shared, hourly float64, force bool) (cover, bool) {
	D := p.SpanDays
	h := p.ComputeHours / float64(D) // hours a day
	odDay := h*hourly + s.extraGB*(s.runGB*h+s.stopGB*(24-h))
	if h == 0 {
		odDay = s.extraGB * s.stopGB * 24
	}
	type step struct {
		prev     int
		period   string // "" for an on-demand day
		prevUsed bool   // the step before is in the chain that bought a period
	}
	// anyC[d] is the cheapest cover of days 1..d, usedC[d] the cheapest
	// that buys at least one period.
	anyC, usedC := make([]float64, D+1), make([]float64, D+1)
	anyB, usedB := make([]step, D+1), make([]step, D+1)
	usedC[0] = math.Inf(1)
	for d := 1; d <= D; d++ {
		anyC[d], anyB[d] = anyC[d-1]+odDay, step{d - 1, "", false}
		usedC[d], usedB[d] = usedC[d-1]+odDay, step{d - 1, "", true}
		for _, sub := range o.Subscriptions {
			from := max(0, d-catalog.PeriodDays(sub.Period))
			c := anyC[from] + sub.Price + s.extraGB*s.runGB*24*float64(d-from)
			if c < anyC[d]-1e-9 {
				anyC[d], anyB[d] = c, step{from, sub.Period, false}
			}
			if c < usedC[d]-1e-9 {
				usedC[d], usedB[d] = c, step{from, sub.Period, false}
			}
		}
	}
	used := force
	if (used && math.IsInf(usedC[D], 1)) || (!used && math.IsInf(anyC[D], 1)) {
		return cover{}, false
	}
	c := cover{schedule: ScheduleSpread, counts: map[string]int{}}
	prices := map[string]float64{}
	for _, sub := range o.Subscriptions {
		prices[sub.Period] = sub.Price
	}
	odDays := 0
	for d := D; d > 0; {
		st := anyB[d]
		if used {
			st = usedB[d]
		}
		if st.period == "" {
			odDays++
		} else {
			c.counts[st.period]++
			c.compute += prices[st.period]
			c.storage += s.extraGB * s.runGB * 24 * float64(d-st.prev)
			c.subDays += d - st.prev
		}
		d, used = st.prev, st.prevUsed
	}
	c.odHours = h * float64(odDays)
	if c.odHours > 0 {
		c.compute += c.odHours * hourly
	}
	c.storage += s.extraGB * (s.runGB*c.odHours + s.stopGB*(24*float64(odDays)-c.odHours))
	c.starts = float64(p.Starts) // a boot fee is per start, subscribed or not
	return c, true
}

// packedCover runs the hours inside the subscribed periods first, 24 h a
// day, and what does not fit on demand in the days after: for each length
// of periods bought (the cheapest mix of periods of exactly that many
// days, which may overrun the span's end), the bill of that schedule; the
// cheapest wins, and with force the cheapest that buys a period.
func packedCover(p *Profile, o *catalog.Offer, s shared, hourly float64, force bool) (cover, bool) {
	D := p.SpanDays
	longest := 0
	for _, sub := range o.Subscriptions {
		longest = max(longest, catalog.PeriodDays(sub.Period))
	}
	maxS := D + longest - 1
	exact := make([]float64, maxS+1) // cheapest periods of exactly S days
	last := make([]string, maxS+1)
	for S := 1; S <= maxS; S++ {
		exact[S] = math.Inf(1)
		for _, sub := range o.Subscriptions {
			if L := catalog.PeriodDays(sub.Period); S >= L && exact[S-L]+sub.Price < exact[S] {
				exact[S], last[S] = exact[S-L]+sub.Price, sub.Period
			}
		}
	}
	bestS, best, bestTotal := -1, cover{}, math.Inf(1)
	from := 0
	if force {
		from = 1
	}
	for S := from; S <= maxS; S++ {
		if math.IsInf(exact[S], 1) {
			continue
		}
		E := min(S, D)
		in := math.Min(p.ComputeHours, 24*float64(E))
		od := p.ComputeHours - in
		if od > 1e-9 && math.IsInf(hourly, 1) {
			continue
		}
		c := cover{schedule: SchedulePacked, subDays: E, odHours: od, compute: exact[S], starts: float64(p.Starts)}
		if od > 1e-9 {
			c.compute += od * hourly
		} else {
			c.odHours = 0
		}
		c.storage = s.extraGB * (s.runGB*(24*float64(E)+c.odHours) + s.stopGB*(24*float64(D-E)-c.odHours))
		if t := c.total(s.boot); t < bestTotal-1e-9 {
			bestS, best, bestTotal = S, c, t
		}
	}
	if bestS < 0 {
		return cover{}, false
	}
	best.counts = map[string]int{}
	for S := bestS; S > 0; S -= catalog.PeriodDays(last[S]) {
		best.counts[last[S]]++
	}
	return best, true
}
