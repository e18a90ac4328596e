package billing

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/catalog"
)

// What a budget buys on testOffer, worked by hand. Over a span of 10 days
// (240 h) in 4 starts, 100 GB disk (50 GB over the included), 50 GB egress,
// h hours of compute cost
//
//	compute  4 starts × max(3, ceil(h/4)) h × 2/h = 8 × max(3, ceil(h/4))
//	storage  50 GB × (0.001 h + 0.002 (240 − h))  = 24 − 0.05 h
//	egress 5, boot 4 × 0.5 = 2, ip 3 × 10/30 = 1
//
// so 56 − 0.05 h up to 12 h, 64 − 0.05 h up to 16 h, 72 − 0.05 h up to
// 20 h: the bill falls within each step (each hour running is one hour less
// of the dearer stopped storage) and jumps between them.
//
//	budget 60:  12 h (55.4); (12, 16] would need 64 − 0.05 h ≤ 60, h ≥ 80
//	budget 64:  16 h (63.2)
//	budget 100: 8k + 32 − 0.2k ≤ 100 at h = 4k gives k ≤ 8.7: 32 h (94.4);
//	            (32, 36] would need 104 − 0.05 h ≤ 100, h ≥ 80
//	budget 55:  none: 56 − 0.05 h ≤ 55 needs h ≥ 20, where compute is 40
//	budget 63.21: 16 h (63.2): within (12, 16] only from 15.8 h, a window
//	            that the search's grid of 2.4 h steps passes over
func TestAffordWorkedExample(t *testing.T) {
	p := Profile{GPUs: 2, ComputeHours: 1, SpanDays: 10, Starts: 4, DiskGB: 100, EgressGB: 50}
	for _, tc := range []struct {
		budget, hours, total float64
	}{{60, 12, 55.4}, {64, 16, 63.2}, {100, 32, 94.4}, {55, 0, 0}, {63.21, 16, 63.2}} {
		r, err := Afford(&p, true, []catalog.Offer{testOffer()}, catalog.Rates{}, Options{}, tc.budget)
		if err != nil {
			t.Fatal(err)
		}
		if tc.hours == 0 {
			if len(r.Plans) != 0 || len(r.Notes) == 0 || !strings.HasPrefix(r.Notes[0].String(), "1 plan left out: even the fewest hours cost more than 55.00 USD") {
				t.Errorf("budget %v: %+v, want none and a note", tc.budget, r)
			}
			continue
		}
		if len(r.Plans) != 1 {
			t.Fatalf("budget %v: %+v", tc.budget, r.Plans)
		}
		a := r.Plans[0]
		if a.Hours != tc.hours || !near(a.Bill.Total, tc.total) || a.Bill.Plan != OnDemand || r.Currency != "USD" || r.Budget != tc.budget {
			t.Errorf("budget %v: %v h for %v, want %v h for %v", tc.budget, a.Hours, a.Bill.Total, tc.hours, tc.total)
		}
	}
}

