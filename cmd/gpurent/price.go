//go:build unix

package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/gpurent/gpurent/internal/catalog"
	"github.com/gpurent/gpurent/internal/ledger"
)

// hourlyPrice is what the machine costs an hour, as --price gives it: the
// list price, which is what a person knows at hand. The bill also has
// storage, egress and the provider's rounding, which gpurent quote
// itemizes; run says so where it shows the cost.
type hourlyPrice struct {
	amount   float64
	currency string
	// from says where a price taken from the catalog comes from ("aws-
	// p5.4xlarge's on-demand price in the catalog, as of ..."); empty for
	// a price given as a number.
	from string
}

// offerPrice reads --price given as a catalog offer's id, the one quote
// ranked: "ID" is its on-demand price, "ID:spot" its spot price, each per
// instance in the offer's currency. A price the catalog does not know is
// an error, never 0.
func offerPrice(offers []catalog.Offer, s string) (hourlyPrice, error) {
	id, plan, _ := strings.Cut(strings.TrimSpace(s), ":")
	o, err := catalog.ByID(offers, id)
	if err != nil {
		return hourlyPrice{}, fmt.Errorf("%v (or give the machine's hourly price, such as 2.49 or 18CNY)", err)
	}
	var fee catalog.Fee
	switch strings.ToLower(plan) {
	case "", "on_demand", "ondemand":
		plan, fee = "on-demand", o.OnDemand.Hourly
	case "spot":
		if o.Spot != nil {
			fee = o.Spot.Hourly
		}
	default:
		return hourlyPrice{}, fmt.Errorf("%q: after the offer's id, want :spot (or nothing, for its on-demand price), got :%s", s, plan)
	}
	v, ok := fee.Value()
	if !ok || v <= 0 {
		return hourlyPrice{}, fmt.Errorf("offer %s states no %s price in the catalog: give the hourly price you pay, such as 2.49 or 18CNY", o.ID, plan)
	}
	return hourlyPrice{amount: v, currency: o.Currency, from: fmt.Sprintf("%s's %s price in the catalog (as of %s)", o.ID, plan, o.AsOf)}, nil
}

// looksLikeOffer: --price text that begins with a letter names an offer;
// a price begins with its number.
func looksLikeOffer(s string) bool {
	s = strings.TrimSpace(s)
	return s != "" && (s[0] >= 'a' && s[0] <= 'z' || s[0] >= 'A' && s[0] <= 'Z')
}

// parsePrice reads "2.49", "2.49USD", "18 CNY" or "18CNY/h" (a bare
// number is USD).
func parsePrice(s string) (hourlyPrice, error) {
	v, cur, ok := parseAmount(strings.TrimSuffix(strings.TrimSpace(s), "/h"), "USD")
	if !ok || v > 1e6 {
		return hourlyPrice{}, fmt.Errorf("want the machine's hourly price such as 2.49, 2.49USD or 18CNY, got %q", s)
	}
	return hourlyPrice{amount: v, currency: cur}, nil
}

// budget is --budget: the most the machine may cost while gpurent runs,
// at --price, in its currency.
type budget struct {
	amount float64
	price  hourlyPrice
	// before is what the run cost in gpurent's earlier sessions, here and
	// with a store on other machines (its ledger): it counts against
	// amount.
	before float64
}

// parseBudget reads --budget "300" (in price's currency), "300USD" or
// "2000 CNY"; a currency other than the price's is refused rather than
// converted at a rate the user did not choose.
func parseBudget(s string, price hourlyPrice) (budget, error) {
	if price.amount == 0 {
		return budget{}, fmt.Errorf("needs --price: the budget is spent at the machine's hourly price")
	}
	v, cur, ok := parseAmount(s, price.currency)
	if !ok {
		return budget{}, fmt.Errorf("want the most the machine may cost, such as 300 or 300%s, got %q", price.currency, s)
	}
	if cur != price.currency {
		return budget{}, fmt.Errorf("%q is in %s, and --price in %s (%s): give both in one currency", s, cur, price.currency, price)
	}
	return budget{amount: v, price: price}, nil
}

// lasts is how long what is left of the budget lasts at its price: what
// earlier sessions spent is gone.
func (b budget) lasts() time.Duration { return b.until(b.amount) }

// until is how long into this session the run has cost x in all, earlier
// sessions included; 0 when it has already.
func (b budget) until(x float64) time.Duration {
	h := max(x-b.before, 0) / b.price.amount
	if h > 1e5 { // over 11 years: as good as no limit, and within a Duration
		h = 1e5
	}
	return time.Duration(h * float64(time.Hour))
}

// window is how long before the budget is spent the command is asked for
// its checkpoint: what it takes to write one, within the budget rather
// than beyond it. A tenth of the whole budget's time for a short one.
func (b budget) window() time.Duration {
	whole := b
	whole.before = 0
	return min(5*time.Minute, whole.lasts()/10)
}

