package main

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpurent/gpurent/internal/billing"
	"github.com/gpurent/gpurent/internal/money"
	"github.com/gpurent/gpurent/internal/report"
)

func newQuote(g *globals) *cobra.Command {
	var t taskFlags
	var top int
	var budgetText string
	var wide bool
	cmd := &cobra.Command{
		Use:   "quote",
		Short: "The itemized bill of your task on every offer, cheapest first",
		Long: `quote prices your task on every offer of the GPU and every plan (on demand,
subscription, spot), with every fee: compute rounded the provider's way, storage
while running and while stopped, egress, boot fees and IP addresses. list_total is
what the price page suggests (hourly price x hours); hidden is the share of the
real total it leaves out. A fee no source confirmed is computed as 0 and named.

--budget instead of --hours asks the other way round: the most compute hours
each plan gives within the budget, with the bill at those hours.`,
		Example: `  gpurent quote --gpu "RTX 4090" --hours 300
  gpurent quote --gpu H100 --gpus 8 --hours 200 --days 30 --starts 10 --disk 500 --egress 200
  gpurent quote --profile task.yaml --currency CNY -o json
  gpurent quote --gpu "RTX 4090" --budget 3500CNY --days 30 --starts 10 --disk 200`,
		Args: args(noArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if top < 0 {
				return usagef("--top: want 0 (all) or more, got %d", top)
			}
			var budget float64
			if budgetText != "" {
				v, cur, ok := money.ParseAmount(budgetText, money.CurrencyCode(t.currency))
				if !ok {
					return usagef("--budget: want what the task may cost in all, such as 500, 3500CNY or ¥3500, got %s", report.Quote(budgetText))
				}
				if cmd.Flags().Changed("currency") && cur != money.CurrencyCode(t.currency) {
					return usagef("--budget: %q is in %s, and --currency %s: give one currency", budgetText, cur, t.currency)
				}
				if v < 0.01 || v > 1e12 {
					return usagef("--budget: want from 0.01 to a trillion, got %s", report.Quote(budgetText))
				}
				budget, t.currency, t.solveHours = v, cur, true
			}
			p, offers, cat, opt, err := t.load(cmd, g)
			if err != nil {
				return err
			}
			if budget > 0 {
				r, err := billing.Afford(p, t.spanGiven, offers, cat.Rates, opt, budget)
				if err != nil {
					return err
				}
				r.Top(top)
				if g.output == report.JSON {
					return report.WriteJSON(g.stdout, r)
				}
				return writeAfford(g.stdout, p, t.spanGiven, r, wide)
			}
			q, err := billing.Make(p, offers, cat.Rates, opt)
			if err != nil {
				return err
			}
			cheapest := math.Inf(1)
			if len(q.Bills) > 0 {
				cheapest = q.Bills[0].Total
			}
			if n := billing.VariantNote(p, t.variants(p, cat.Offers), cat.Rates, opt, cheapest); n != "" {
				q.Notes = append(q.Notes, n)
			}
			q.Top(top)
			if g.output == report.JSON {
				return report.WriteJSON(g.stdout, q)
			}
			return writeQuote(g.stdout, p, q, wide)
		},
	}
	t.register(cmd.Flags())
	cmd.Flags().BoolVar(&wide, "wide", false, "show every column of the table: provider, GPU, instances, list price, boot, IP, unknown fees, detail")
	cmd.Flags().IntVar(&top, "top", 0, "show only the N cheapest bills (0: all); with --budget, the N that give the most hours")
	cmd.Flags().StringVar(&budgetText, "budget", "", "what the task may cost in all, such as 500 or 3500CNY (in --currency): instead of --hours, the most compute hours each plan gives within it, the rest of the task as given")
	return cmd
}

// gpuLabel names the GPU a table is for: "RTX 4090 (24 GB or more)".
func gpuLabel(p *billing.Profile) string {
	gpu := p.GPU
	if gpu == "" {
		gpu = "any GPU"
	}
	if p.MinGPUMemoryGB > 0 {
		gpu += fmt.Sprintf(" (%s GB or more)", trim(p.MinGPUMemoryGB))
	}
	return gpu
}

// column is one column of a table of bills: its header, whether only
// --wide shows it, and its cell for the bill on row i.
type column struct {
	head string
	wide bool
	cell func(i int, b billing.Bill) string
}

// billTable is a table of the columns shown (all with wide, else those
// that fit 120 columns).
func billTable(cols []column, wide bool, bills []billing.Bill) *report.Tab {
	var shown []column
	for _, c := range cols {
		if wide || !c.wide {
			shown = append(shown, c)
		}
	}
	heads := make([]string, len(shown))
	for i, c := range shown {
		heads[i] = c.head
	}
	tab := report.NewTab(heads...)
	for i, b := range bills {
		cells := make([]string, len(shown))
		for j, c := range shown {
			cells[j] = c.cell(i, b)
		}
		tab.Row(cells...)
	}
	return tab
}