// Without a span the instance runs back to back: one start, no storage
// over the included, no egress; h hours cost 2 × max(3, ceil(h)) + 0.5
// boot + 3 × ceil(h/24)/30 ip. A budget of 20 buys 9 h (18 + 0.5 + 0.1 =
// 18.6; 10 h would be 20.6). A subscription-only offer, 100 a month and
// nothing else, buys the whole of a 30-day span (720 h) for 150, and
// nothing for 50; converted to CNY at 7 a dollar, 1050 CNY buys the same.
func TestAffordBackToBackAndSubscriptions(t *testing.T) {
	p := Profile{GPUs: 2, ComputeHours: 1, Starts: 1, DiskGB: 50}
	p.Defaults(nil)
	r, err := Afford(&p, false, []catalog.Offer{testOffer()}, catalog.Rates{}, Options{}, 20)
	if err != nil || len(r.Plans) != 1 || r.Plans[0].Hours != 9 || !near(r.Plans[0].Bill.Total, 18.6) {
		t.Fatalf("%+v %v", r, err)
	}

	sub := catalog.Offer{ID: "s", Provider: "Sub", GPU: "RTX 4090", GPUs: 2, Currency: "USD", Source: "hand", AsOf: "2026-11-30",
		Subscriptions: []catalog.Subscription{{Period: catalog.PeriodMonth, Price: 100}},
		BootFee:       catalog.Known(0), EgressGB: catalog.Known(0), IPMonth: catalog.Known(0),
		Storage: catalog.Storage{IncludedGB: catalog.Known(50), RunningGBMonth: catalog.Known(0), StoppedGBMonth: catalog.Known(0)}}
	p = Profile{GPUs: 2, ComputeHours: 1, SpanDays: 30, Starts: 1, DiskGB: 50}
	rates := catalog.Rates{AsOf: "2026-11-01", PerUSD: map[string]float64{"USD": 1, "CNY": 7}}
	for _, tc := range []struct {
		budget   float64
		currency string
		hours    float64
	}{{150, "USD", 720}, {50, "USD", 0}, {1050, "CNY", 720}} {
		r, err := Afford(&p, true, []catalog.Offer{sub}, rates, Options{Currency: tc.currency}, tc.budget)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case tc.hours == 0 && len(r.Plans) != 0:
			t.Errorf("budget %v: %+v, want none", tc.budget, r.Plans)
		case tc.hours > 0 && (len(r.Plans) != 1 || r.Plans[0].Hours != tc.hours || r.Plans[0].Bill.Plan != Subscription || !near(r.Plans[0].Bill.Total, 100*tc.budget/150)):
			t.Errorf("budget %v %s: %+v", tc.budget, tc.currency, r.Plans)
		}
	}
	if _, err := Afford(&p, true, []catalog.Offer{sub}, rates, Options{}, 0); err == nil {
		t.Error("a budget of 0")
	}
}

// On every offer of the embedded catalog, for budgets from 50 to 50,000
// USD, over a 30-day span and back to back: each plan's bill at the hours
// found is within the budget and the span (a spot run's interruptions
// included), and 0.01 h more is not, unless the hours are the whole span.
func TestAffordEmbeddedCatalog(t *testing.T) {
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	rate := 1.0
	opt := Options{InterruptionsPerDay: &rate}
	for _, spanGiven := range []bool{true, false} {
		p := Profile{GPUs: 1, ComputeHours: 1, Starts: 10, DiskGB: 200, EgressGB: 100, Interruptible: true,
			Checkpoint: &Checkpoint{Every: Duration(30 * time.Minute), Write: Duration(time.Minute), Restart: Duration(5 * time.Minute)}}
		if spanGiven {
			p.SpanDays = 30
		}
		p.Defaults(nil)
		for _, budget := range []float64{50, 500, 5000, 50000} {
			r, err := Afford(&p, spanGiven, cat.Offers, cat.Rates, opt, budget)
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Plans) == 0 {
				t.Errorf("budget %v: nothing", budget)
			}
			for _, a := range r.Plans {
				o, _ := catalog.ByID(cat.Offers, a.Bill.Offer)
				at := func(h float64) (Bill, bool) {
					q := p
					q.ComputeHours = h
					if !spanGiven {
						q.SpanDays = max(1, int(math.Ceil(h/24-1e-9)))
					}
					qt, err := Make(&q, []catalog.Offer{*o}, cat.Rates, opt)
					if err != nil {
						t.Fatal(err)
					}
					for _, b := range qt.Bills {
						if b.Plan == a.Bill.Plan {
							if b.Plan == Spot && spanGiven {
								run, _ := spotRun(&q, o, opt)
								if wall, _ := run.Expected(); wall > float64(p.SpanDays)*24 {
									return b, false
								}
							}
							return b, b.Total <= budget*(1+1e-12)
						}
					}
					return Bill{}, false
				}
				if b, ok := at(a.Hours); !ok || !near(b.Total, a.Bill.Total) {
					t.Errorf("budget %v, %s %s: %v h bill %v, not within", budget, a.Bill.Offer, a.Bill.Plan, a.Hours, b.Total)
				}
				if whole := float64(p.SpanDays) * 24; spanGiven && a.Hours >= whole || a.Hours >= maxHours-1 {
					continue
				}
				if b, ok := at(a.Hours + 0.01); ok {
					t.Errorf("budget %v, %s %s: %v h found, but %v h bill %v is within too", budget, a.Bill.Offer, a.Bill.Plan, a.Hours, a.Hours+0.01, b.Total)
				}
			}
		}
	}
}