// spentBy is what counts against the budget d into this session: the
// earlier sessions' cost and this one's, "296.10 USD".
func (b budget) spentBy(d time.Duration) string {
	return fmt.Sprintf("%.2f %s", b.before+b.price.amount*d.Hours(), b.price.currency)
}

// String is "300.00 USD".
func (b budget) String() string {
	return fmt.Sprintf("%.2f %s", b.amount, b.price.currency)
}

func (p hourlyPrice) String() string {
	return strconv.FormatFloat(p.amount, 'f', -1, 64) + " " + p.currency + "/h"
}

// cost is what d costs at p, "12.40 USD"; "" without a price.
func (p hourlyPrice) cost(d time.Duration) string {
	if p.amount == 0 {
		return ""
	}
	return fmt.Sprintf("%.2f %s", p.amount*d.Hours(), p.currency)
}

// costOf is cost with the budget it counts against, earlier sessions'
// cost included: "12.40 of 300.00 USD"; cost's without one.
func (p hourlyPrice) costOf(d time.Duration, b budget) string {
	if p.amount == 0 || b.amount == 0 {
		return p.cost(d)
	}
	return fmt.Sprintf("%.2f of %.2f %s", b.before+p.amount*d.Hours(), b.amount, p.currency)
}

// spent is the end's line: the cost of the time gpurent ran, and what it
// leaves out.
func (p hourlyPrice) spent(d time.Duration) string {
	at := p.String()
	if p.from != "" {
		at += ", " + p.from
	}
	return fmt.Sprintf("the machine cost about %s while gpurent ran (%s at %s; storage, egress and the provider's rounding are not in it: gpurent quote itemizes them), and bills on until it is stopped",
		p.cost(d), shortDur(d), at)
}

// costMetric is --metrics' gauge of what the machine has cost since
// begun, and with --budget the budget beside it, so that an alert can
// compare them; nothing without a price.
type costMetric struct {
	price  hourlyPrice
	begun  time.Time
	budget budget
}

func (c costMetric) WriteTo(w io.Writer) (int64, error) {
	if c.price.amount == 0 {
		return 0, nil
	}
	n, err := fmt.Fprintf(w, "# HELP gpurent_cost What the machine has cost since gpurent started, at --price (the hourly price alone).\n# TYPE gpurent_cost gauge\ngpurent_cost{currency=%q} %.4f\n",
		c.price.currency, c.price.amount*time.Since(c.begun).Hours())
	if err != nil || c.budget.amount == 0 {
		return int64(n), err
	}
	m, err := fmt.Fprintf(w, "# HELP gpurent_budget --budget: gpurent stops the command with a checkpoint before gpurent_budget_spent reaches it.\n# TYPE gpurent_budget gauge\ngpurent_budget{currency=%q} %.4f\n"+
		"# HELP gpurent_budget_spent What counts against --budget: gpurent_cost and what the run cost in gpurent's earlier sessions, here and (with a store) elsewhere.\n# TYPE gpurent_budget_spent gauge\ngpurent_budget_spent{currency=%q} %.4f\n",
		c.budget.price.currency, c.budget.amount, c.budget.price.currency, c.budget.before+c.price.amount*time.Since(c.begun).Hours())
	return int64(n + m), err
}

// spendRecorder is where a session's spend record goes beside the
// ledger file: the store, so that a budget follows the run to another
// machine.
type spendRecorder interface {
	PutSpend(ctx context.Context, run, session string, record []byte) error
}

// recordSpend keeps the run's ledger as this session spends at price:
// at once, every every, and once more when the returned func is called at
// the end; with st, the session's record goes there too, every storeEvery
// and at the end. A ledger or a store that cannot be written is said once,
// and once more when it can again; the run goes on, since only a later
// session's count depends on it.
func recordSpend(ctx context.Context, led *ledger.Ledger, st spendRecorder, run string, price hourlyPrice, begun time.Time, every, storeEvery time.Duration, logf func(string, ...any)) (stop func()) {
	ctx = context.WithoutCancel(ctx) // the end's record is written after a signal too
	var failing [2]bool              // the file, the store
	say := func(i int, err error, what string) {
		switch {
		case err != nil && !failing[i]:
			logf("warning: %v: %s", err, what)
		case err == nil && failing[i]:
			logf("the record of what this session costs is written again")
		}
		failing[i] = err != nil
	}
	var stored time.Time
	record := func(now time.Time, last bool) {
		rec, err := led.Record(price.amount*now.Sub(begun).Hours(), now)
		say(0, err, "a gpurent started again here would not count this session's cost")
		if st == nil || rec == nil || !last && now.Sub(stored) < storeEvery {
			return
		}
		pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		err = st.PutSpend(pctx, run, led.Session(), rec)
		say(1, err, "the store would not know this session's cost (a budget on another machine, ckpt runs)")
		if err == nil {
			stored = now
		}
	}
	record(time.Now(), true)
	tick := time.NewTicker(every)
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		for {
			select {
			case <-done:
				return
			case now := <-tick.C:
				record(now, false)
			}
		}
	}()
	return func() {
		tick.Stop()
		close(done)
		<-finished
		record(time.Now(), true)
	}
}