// billColumns are the columns every table of bills shares: the row's
// offer and plan first, its items, and its unknowns and detail last.
func billColumns() (head, items, tail []column) {
	head = []column{
		{"#", false, func(i int, _ billing.Bill) string { return fmt.Sprint(i + 1) }},
		{"OFFER", false, func(_ int, b billing.Bill) string { return offerCell(b) }},
		{"PROVIDER", true, func(_ int, b billing.Bill) string { return b.Provider }},
		{"GPU", true, func(_ int, b billing.Bill) string { return fmt.Sprintf("%s x%d", b.GPU, b.GPUs) }},
		{"INST", true, func(_ int, b billing.Bill) string { return fmt.Sprint(b.Instances) }},
		{"PLAN", false, func(_ int, b billing.Bill) string { return b.Plan }},
	}
	money := func(k int) func(int, billing.Bill) string {
		return func(_ int, b billing.Bill) string { return report.Money(b.Items[k].Amount) }
	}
	items = []column{{"COMPUTE", false, money(0)}, {"STORAGE", false, money(1)}, {"EGRESS", false, money(2)}, {"BOOT", true, money(3)}, {"IP", true, money(4)}}
	tail = []column{
		{"UNKNOWN", true, func(_ int, b billing.Bill) string {
			if len(b.Unknown) == 0 {
				return "-"
			}
			return fmt.Sprint(len(b.Unknown))
		}},
		{"DETAIL", true, func(_ int, b billing.Bill) string { return b.Detail }},
	}
	return head, items, tail
}

// wideNote says what --wide adds to a table of bills.
const wideNote = "--wide adds PROVIDER, GPU, INST, LIST, BOOT, IP, UNKNOWN and DETAIL; -o json has every field"

func writeQuote(w io.Writer, p *billing.Profile, q *billing.Quote, wide bool) error {
	gpu := gpuLabel(p)
	egress := trim(p.EgressGB) + " GB egress"
	if _, up := p.Uploads(); up > 0 {
		egress += fmt.Sprintf(" + %s GB of checkpoint uploads", trim(up))
	}
	fmt.Fprintf(w, "%s h on %s x%d over %s, %s, %s GB disk, %s; amounts in %s\n\n",
		trim(p.ComputeHours), gpu, p.GPUs, report.Count(p.SpanDays, "day"), report.Count(p.Starts, "start"), trim(p.DiskGB), egress, q.Currency)
	below := 0
	for _, b := range q.Bills {
		if b.HiddenShare < 0 {
			below++
		}
	}
	head, items, tail := billColumns()
	cols := append(append(head, []column{
		{"TOTAL", false, func(_ int, b billing.Bill) string { return atLeast(b, report.Money(b.Total)) }},
		{"PER GPU-H", false, func(_ int, b billing.Bill) string { return atLeast(b, perGPUHour(b.PerGPUHour)) }},
		{"LIST", true, func(_ int, b billing.Bill) string { return report.Money(b.ListTotal) }},
		// A plan below the list price hides nothing from it: a share of
		// -469.6% "hidden" would read as nonsense (the JSON keeps it).
		{"HIDDEN", false, func(_ int, b billing.Bill) string {
			if b.HiddenShare < 0 {
				return "-"
			}
			return atLeast(b, report.Percent(b.HiddenShare))
		}},
	}...), append(items, tail...)...)
	if err := billTable(cols, wide, q.Bills).Write(w); err != nil {
		return err
	}
	if below > 0 {
		fmt.Fprintf(w, "\nHIDDEN is - on %s that cost less than LIST, the on-demand price × hours (spot, a subscription): their TOTAL is the whole bill all the same\n",
			report.Count(below, "row"))
	}
	if !wide && len(q.Bills) > 0 {
		fmt.Fprintf(w, "\n%s\n", wideNote)
	}
	writeBillNotes(w, q.Bills, q.Notes, q.Rates)
	return nil
}

// offerCell is the bill's offer, marked when it is an older reading
// priced for --history: it ranks among today's prices, and must not be
// taken for one.
func offerCell(b billing.Bill) string {
	if b.SupersededBy != "" {
		return b.Offer + " (history)"
	}
	return b.Offer
}

// perGPUHour prints a price per GPU-hour, to four places under one unit
// of money (a spot 4090 costs 0.34 an hour; its bill per GPU-hour is as
// small).
func perGPUHour(v float64) string {
	if v < 1 {
		return fmt.Sprintf("%.4f", v)
	}
	return report.Money(v)
}

// atMost marks the hours a budget buys on a bill with unknown fees as
// the most it can buy, "≤720".
func atMost(b billing.Bill, v string) string {
	if b.TotalIsLowerBound {
		return "≤" + v
	}
	return v
}

