package money

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/catalog"
)

func TestParsePrice(t *testing.T) {
	for in, want := range map[string]string{"2.49": "2.49 USD/h", "2.49USD": "2.49 USD/h", "18 CNY": "18 CNY/h", "18cny/h": "18 CNY/h", " 0.5 eur ": "0.5 EUR/h"} {
		p, err := ParsePrice(in)
		if err != nil || p.String() != want {
			t.Errorf("ParsePrice(%q) = %v, %v; want %s", in, p, err, want)
		}
	}
	for _, in := range []string{"", "abc", "-1", "0", "2.49 dollars", "USD", "1e9", "2.49 US"} {
		if p, err := ParsePrice(in); err == nil {
			t.Errorf("ParsePrice(%q) = %v, want an error", in, p)
		}
	}
	// An offer's id, as quote prints it, gives its price in the catalog,
	// per instance and in its own currency; a price the catalog lacks is
	// an error, not 0.
	offers := []catalog.Offer{
		{ID: "od-only", Currency: "CNY", AsOf: "2026-11-30", OnDemand: catalog.OnDemand{Hourly: catalog.Known(18)}},
		{ID: "both", Currency: "USD", AsOf: "c. 2026-10", OnDemand: catalog.OnDemand{Hourly: catalog.Known(6.88)}, Spot: &catalog.Spot{Hourly: catalog.Known(2.63)}},
		{ID: "sub-only", Currency: "CNY", AsOf: "2026-11-30", Subscriptions: []catalog.Subscription{{Period: catalog.PeriodMonth, Price: 3000}}},
	}
	for in, want := range map[string]string{
		"od-only":   "18 CNY/h, od-only's on-demand price in the catalog (as of 2026-11-30)",
		"BOTH":      "6.88 USD/h, both's on-demand price in the catalog (as of c. 2026-10)",
		"both:spot": "2.63 USD/h, both's spot price in the catalog (as of c. 2026-10)",
	} {
		p, err := OfferPrice(offers, in)
		if got := p.String() + ", " + p.From; err != nil || got != want {
			t.Errorf("OfferPrice(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for in, want := range map[string]string{
		"od-only:spot": "offer od-only states no spot price in the catalog",
		"sub-only":     "offer sub-only states no on-demand price in the catalog",
		"both:month":   "want :spot (or nothing, for its on-demand price), got :month",
		"bothh":        `no offer has id "bothh" (did you mean "both"?)`,
	} {
		if p, err := OfferPrice(offers, in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("OfferPrice(%q) = %v, %v; want an error with %q", in, p, err, want)
		}
	}
	if !LooksLikeOffer(" aws-p5.4xlarge") || LooksLikeOffer("2.49USD") || LooksLikeOffer("") {
		t.Error("LooksLikeOffer")
	}

	p, _ := ParsePrice("2.5")
	if c := p.Cost(90 * time.Minute); c != "3.75 USD" {
		t.Errorf("cost %s", c)
	}
	if c := (Hourly{}).Cost(time.Hour); c != "" {
		t.Errorf("no price, cost %q", c)
	}
	var b strings.Builder
	Metric{Price: p, Begun: time.Now().Add(-90 * time.Minute)}.WriteTo(&b)
	if !strings.Contains(b.String(), "gpurent_cost{currency=\"USD\"} 3.75") {
		t.Errorf("metric:\n%s", b.String())
	}
	b.Reset()
	if (Metric{Begun: time.Now()}).WriteTo(&b); b.Len() != 0 {
		t.Errorf("a cost metric without a price:\n%s", b.String())
	}
}

func TestBudget(t *testing.T) {
	p, _ := ParsePrice("2.49")
	b, err := ParseBudget("300 usd", p)
	if err != nil || b.String() != "300.00 USD" || b.Lasts().Round(time.Second) != 120*time.Hour+28*time.Minute+55*time.Second || b.Window() != 5*time.Minute {
		t.Errorf("%v %v: lasts %v, window %v", b, err, b.Lasts(), b.Window())
	}
	if got := p.CostOf(90*time.Minute, b); got != "3.74 of 300.00 USD" {
		t.Errorf("costOf %q", got)
	}
	if got := p.CostOf(90*time.Minute, Budget{}); got != "3.74 USD" {
		t.Errorf("costOf without a budget %q", got)
	}
	var m strings.Builder
	Metric{p, time.Now(), b}.WriteTo(&m)
	if !strings.Contains(m.String(), "\ngpurent_cost{currency=\"USD\"} 0.0") || !strings.Contains(m.String(), "\ngpurent_budget{currency=\"USD\"} 300.0000\n") || !strings.Contains(m.String(), "\ngpurent_budget_spent{currency=\"USD\"} 0.0") {
		t.Errorf("metrics with a budget:\n%s", m.String())
	}
	// 120 of 300 spent by earlier sessions: 180 left, the same window.
	b.Before = 120
	if b.Lasts().Round(time.Second) != 72*time.Hour+17*time.Minute+21*time.Second || b.Window() != 5*time.Minute || b.Until(240) != b.Lasts()*2/3 {
		t.Errorf("with 120 spent before: lasts %v, window %v, 80%% at %v", b.Lasts(), b.Window(), b.Until(240))
	}
	if got := p.CostOf(90*time.Minute, b); got != "123.73 of 300.00 USD" {
		t.Errorf("costOf with 120 spent before %q", got)
	}
	m.Reset()
	Metric{p, time.Now(), b}.WriteTo(&m)
	if !strings.Contains(m.String(), "\ngpurent_budget_spent{currency=\"USD\"} 120.0") {
		t.Errorf("metrics with 120 spent before:\n%s", m.String())
	}
	if b.Before = 400; b.Lasts() != 0 || b.Until(240) != 0 {
		t.Errorf("overspent: lasts %v, 80%% at %v", b.Lasts(), b.Until(240))
	}
	// A budget of centuries is capped, not an overflowed Duration.
	if b, _ := ParseBudget("1e12", p); b.Lasts() != 1e5*time.Hour {
		t.Errorf("lasts %v", b.Lasts())
	}
}

// Whatever --price or --budget holds, parsing never panics, and what it
// takes is a positive, finite amount in a known currency that prints back
// as it parses.
func FuzzParseAmount(f *testing.F) {
	for _, s := range []string{"2.49", "18CNY/h", "300 usd", "-4", "1e400", "NaN", "Inf", "0x1p3EUR", " 7 ", "3USDUSD"} {
		f.Add(s)
	}
	usd, _ := ParsePrice("2.49")
	f.Fuzz(func(t *testing.T, s string) {
		if p, err := ParsePrice(s); err == nil {
			if !(p.Amount > 0 && p.Amount <= 1e6) || !catalog.IsCurrency(p.Currency) {
				t.Fatalf("ParsePrice(%q) = %+v", s, p)
			}
			if again, err := ParsePrice(p.String()); err != nil || again != p {
				t.Fatalf("ParsePrice(%q) = %v, which parses back as %+v, %v", s, p, again, err)
			}
		}
		if b, err := ParseBudget(s, usd); err == nil {
			if !(b.Amount > 0) || math.IsInf(b.Amount, 0) || b.Price.Currency != "USD" || b.Lasts() <= 0 || b.Window() <= 0 && b.Lasts() >= 10 {
				t.Fatalf("ParseBudget(%q) = %+v: lasts %v, window %v", s, b, b.Lasts(), b.Window())
			}
		}
	})
}