// A spot plan that would never finish, even an hour of it (no checkpoints,
// 1000 interruptions a day), is left out with a note naming the offer;
// the on-demand plan is still searched.
func TestAffordSpotThatNeverFinishes(t *testing.T) {
	o := testOffer()
	o.Spot = &catalog.Spot{Hourly: catalog.Known(0.5)}
	rate := 1000.0
	p := Profile{GPUs: 2, ComputeHours: 1, SpanDays: 10, Starts: 4, DiskGB: 100, EgressGB: 50, Interruptible: true}
	r, err := Afford(&p, true, []catalog.Offer{o}, catalog.Rates{}, Options{InterruptionsPerDay: &rate}, 60)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Plans) != 1 || r.Plans[0].Bill.Plan != OnDemand || r.Plans[0].Hours != 12 {
		t.Errorf("plans %+v, want on demand's 12 h", r.Plans)
	}
	if !slices.ContainsFunc(strs(r.Notes), func(n string) bool { return strings.HasPrefix(n, "spot left out on 1 offer (t): ") }) {
		t.Errorf("notes %q", strs(r.Notes))
	}
}

// Issue #37 item 1: 1,500 CNY for a month of a 4090 that costs 1.88 an
// hour or 1,052 a month. The search tried each plan at one hour first,
// where paying as you go wins, and dropped the subscription: it showed
// 720 h on demand for 1,353.60 and hid the month that buys the same
// 720 h for 1,052. Run back to back, the month and 226 h on demand after
// it (1,500 − 1,052 = 448 at 1.98) buy more than on demand alone (757 h).
func TestAffordShowsSubscriptionBesideHourly(t *testing.T) {
	o := subOffer(1.88, catalog.Subscription{Period: catalog.PeriodMonth, Price: 1052})
	p := Profile{GPUs: 1, ComputeHours: 1, SpanDays: 30, Starts: 1}
	r, err := Afford(&p, true, []catalog.Offer{o}, catalog.Rates{}, Options{}, 1500)
	if err != nil {
		t.Fatal(err)
	}
	var sub *Afforded
	for i := range r.Plans {
		if r.Plans[i].Bill.Plan == Subscription {
			sub = &r.Plans[i]
		}
	}
	if sub == nil || sub.Hours != 720 || !near(sub.Bill.Total, 1052) || r.Plans[0].Bill.Plan != Subscription {
		t.Fatalf("over 30 days: %+v", r.Plans)
	}
	o = subOffer(1.98, catalog.Subscription{Period: catalog.PeriodMonth, Price: 1052})
	p = Profile{GPUs: 1, ComputeHours: 1, Starts: 1}
	p.Defaults(nil)
	r, err = Afford(&p, false, []catalog.Offer{o}, catalog.Rates{}, Options{}, 1500)
	if err != nil {
		t.Fatal(err)
	}
	want := 720 + (1500-1052)/1.98
	if len(r.Plans) != 2 || r.Plans[0].Bill.Plan != Subscription || math.Abs(r.Plans[0].Hours-want) > 0.02 {
		t.Fatalf("back to back: want the month and %.2f h in all first, got %+v", want, r.Plans)
	}
}
