package money

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/gpurent/gpurent/internal/catalog"
	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/report"
)

// Hourly is what the machine costs an hour, as --price gives it: the
// list price, which is what a person knows at hand. The bill also has
// storage, egress and the provider's rounding, which gpurent quote
// itemizes; run says so where it shows the cost.
type Hourly struct {
	Amount   float64
	Currency string
	// From says where a price taken from the catalog comes from ("aws-
	// p5.4xlarge's on-demand price in the catalog, as of ..."); empty for
	// a price given as a number.
	From string
}

// OfferPrice reads --price given as a catalog offer's id, the one quote
// ranked: "ID" is its on-demand price, "ID:spot" its spot price, each per
// instance in the offer's currency. A price the catalog does not know is
// an error, never 0.
func OfferPrice(offers []catalog.Offer, s string) (Hourly, error) {
	id, plan, _ := strings.Cut(strings.TrimSpace(s), ":")
	o, err := catalog.ByID(offers, id)
	if err != nil {
		return Hourly{}, i18n.Errorf("%v (or give the machine's hourly price, such as 2.49 or 18CNY)", err)
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
		return Hourly{}, i18n.Errorf("%q: after the offer's id, want :spot (or nothing, for its on-demand price), got :%s", s, plan)
	}
	v, ok := fee.Value()
	if !ok || v <= 0 {
		return Hourly{}, i18n.Errorf("offer %s states no %s price in the catalog: give the hourly price you pay, such as 2.49 or 18CNY", o.ID, plan)
	}
	return Hourly{Amount: v, Currency: o.Currency, From: fmt.Sprintf("%s's %s price in the catalog (as of %s)", o.ID, plan, o.AsOf)}, nil
}

// LooksLikeOffer: --price text that begins with a letter names an offer;
// a price begins with its number.
func LooksLikeOffer(s string) bool {
	s = strings.TrimSpace(s)
	return s != "" && (s[0] >= 'a' && s[0] <= 'z' || s[0] >= 'A' && s[0] <= 'Z')
}

// ParsePrice reads "2.49", "2.49USD", "18 CNY" or "18CNY/h" (a bare
// number is USD).
func ParsePrice(s string) (Hourly, error) {
	v, cur, ok := ParseAmount(strings.TrimSuffix(strings.TrimSpace(s), "/h"), "USD")
	if !ok || v > 1e6 {
		return Hourly{}, i18n.Errorf("want the machine's hourly price such as 2.49, 2.49USD or 18CNY, got %q", s)
	}
	return Hourly{Amount: v, Currency: cur}, nil
}

// Budget is --budget: the most the machine may cost while gpurent runs,
// at --price, in its currency.
type Budget struct {
	Amount float64
	Price  Hourly
	// Before is what the run cost in gpurent's earlier sessions, here and
	// with a store on other machines (its ledger): it counts against
	// amount.
	Before float64
}

// ParseBudget reads --budget "300" (in price's currency), "300USD" or
// "2000 CNY"; a currency other than the price's is refused rather than
// converted at a rate the user did not choose.
func ParseBudget(s string, price Hourly) (Budget, error) {
	if price.Amount == 0 {
		return Budget{}, i18n.Errorf("needs --price: the budget is spent at the machine's hourly price")
	}
	v, cur, ok := ParseAmount(s, price.Currency)
	if !ok {
		return Budget{}, i18n.Errorf("want the most the machine may cost, such as 300 or 300%s, got %q", price.Currency, s)
	}
	if cur != price.Currency {
		return Budget{}, i18n.Errorf("%q is in %s, and --price in %s (%s): give both in one currency", s, cur, price.Currency, price)
	}
	return Budget{Amount: v, Price: price}, nil
}

// Lasts is how long what is left of the budget lasts at its price: what
// earlier sessions spent is gone.
func (b Budget) Lasts() time.Duration { return b.Until(b.Amount) }