// atLeast marks a figure of a bill with unknown fees as a lower bound,
// "≥1353.60": a clean total, or "HIDDEN 0.0%", would read as a bill
// known to the cent.
func atLeast(b billing.Bill, v string) string {
	if b.TotalIsLowerBound {
		return "≥" + v
	}
	return v
}

// writeBillNotes writes what follows a table of bills: each offer's
// warnings once (the same unknown fee shows on each plan), the notes, how
// old the prices are and the exchange rates used.
func writeBillNotes(w io.Writer, bills []billing.Bill, notes, rates []string) {
	seen := map[string]bool{}
	var lines []string
	for i, b := range bills {
		for _, wn := range b.Warnings {
			key := b.Offer + "\x00" + wn
			if !seen[key] {
				seen[key] = true
				lines = append(lines, fmt.Sprintf("  #%d %s: %s", i+1, b.Offer, wn))
			}
		}
	}
	if len(lines) > 0 {
		fmt.Fprintf(w, "\nwarnings (UNKNOWN counts fees no source confirmed, computed as 0: such bills may be dearer, and their ≥ totals are the least they can be):\n%s\n", strings.Join(lines, "\n"))
	}
	for _, n := range notes {
		fmt.Fprintf(w, "\nnote: %s\n", n)
	}
	offers, ages := make([]string, len(bills)), make([]*int, len(bills))
	for i, b := range bills {
		offers[i], ages[i] = b.Offer, b.PriceAgeDays
	}
	if line := priceDates(offers, ages); line != "" {
		fmt.Fprintf(w, "prices: %s\n", line)
	}
	for _, r := range rates {
		fmt.Fprintf(w, "rate: %s\n", r)
	}
}

// writeAfford is quote --budget's table: the most hours each plan gives
// within the budget, most first, with the bill at those hours.
func writeAfford(w io.Writer, p *billing.Profile, spanGiven bool, r *billing.Reach, wide bool) error {
	gpu := gpuLabel(p)
	span := "run back to back"
	if spanGiven {
		span = "over " + report.Count(p.SpanDays, "day")
	}
	fmt.Fprintf(w, "what %s %s buys of %s x%d, %s, %s, %s GB disk, %s GB egress: the most compute hours whose whole bill fits\n\n",
		report.Money(r.Budget), r.Currency, gpu, p.GPUs, span, report.Count(p.Starts, "start"), trim(p.DiskGB), trim(p.EgressGB))
	bills := make([]billing.Bill, len(r.Plans))
	for i, a := range r.Plans {
		bills[i] = a.Bill
	}
	head, items, tail := billColumns()
	cols := append(append(head, []column{
		// Never more hours than were found within the budget.
		{"HOURS", false, func(i int, b billing.Bill) string { return atMost(b, trim(math.Floor(r.Plans[i].Hours*100+1e-9)/100)) }},
		{"TOTAL", false, func(_ int, b billing.Bill) string { return atLeast(b, report.Money(b.Total)) }},
	}...), append(items, tail...)...)
	if err := billTable(cols, wide, bills).Write(w); err != nil {
		return err
	}
	if !wide && len(bills) > 0 {
		fmt.Fprintf(w, "\n%s\n", strings.Replace(wideNote, "INST, LIST, ", "INST, ", 1))
	}
	writeBillNotes(w, bills, r.Notes, r.Rates)
	return nil
}

// priceDates sums up how old the listed offers' prices are (ages[i] is
// offers[i]'s, nil when undated): the least age their as_of dates allow,
// youngest to oldest. An undated offer carries its own warning. Empty
// when no offer is dated, or the ages were not judged (Options.Today).
func priceDates(offers []string, ages []*int) string {
	lo, hi, dated := -1, -1, 0
	seen := map[string]bool{}
	for i, o := range offers {
		if seen[o] {
			continue
		}
		seen[o] = true
		if ages[i] == nil {
			continue
		}
		age := *ages[i]
		if lo < 0 || age < lo {
			lo = age
		}
		hi = max(hi, age)
		dated++
	}
	if dated == 0 {
		return ""
	}
	span := report.Count(lo, "day")
	if hi != lo {
		span = fmt.Sprintf("%d to %s", lo, report.Count(hi, "day"))
	}
	on := fmt.Sprintf(" on %d of %d offers", dated, len(seen))
	switch {
	case len(seen) == 1:
		on = ""
	case dated == len(seen):
		on = fmt.Sprintf(" on all %d offers", dated)
	}
	return fmt.Sprintf("at least %s old%s (by the as_of dates, a month counting as its last day); prices move: confirm each at its source before ordering (gpurent catalog ls -o json lists them)", span, on)
}

func trim(v float64) string {
	s := strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.2f", v), "0"), ".")
	return s
}
