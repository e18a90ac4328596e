package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/catalog"
	"github.com/gpurent/gpurent/internal/supervise"
)

func TestParsePrice(t *testing.T) {
	for in, want := range map[string]string{"2.49": "2.49 USD/h", "2.49USD": "2.49 USD/h", "18 CNY": "18 CNY/h", "18cny/h": "18 CNY/h", " 0.5 eur ": "0.5 EUR/h"} {
		p, err := parsePrice(in)
		if err != nil || p.String() != want {
			t.Errorf("parsePrice(%q) = %v, %v; want %s", in, p, err, want)
		}
	}
	for _, in := range []string{"", "abc", "-1", "0", "2.49 dollars", "USD", "1e9", "2.49 US"} {
		if p, err := parsePrice(in); err == nil {
			t.Errorf("parsePrice(%q) = %v, want an error", in, p)
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
		p, err := offerPrice(offers, in)
		if got := p.String() + ", " + p.from; err != nil || got != want {
			t.Errorf("offerPrice(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for in, want := range map[string]string{
		"od-only:spot": "offer od-only states no spot price in the catalog",
		"sub-only":     "offer sub-only states no on-demand price in the catalog",
		"both:month":   "want :spot (or nothing, for its on-demand price), got :month",
		"bothh":        `no offer has id "bothh" (did you mean "both"?)`,
	} {
		if p, err := offerPrice(offers, in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("offerPrice(%q) = %v, %v; want an error with %q", in, p, err, want)
		}
	}
	if !looksLikeOffer(" aws-p5.4xlarge") || looksLikeOffer("2.49USD") || looksLikeOffer("") {
		t.Error("looksLikeOffer")
	}

	p, _ := parsePrice("2.5")
	if c := p.cost(90 * time.Minute); c != "3.75 USD" {
		t.Errorf("cost %s", c)
	}
	if c := (hourlyPrice{}).cost(time.Hour); c != "" {
		t.Errorf("no price, cost %q", c)
	}
	var b strings.Builder
	costMetric{p, time.Now().Add(-90 * time.Minute)}.WriteTo(&b)
	if !strings.Contains(b.String(), "gpurent_cost{currency=\"USD\"} 3.75") {
		t.Errorf("metric:\n%s", b.String())
	}
	b.Reset()
	if (costMetric{begun: time.Now()}).WriteTo(&b); b.Len() != 0 {
		t.Errorf("a cost metric without a price:\n%s", b.String())
	}
	s := supervise.Snapshot{ChildUp: true}
	if got := statusText(s, "", "3.75 USD", 0); !strings.HasSuffix(got, " · ≈ 3.75 USD") {
		t.Errorf("status %q", got)
	}
	if got := progressText(s, 90*time.Minute, "3.75 USD"); !strings.HasSuffix(got, "; about 3.75 USD so far") {
		t.Errorf("progress %q", got)
	}
}

// With --price the end says what the machine cost while gpurent ran, and
// what that leaves out; a bad price is bad input.
func TestRunPrice(t *testing.T) {
	dir := t.TempDir()
	code, _, stderr := gpurent(t, "run", "--ckpt-dir", dir, "--preemption", "none", "--no-status", "--price", "18CNY", "--", "sleep", "1")
	if code != 0 || !strings.Contains(stderr, "gpurent: the machine cost about 0.0") ||
		!strings.Contains(stderr, " CNY while gpurent ran (") || !strings.Contains(stderr, "at 18 CNY/h; storage, egress and the provider's rounding are not in it") {
		t.Errorf("exit %d\n%s", code, stderr)
	}
	code, _, stderr = gpurent(t, "run", "--ckpt-dir", dir, "--preemption", "none", "--price", "2.49 dollars", "--", "true")
	if code != 2 || !strings.Contains(stderr, `--price: want the machine's hourly price such as 2.49, 2.49USD or 18CNY, got "2.49 dollars"`) {
		t.Errorf("bad price: exit %d\n%s", code, stderr)
	}
	// A word is an offer's id: one the catalog lacks is bad input too.
	code, _, stderr = gpurent(t, "run", "--ckpt-dir", dir, "--preemption", "none", "--price", "cheap", "--", "true")
	if code != 2 || !strings.Contains(stderr, `--price: no offer has id "cheap"`) || !strings.Contains(stderr, "(or give the machine's hourly price, such as 2.49 or 18CNY)") {
		t.Errorf("no such offer: exit %d\n%s", code, stderr)
	}
	cfg := filepath.Join(dir, "run.yaml")
	os.WriteFile(cfg, []byte("ckpt_dir: out\nprice: nope\ncommand: [true]\n"), 0o600)
	code, _, stderr = gpurent(t, "run", "--config", cfg, "--preemption", "none")
	if code != 2 || !strings.Contains(stderr, "run.yaml:2") || !strings.Contains(stderr, `no offer has id "nope"`) {
		t.Errorf("bad price in the config: exit %d\n%s", code, stderr)
	}
	// The offer's own price, and the end says whose it is.
	code, _, stderr = gpurent(t, "run", "--ckpt-dir", dir, "--preemption", "none", "--no-status", "--price", "aws-p5.4xlarge", "--", "true")
	if code != 0 || !strings.Contains(stderr, "gpurent: the cost shown is at ") || !strings.Contains(stderr, "USD/h, aws-p5.4xlarge's on-demand price in the catalog (as of ") {
		t.Errorf("priced by an offer: exit %d\n%s", code, stderr)
	}
}