// Until is how long into this session the run has cost x in all, earlier
// sessions included; 0 when it has already.
func (b Budget) Until(x float64) time.Duration {
	h := max(x-b.Before, 0) / b.Price.Amount
	if h > 1e5 { // over 11 years: as good as no limit, and within a Duration
		h = 1e5
	}
	return time.Duration(h * float64(time.Hour))
}

// Window is how long before the budget is spent the command is asked for
// its checkpoint: what it takes to write one, within the budget rather
// than beyond it. A tenth of the whole budget's time for a short one.
func (b Budget) Window() time.Duration {
	whole := b
	whole.Before = 0
	return min(5*time.Minute, whole.Lasts()/10)
}

// SpentBy is what counts against the budget d into this session: the
// earlier sessions' cost and this one's, "296.10 USD".
func (b Budget) SpentBy(d time.Duration) string {
	return fmt.Sprintf("%.2f %s", b.Before+b.Price.Amount*d.Hours(), b.Price.Currency)
}

// String is "300.00 USD".
func (b Budget) String() string {
	return fmt.Sprintf("%.2f %s", b.Amount, b.Price.Currency)
}

func (p Hourly) String() string {
	return strconv.FormatFloat(p.Amount, 'f', -1, 64) + " " + p.Currency + "/h"
}

// Cost is what d costs at p, "12.40 USD"; "" without a price.
func (p Hourly) Cost(d time.Duration) string {
	if p.Amount == 0 {
		return ""
	}
	return fmt.Sprintf("%.2f %s", p.Amount*d.Hours(), p.Currency)
}

// CostOf is cost with the budget it counts against, earlier sessions'
// Cost included: "12.40 of 300.00 USD"; cost's without one.
func (p Hourly) CostOf(d time.Duration, b Budget) string {
	if p.Amount == 0 || b.Amount == 0 {
		return p.Cost(d)
	}
	return fmt.Sprintf("%.2f of %.2f %s", b.Before+p.Amount*d.Hours(), b.Amount, p.Currency)
}

// Spent is the end's line: the cost of the time gpurent ran, and what it
// leaves out.
func (p Hourly) Spent(d time.Duration) i18n.Text {
	at := p.String()
	if p.From != "" {
		at += ", " + p.From
	}
	return i18n.Textf("the machine cost about %s while gpurent ran (%s at %s; storage, egress and the provider's rounding are not in it: gpurent quote itemizes them), and bills on until it is stopped",
		p.Cost(d), report.Duration(d), at)
}

// Metric is --metrics' gauge of what the machine has cost since
// begun, and with --budget the budget beside it, so that an alert can
// compare them; nothing without a price.
type Metric struct {
	Price  Hourly
	Begun  time.Time
	Budget Budget
}

func (c Metric) WriteTo(w io.Writer) (int64, error) {
	if c.Price.Amount == 0 {
		return 0, nil
	}
	n, err := fmt.Fprintf(w, "# HELP gpurent_cost What the machine has cost since gpurent started, at --price (the hourly price alone).\n# TYPE gpurent_cost gauge\ngpurent_cost{currency=%q} %.4f\n",
		c.Price.Currency, c.Price.Amount*time.Since(c.Begun).Hours())
	if err != nil || c.Budget.Amount == 0 {
		return int64(n), err
	}
	m, err := fmt.Fprintf(w, "# HELP gpurent_budget --budget: gpurent stops the command with a checkpoint before gpurent_budget_spent reaches it.\n# TYPE gpurent_budget gauge\ngpurent_budget{currency=%q} %.4f\n"+
		"# HELP gpurent_budget_spent What counts against --budget: gpurent_cost and what the run cost in gpurent's earlier sessions, here and (with a store) elsewhere.\n# TYPE gpurent_budget_spent gauge\ngpurent_budget_spent{currency=%q} %.4f\n",
		c.Budget.Price.Currency, c.Budget.Amount, c.Budget.Price.Currency, c.Budget.Before+c.Price.Amount*time.Since(c.Begun).Hours())
	return int64(n + m), err
}
