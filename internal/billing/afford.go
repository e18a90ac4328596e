package billing

import (
	"math"
	"sort"
	"strings"
	"time"

	"github.com/gpurent/gpurent/internal/catalog"
	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/report"
	"github.com/gpurent/gpurent/internal/units"
)

// Reach is what a budget buys: for each offer and plan, the most compute
// hours of the profile's task whose whole bill (storage, egress, boot fees
// and rounding included) stays within it. A student with a grant, or a team
// with a month's allowance, asks this rather than what N hours cost.
type Reach struct {
	Currency string  `json:"currency"`
	Budget   float64 `json:"budget"`
	// Reference is the GPU the work is counted on (Options.Work): the
	// plans are then ranked by the work the budget buys, not its hours.
	Reference string `json:"reference,omitempty"`
	// Rates are the exchange rates used, as Quote's.
	Rates []i18n.Text `json:"rates,omitempty"`
	// Plans are the plans the budget buys any hours of, most hours first.
	Plans []Afforded `json:"plans"`
	// Notes say what was left out and why (plans whose fixed costs alone
	// exceed the budget), as Quote's notes do.
	Notes []i18n.Text `json:"notes,omitempty"`

	used map[string]i18n.Text // as Quote's
}

// Top keeps the n plans that give the most hours (all when n is 0), and
// the rates of the currencies their bills were converted from.
func (r *Reach) Top(n int) {
	if n > 0 && len(r.Plans) > n {
		r.Plans = r.Plans[:n]
	}
	r.Rates = rateLines(r.used, r.bills())
}

func (r *Reach) bills() []Bill {
	out := make([]Bill, len(r.Plans))
	for i, a := range r.Plans {
		out[i] = a.Bill
	}
	return out
}

// Afforded is one plan of one offer within the budget.
type Afforded struct {
	// Hours are the most compute hours the budget buys, found to within
	// 0.01 h (an increment's end where a provider bills by whole
	// increments): the bill at these hours (Bill) is within the budget.
	Hours float64 `json:"hours"`
	// Work is, with a reference GPU, what those hours are worth in hours
	// on it: an H20's 669 h buy the work of 100 h on an H100 SXM.
	Work float64 `json:"work,omitempty"`
	Bill Bill    `json:"bill"`
}

// worth is what a plan is ranked by: its work, or its hours without a
// reference GPU.
func (a Afforded) worth() float64 {
	if a.Work > 0 {
		return a.Work
	}
	return a.Hours
}

