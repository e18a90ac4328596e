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
