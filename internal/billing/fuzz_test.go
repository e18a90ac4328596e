package billing

import (
	"io"
	"math"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/catalog"
	"github.com/gpurent/gpurent/internal/report"
)

// FuzzQuoteAndPlan quotes and plans any valid task on every offer of the
// embedded catalog: each bill must be a finite, non-negative amount that
// its items add up to, bills come cheapest first, and the plan's figures
// are finite too; both must be writable as JSON. A task at the edge (a
// minute over a century, a checkpoint every second, a million starts)
// meets every offer's rounding, minimums, tiers and subscriptions here.
func FuzzQuoteAndPlan(f *testing.F) {
	cat, err := catalog.Default()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(300.0, 30, 10, 200.0, 100.0, 1, true, 1800, 60, 300, 20.0, 1.5, "USD")
	f.Add(0.01, 1, 1, 0.0, 0.0, 8, false, 0, 0, 0, 0.0, 0.0, "CNY")
	f.Add(876000.0-1, 36500, 1000000, 1e9, 1e12, 1000, true, 1, 0, 0, 1e6, 1e3, "EUR")
	f.Fuzz(func(t *testing.T, hours float64, days, starts int, disk, egress float64, gpus int, interruptible bool, everyS, writeS, restartS int, sizeGB, perDay float64, currency string) {
		p := &Profile{ComputeHours: hours, SpanDays: days, Starts: starts, DiskGB: disk, EgressGB: egress, GPUs: gpus, Interruptible: interruptible}
		if everyS != 0 || writeS != 0 || restartS != 0 || sizeGB != 0 {
			p.Checkpoint = &Checkpoint{Every: Duration(time.Duration(everyS) * time.Second), Write: Duration(time.Duration(writeS) * time.Second),
				Restart: Duration(time.Duration(restartS) * time.Second), SizeGB: sizeGB}
		}
		if len(p.Validate()) > 0 || days < 1 {
			return
		}
		opt := Options{Currency: currency, Today: time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)}
		if perDay > 0 && !math.IsInf(perDay, 0) {
			opt.InterruptionsPerDay = &perDay
		}
		offers, err := Offers(p, cat.Offers)
		if err != nil || len(offers) == 0 {
			return
		}
		q, err := Make(p, offers, cat.Rates, opt)
		if err != nil {
			return // a currency the catalog has no rate for
		}
		for i, b := range q.Bills {
			if math.IsNaN(b.Total) || math.IsInf(b.Total, 0) || b.Total < 0 {
				t.Fatalf("%s %s: total %v", b.Offer, b.Plan, b.Total)
			}
			sum := 0.0
			for _, it := range b.Items {
				if math.IsNaN(it.Amount) || it.Amount < 0 {
					t.Fatalf("%s %s: %s %v", b.Offer, b.Plan, it.Kind, it.Amount)
				}
				sum += it.Amount
			}
			if math.Abs(sum-b.Total) > 1e-9*math.Max(1, b.Total) {
				t.Fatalf("%s %s: items add up to %v, total %v", b.Offer, b.Plan, sum, b.Total)
			}
			if math.IsNaN(b.HiddenShare) || math.IsInf(b.HiddenShare, 0) || math.IsNaN(b.ListTotal) {
				t.Fatalf("%s %s: list %v, hidden %v", b.Offer, b.Plan, b.ListTotal, b.HiddenShare)
			}
			if i > 0 && q.Bills[i-1].Total > b.Total {
				t.Fatalf("bill %d (%v) after a dearer one (%v)", i, b.Total, q.Bills[i-1].Total)
			}
		}
		if err := report.WriteJSON(io.Discard, q); err != nil {
			t.Fatalf("quote as JSON: %v", err)
		}
		// What the middle bill's total buys (quote --budget): within the
		// budget and the span, each plan. Spans over ten years are left to
		// quote: each try of the search covers them day by day.
		if len(q.Bills) > 0 && days <= 3650 {
			budget := q.Bills[len(q.Bills)/2].Total
			if budget > 0 {
				r, err := Afford(p, true, offers, cat.Rates, opt, budget)
				if err != nil {
					t.Fatalf("quote made, budget refused: %v", err)
				}
				for _, a := range r.Plans {
					if !(a.Hours > 0) || a.Hours > float64(days)*24 || !(a.Bill.Total <= budget*(1+1e-9)) {
						t.Fatalf("%s %s: %v h for %v of %v", a.Bill.Offer, a.Bill.Plan, a.Hours, a.Bill.Total, budget)
					}
				}
				if err := report.WriteJSON(io.Discard, r); err != nil {
					t.Fatalf("budget as JSON: %v", err)
				}
			}
		}
		pl, err := MakePlan(p, offers, cat.Rates, PlanOptions{Options: opt, Trials: 20, Seed: 1, DeadlineHours: hours * 2}, func(n int, f func(int)) {
			for i := range n {
				f(i)
			}
		})
		if err != nil {
			t.Fatalf("quote made, plan refused: %v", err)
		}
		for _, o := range pl.Offers {
			for plan, v := range o.Totals {
				if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
					t.Fatalf("%s plan %s: %v", o.Offer, plan, v)
				}
			}
		}
		if err := report.WriteJSON(io.Discard, pl); err != nil {
			t.Fatalf("plan as JSON: %v", err)
		}
	})
}