// Afford finds, for each offer and plan, the most compute hours of p (all
// else as p says) whose bill is within budget, in opt.Currency.
//
// With spanGiven false the span follows the hours (run back to back), as
// Defaults makes it: a bill then grows with the hours, and the search
// doubles the hours until the budget is passed. With a span the hours are
// bounded by it, and a bill need not grow with them (more hours running
// are fewer hours stopped, and some providers bill storage dearer while
// stopped), so each plan is first searched on a grid of 100 points up to
// the span. Either way it then bisects between the last hours found
// within the budget and the next ones tried.
func Afford(p *Profile, spanGiven bool, offers []catalog.Offer, rates catalog.Rates, opt Options, budget float64) (*Reach, error) {
	if !(budget > 0) || math.IsInf(budget, 0) {
		return nil, i18n.Errorf("want a positive budget, got %v", budget)
	}
	cur, factors, used, err := conversions(offers, rates, opt)
	if err != nil {
		return nil, err
	}
	r := &Reach{Currency: cur, Budget: budget, Plans: []Afforded{}, used: used}
	none := 0
	var never []string // offers whose spot run would never finish, even an hour of it
	var unrated []string
	for i := range offers {
		o, f := &offers[i], factors[i]
		// With a reference GPU, each offer's hours are worth 1/slow hours
		// of it; one the datasheet cannot rate is left out.
		slow, rated := 1.0, ""
		if w := opt.Work; w != nil {
			var ok bool
			if slow, rated, ok = w.Factor(o); !ok {
				unrated = append(unrated, o.GPU)
				continue
			}
		}
		// The bill of plan at h hours, in the quote's currency; false
		// where the plan gives none (a spot run that never finishes).
		bill := func(plan string, h float64) (Bill, bool) {
			t := *p
			t.ComputeHours = h
			if !spanGiven {
				t.SpanDays = max(1, int(math.Ceil(h/24-1e-9)))
			}
			var b Bill
			ok := false
			switch plan {
			case OnDemand:
				b, ok = onDemandBill(&t, o)
			case Subscription:
				b, ok = subscriptionBill(&t, o, true)
			case Spot:
				if t.Interruptible {
					b, ok = spotBill(&t, o, opt)
				}
			}
			if ok {
				b.date(o, opt.Today)
				b.history(o, opt)
				b.scale(f)
			}
			return b, ok
		}
		within := func(plan string, h float64) (Bill, bool) {
			b, ok := bill(plan, h)
			if ok && plan == Spot && spanGiven {
				// The work and what interruptions cost it must fit in
				// the span, not the work alone.
				t := *p
				t.ComputeHours = h
				run, _ := spotRun(&t, o, opt)
				wall, _ := run.Expected()
				ok = wall <= float64(p.SpanDays)*24
			}
			return b, ok && b.Total <= budget*(1+1e-12)
		}
		for _, plan := range []string{OnDemand, Subscription, Spot} {
			if _, ok := bill(plan, 1); !ok {
				if plan == Spot && p.Interruptible && o.Spot != nil && o.Spot.Hourly.IsKnown() {
					never = append(never, o.ID)
				}
				continue // the offer has no such plan
			}
			// lo is within the budget (0: nothing yet), hi is not or is
			// the bound.
			lo, hi := 0.0, 0.0
			if spanGiven {
				const grid = 100
				bound := float64(p.SpanDays) * 24
				hi = bound / grid
				for k := grid; k >= 1; k-- {
					if _, ok := within(plan, bound*float64(k)/grid); ok {
						lo, hi = bound*float64(k)/grid, math.Min(bound, bound*float64(k+1)/grid)
						break
					}
				}
			} else {
				hi = 24
				for hi < maxHours-1 {
					if _, ok := within(plan, hi); !ok {
						break
					}
					lo, hi = hi, math.Min(2*hi, maxHours-1)
				}
			}
			if _, ok := within(plan, hi); ok {
				lo = hi // the whole span is within the budget
			}
			for range 60 {
				mid := (lo + hi) / 2
				if _, ok := within(plan, mid); ok {
					lo = mid
				} else {
					hi = mid
				}
			}
			// To 0.01 h: up where that is still within (a bill that steps
			// at whole hours is reached at 4.00, not 3.99), else down.
			h := math.Ceil(lo*100-1e-6) / 100
			b, ok := within(plan, h)
			if !ok {
				h = math.Floor(lo*100) / 100
				b, ok = within(plan, h)
			}
			// On demand billed by whole increments, a bill can fall within
			// a step (each hour running is an hour less of a dearer stopped
			// storage) and be within the budget only at the step's end, a
			// window the grid can miss: the ends of the steps after h are
			// tried while they are within.
			if inc, known := o.OnDemand.Increment.Value(); plan == OnDemand && known && inc > 0 {
				step := inc.Hours() * float64(p.Starts)
				end := math.Ceil(h/step-1e-9) * step
				if h <= 0 {
					end = step
				}
				for range 1000 {
					if spanGiven && end > float64(p.SpanDays)*24 || end >= maxHours {
						break
					}
					eb, in := within(plan, end)
					if !in {
						break
					}
					h, b, ok = end, eb, true
					end += step
				}
			}
			if !ok || h <= 0 {
				none++
				continue
			}
			a := Afforded{Hours: h, Bill: b}
			if opt.Work != nil {
				a.Work, a.Bill.RatedAs = h/slow, rated
			}
			r.Plans = append(r.Plans, a)
		}
	}
	// Most hours (or work) first; of equal ones (a whole span), the
	// cheaper first.
	sort.SliceStable(r.Plans, func(i, j int) bool {
		a, b := r.Plans[i], r.Plans[j]
		return a.worth() > b.worth() || a.worth() == b.worth() && a.Bill.Total < b.Bill.Total
	})
	whole := float64(p.SpanDays) * 24
	full, most := 0, 0 // plans that buy the whole span, and the search's most
	for _, a := range r.Plans {
		if a.Hours >= whole {
			full++
		}
		if a.Hours >= maxHours-1 {
			most++
		}
	}
	if spanGiven && full > 0 {
		r.Notes = append(r.Notes, i18n.Textf("the budget buys the whole span, %s h, on %s: a longer span (--days) shows how far it goes",
			trimFloat(whole), i18n.Plural(full, "%d plan", "%d plans")))
	}
	if most > 0 {
		r.Notes = append(r.Notes, i18n.Textf("the budget buys a century of compute or more on %s: the search stops at %d h", i18n.Plural(most, "%d plan", "%d plans"), maxHours-1))
	}
	if none > 0 {
		r.Notes = append(r.Notes, i18n.Textf("%s left out: even the fewest hours cost more than %s %s (storage over the span, boot fees or a subscription's shortest period cost that much whatever the hours)",
			i18n.Plural(none, "%d plan", "%d plans"), report.Money(budget), cur))
	}
	if len(never) > 0 {
		r.Notes = append(r.Notes, i18n.Textf("spot left out on %s (%s): at the interruption rate even an hour of work would practically never finish; checkpoint settings (--ckpt-every) price a job that resumes",
			i18n.Plural(len(never), "%d offer", "%d offers"), strings.Join(never, ", ")))
	}
	r.Reference, r.Notes = workNotes(offers, opt.Work, unrated, r.Notes, func(w *Work) i18n.Text {
		return i18n.Textf("WORK is what each plan's hours are worth in hours on %s, by %s (%s): ranked by the work the budget buys, not its hours", w.Reference, w.figure(), w.source())
	})
	r.Notes = append(r.Notes, opt.Notes...)
	// Of quote's notes, those that do not speak of a number of hours.
	for _, n := range []i18n.Text{memoryNote(p, offers), splitNote(p, offers), idleNote(p, offers)} {
		if !n.IsZero() {
			r.Notes = append(r.Notes, n)
		}
	}
	if c := p.Checkpoint; c != nil && c.SizeGB > 0 && c.Every > 0 {
		r.Notes = append(r.Notes, i18n.Textf("egress includes a checkpoint upload of %g GB every %s of compute, to a store outside the provider, at each plan's hours",
			c.SizeGB, units.FormatDuration(time.Duration(c.Every))))
	}
	r.Rates = rateLines(used, r.bills())
	return r, nil
}
