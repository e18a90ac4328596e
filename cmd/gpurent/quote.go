package main

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpurent/gpurent/internal/billing"
	"github.com/gpurent/gpurent/internal/report"
)

func newQuote(g *globals) *cobra.Command {
	var t taskFlags
	var top int
	var budgetText string
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
				v, cur, ok := parseAmount(budgetText, currencyCode(t.currency))
				if !ok {
					return usagef("--budget: want what the task may cost in all, such as 500, 3500CNY or ¥3500, got %s", quoteShort(budgetText))
				}
				if cmd.Flags().Changed("currency") && cur != currencyCode(t.currency) {
					return usagef("--budget: %q is in %s, and --currency %s: give one currency", budgetText, cur, t.currency)
				}
				if v < 0.01 || v > 1e12 {
					return usagef("--budget: want from 0.01 to a trillion, got %s", quoteShort(budgetText))
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
				return writeAfford(g.stdout, p, t.spanGiven, r)
			}
			q, err := billing.Make(p, offers, cat.Rates, opt)
			if err != nil {
				return err
			}
			cheapest := math.Inf(1)
			if len(q.Bills) > 0 {
				cheapest = q.Bills[0].Total
			}
			if n := billing.VariantNote(p, t.variants, cat.Rates, opt, cheapest); n != "" {
				q.Notes = append(q.Notes, n)
			}
			q.Top(top)
			if g.output == report.JSON {
				return report.WriteJSON(g.stdout, q)
			}
			return writeQuote(g.stdout, p, q)
		},
	}
	t.register(cmd.Flags())
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

func writeQuote(w io.Writer, p *billing.Profile, q *billing.Quote) error {
	gpu := gpuLabel(p)
	egress := trim(p.EgressGB) + " GB egress"
	if _, up := p.Uploads(); up > 0 {
		egress += fmt.Sprintf(" + %s GB of checkpoint uploads", trim(up))
	}
	fmt.Fprintf(w, "%s h on %s x%d over %s, %s, %s GB disk, %s; amounts in %s\n\n",
		trim(p.ComputeHours), gpu, p.GPUs, report.Count(p.SpanDays, "day"), report.Count(p.Starts, "start"), trim(p.DiskGB), egress, q.Currency)
	tab := report.NewTab("#", "OFFER", "PROVIDER", "GPU", "INST", "PLAN", "TOTAL", "PER GPU-H", "LIST", "HIDDEN", "COMPUTE", "STORAGE", "EGRESS", "BOOT", "IP", "UNKNOWN", "DETAIL")
	below := 0
	for i, b := range q.Bills {
		warn := "-"
		if len(b.Unknown) > 0 {
			warn = fmt.Sprint(len(b.Unknown))
		}
		// A plan below the list price hides nothing from it: a share of
		// -469.6% "hidden" would read as nonsense (the JSON keeps it).
		hidden := atLeast(b, report.Percent(b.HiddenShare))
		if b.HiddenShare < 0 {
			hidden, below = "-", below+1
		}
		tab.Row(fmt.Sprint(i+1), offerCell(b), b.Provider, fmt.Sprintf("%s x%d", b.GPU, b.GPUs), fmt.Sprint(b.Instances), b.Plan,
			atLeast(b, report.Money(b.Total)), atLeast(b, perGPUHour(b.PerGPUHour)), report.Money(b.ListTotal), hidden,
			report.Money(b.Items[0].Amount), report.Money(b.Items[1].Amount), report.Money(b.Items[2].Amount),
			report.Money(b.Items[3].Amount), report.Money(b.Items[4].Amount), warn, b.Detail)
	}
	if err := tab.Write(w); err != nil {
		return err
	}
	if below > 0 {
		fmt.Fprintf(w, "\nHIDDEN is - on %s that cost less than LIST, the on-demand price × hours (spot, a subscription): their TOTAL is the whole bill all the same\n",
			report.Count(below, "row"))
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
func writeAfford(w io.Writer, p *billing.Profile, spanGiven bool, r *billing.Reach) error {
	gpu := gpuLabel(p)
	span := "run back to back"
	if spanGiven {
		span = "over " + report.Count(p.SpanDays, "day")
	}
	fmt.Fprintf(w, "what %s %s buys of %s x%d, %s, %s, %s GB disk, %s GB egress: the most compute hours whose whole bill fits\n\n",
		report.Money(r.Budget), r.Currency, gpu, p.GPUs, span, report.Count(p.Starts, "start"), trim(p.DiskGB), trim(p.EgressGB))
	tab := report.NewTab("#", "OFFER", "PROVIDER", "GPU", "INST", "PLAN", "HOURS", "TOTAL", "COMPUTE", "STORAGE", "EGRESS", "BOOT", "IP", "UNKNOWN", "DETAIL")
	bills := make([]billing.Bill, len(r.Plans))
	for i, a := range r.Plans {
		b := a.Bill
		bills[i] = b
		warn := "-"
		if len(b.Unknown) > 0 {
			warn = fmt.Sprint(len(b.Unknown))
		}
		tab.Row(fmt.Sprint(i+1), offerCell(b), b.Provider, fmt.Sprintf("%s x%d", b.GPU, b.GPUs), fmt.Sprint(b.Instances), b.Plan,
			atMost(b, trim(math.Floor(a.Hours*100+1e-9)/100)), atLeast(b, report.Money(b.Total)), // never more than was found
			report.Money(b.Items[0].Amount), report.Money(b.Items[1].Amount), report.Money(b.Items[2].Amount),
			report.Money(b.Items[3].Amount), report.Money(b.Items[4].Amount), warn, b.Detail)
	}
	if err := tab.Write(w); err != nil {
		return err
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