// FuzzQuoteCatalog quotes and plans a task on any offer a user's catalog
// file may hold (--catalog): increments, minimums, subscriptions, spot
// rates, egress tiers and fees of any valid value must give a finite,
// non-negative bill that its items add up to, and a plan that finishes.
func FuzzQuoteCatalog(f *testing.F) {
	f.Add([]byte(`version: 1
exchange_rates: {as_of: 2026-11-01, USD: 1, CNY: 7.1}
offers:
  - id: a
    provider: P
    gpu: RTX 4090
    gpus: 1
    currency: CNY
    source: https://example.invalid/pricing
    as_of: 2026-10-15
    on_demand: {hourly: 1.98, increment: 1h, minimum: 3h}
    subscriptions: [{period: day, price: 45}, {period: week, price: 280}, {period: month, price: 1150}]
    spot: {hourly: 0.9, interruptions_per_day: 1.5, notice: 30s}
    boot_fee: 0.5
    storage: {included_gb: 50, running_gb_month: 0.5, stopped_gb_month: 9.0}
    egress_gb: 0.8
    egress_month: {free_gb: 100, tiers: [{above_gb: 10240, price: 0.085}, {above_gb: 51200, price: 0.07}]}
    ip_month: 3
    release_after_stopped: 15d
`), 300.0, 30, 10, true)
	f.Add([]byte(`version: 1
offers:
  - id: b
    provider: P
    gpu: H100
    gpus: 8
    currency: USD
    source: s
    as_of: 2026-10-15
    subscriptions: [{period: month, price: 0.01}]
    spot: {hourly: 0.0001, interruptions_per_day: 1000, notice: 0s}
    boot_fee: unknown
    storage: {included_gb: unknown, running_gb_month: unknown, stopped_gb_month: unknown}
    egress_gb: unknown
    ip_month: unknown
    release_after_stopped: unknown
`), 1.0, 1, 1, false)
	f.Fuzz(func(t *testing.T, data []byte, hours float64, days, starts int, ckpt bool) {
		cat, err := catalog.Parse("fuzz.yaml", data)
		if err != nil || len(cat.Offers) == 0 {
			return
		}
		p := &Profile{ComputeHours: hours, SpanDays: days, Starts: starts, DiskGB: 200, EgressGB: 100, GPUs: 1, Interruptible: true}
		if ckpt {
			p.Checkpoint = &Checkpoint{Every: Duration(30 * time.Minute), Write: Duration(time.Minute), Restart: Duration(5 * time.Minute), SizeGB: 20}
		}
		if len(p.Validate()) > 0 || days < 1 {
			return
		}
		rates := catalog.Merge(&catalog.Catalog{Rates: catalog.Rates{PerUSD: map[string]float64{"USD": 1}}}, cat).Rates
		q, err := Make(p, cat.Offers, rates, Options{})
		if err != nil {
			return // a currency without a rate
		}
		for _, b := range q.Bills {
			sum := 0.0
			for _, it := range b.Items {
				sum += it.Amount
			}
			if math.IsNaN(b.Total) || math.IsInf(b.Total, 0) || b.Total < 0 || math.Abs(sum-b.Total) > 1e-9*math.Max(1, b.Total) {
				t.Fatalf("%s %s: total %v, items %v", b.Offer, b.Plan, b.Total, b.Items)
			}
		}
		if err := report.WriteJSON(io.Discard, q); err != nil {
			t.Fatalf("quote as JSON: %v", err)
		}
		pl, err := MakePlan(p, cat.Offers, rates, PlanOptions{Trials: 20, Seed: 1}, nil)
		if err != nil {
			t.Fatalf("quote made, plan refused: %v", err)
		}
		if err := report.WriteJSON(io.Discard, pl); err != nil {
			t.Fatalf("plan as JSON: %v", err)
		}
	})
}
