// Package render writes the results of gpurent's commands as people read
// them: the tables and the lines under them. JSON is the results' own
// (report.WriteJSON); every word a person reads comes from here, so that
// another language has one place to go.
package render

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/gpurent/gpurent/internal/billing"
	"github.com/gpurent/gpurent/internal/catalog"
	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/report"
)

// wideNote says what --wide adds to a table of bills.
const (
	wideNote       = "--wide adds PROVIDER, GPU, INST, RANGE, LIST, BOOT, IP, UNKNOWN and DETAIL; -o json has every field"
	wideNoteAfford = "--wide adds PROVIDER, GPU, INST, BOOT, IP, UNKNOWN and DETAIL; -o json has every field"
)

// gpuLabel names the GPU a table is for: "RTX 4090 (24 GB or more)".
func gpuLabel(tr *i18n.Printer, p *billing.Profile) string {
	gpu := p.GPU
	if gpu == "" {
		gpu = tr.T("any GPU")
	}
	if p.MinGPUMemoryGB > 0 {
		gpu += tr.Tf(" (%s GB or more)", trim(p.MinGPUMemoryGB))
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
func billTable(tr *i18n.Printer, cols []column, wide bool, bills []billing.Bill) *report.Tab {
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
func billColumns(tr *i18n.Printer) (head, items, tail []column) {
	head = []column{
		{"#", false, func(i int, _ billing.Bill) string { return fmt.Sprint(i + 1) }},
		{tr.T("OFFER"), false, func(_ int, b billing.Bill) string { return offerCell(tr, b) }},
		{tr.T("PROVIDER"), true, func(_ int, b billing.Bill) string { return b.Provider }},
		{tr.T("GPU"), true, func(_ int, b billing.Bill) string { return fmt.Sprintf("%s x%d", b.GPU, b.GPUs) }},
		{tr.T("INST"), true, func(_ int, b billing.Bill) string { return fmt.Sprint(b.Instances) }},
		{tr.T("PLAN"), false, func(_ int, b billing.Bill) string { return planName(tr, b.Plan) }},
	}
	money := func(k int) func(int, billing.Bill) string {
		return func(_ int, b billing.Bill) string {
			if b.EstimatedItem(k) {
				return "≈" + report.Money(b.Estimate.Items[k].Amount)
			}
			return report.Money(b.Items[k].Amount)
		}
	}
	items = []column{{tr.T("COMPUTE"), false, money(0)}, {tr.T("STORAGE"), false, money(1)}, {tr.T("EGRESS"), false, money(2)}, {tr.T("BOOT"), true, money(3)}, {tr.T("IP"), true, money(4)}}
	tail = []column{
		{tr.T("UNKNOWN"), true, func(_ int, b billing.Bill) string {
			if len(b.Unknown) == 0 {
				return "-"
			}
			return fmt.Sprint(len(b.Unknown))
		}},
		{tr.T("DETAIL"), true, func(_ int, b billing.Bill) string { return tr.Text(b.Detail) }},
	}
	return head, items, tail
}

// Quote is quote's table of bills, cheapest first, with the notes
// behind them; wide shows every column.
func Quote(w io.Writer, tr *i18n.Printer, p *billing.Profile, q *billing.Quote, wide bool) error {
	gpu := gpuLabel(tr, p)
	egress := tr.Tf("%s GB egress", trim(p.EgressGB))
	if _, up := p.Uploads(); up > 0 {
		egress += tr.Tf(" + %s GB of checkpoint uploads", trim(up))
	}
	if q.Reference != "" {
		tr.Fprintf(w, "the work of %s h on %s, on %s x%d, %s, %s GB disk, %s; amounts in %s\n\n",
			trim(p.ComputeHours), q.Reference, gpu, p.GPUs, starts(tr, p.Starts), trim(p.DiskGB), egress, currencyName(tr, q.Currency))
	} else {
		tr.Fprintf(w, "%s h on %s x%d over %s, %s, %s GB disk, %s; amounts in %s\n\n",
			trim(p.ComputeHours), gpu, p.GPUs, days(tr, p.SpanDays), starts(tr, p.Starts), trim(p.DiskGB), egress, currencyName(tr, q.Currency))
	}
	below := 0
	for _, b := range q.Bills {
		if b.HiddenShare < 0 {
			below++
		}
	}
	head, items, tail := billColumns(tr)
	if p.GPUsPerNode > 0 {
		// Whole machines: how many, and what joins their GPUs.
		head = append(head, column{tr.T("MACHINES"), false, func(_ int, b billing.Bill) string { return fmt.Sprint(b.Instances) }},
			column{tr.T("LINK"), false, func(_ int, b billing.Bill) string {
				if b.Interconnect == "" {
					return "?"
				}
				return b.Interconnect
			}})
	}
	if q.Reference != "" {
		// The hours differ from offer to offer: each GPU's for the work.
		head = append(head, column{tr.T("HOURS"), false, func(_ int, b billing.Bill) string { return trim(math.Round(b.Hours*10) / 10) }})
	}
	cols := append(append(head, []column{
		{tr.T("TOTAL"), false, func(_ int, b billing.Bill) string { return total(b) }},
		// An estimate's range: its unknown fees at the least and the most
		// the catalog's other offers state.
		{tr.T("RANGE"), true, func(_ int, b billing.Bill) string {
			if e := b.Estimate; e != nil {
				return report.Money(e.Low) + "-" + report.Money(e.High)
			}
			return "-"
		}},
		{tr.T("PER GPU-H"), false, func(_ int, b billing.Bill) string {
			if e := b.Estimate; e != nil && b.Total > 0 {
				return b.BeyondEstimate() + "≈" + perGPUHour(b.PerGPUHour*e.Total/b.Total)
			}
			return atLeast(b, perGPUHour(b.PerGPUHour))
		}},
		{tr.T("LIST"), true, func(_ int, b billing.Bill) string { return report.Money(b.ListTotal) }},
		// A plan below the list price hides nothing from it: a share of
		// -469.6% "hidden" would read as nonsense (the JSON keeps it).
		{tr.T("HIDDEN"), false, func(_ int, b billing.Bill) string {
			if b.HiddenShare < 0 {
				return "-"
			}
			return atLeast(b, report.Percent(b.HiddenShare))
		}},
	}...), append(items, tail...)...)
	if err := billTable(tr, cols, wide, q.Bills).Write(w); err != nil {
		return err
	}
	if below > 0 {
		tr.Fprintf(w, "\nHIDDEN is - on %s that cost less than LIST, the on-demand price × hours (spot, a subscription): their TOTAL is the whole bill all the same\n", rows(tr, below))
	}
	if !wide && len(q.Bills) > 0 {
		fmt.Fprintf(w, "\n%s\n", tr.T(wideNote))
	}
	billNotes(w, tr, q.Bills, q.Notes, q.Rates)
	return nil
}

// offerCell is the bill's offer, marked when it is an older reading
// priced for --history: it ranks among today's prices, and must not be
// taken for one.
func offerCell(tr *i18n.Printer, b billing.Bill) string {
	if b.SupersededBy != "" {
		return b.Offer + tr.T(" (history)")
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

// total is a bill's total as quote and plan show it: its estimate, marked
// ≈, where fees are unknown and could be estimated, else the total, marked
// as a lower bound where fees are unknown.
func total(b billing.Bill) string {
	if e := b.Estimate; e != nil {
		return b.BeyondEstimate() + "≈" + report.Money(e.Total)
	}
	return atLeast(b, report.Money(b.Total))
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
func billNotes(w io.Writer, tr *i18n.Printer, bills []billing.Bill, notes, rates []i18n.Text) {
	seen := map[string]bool{}
	var lines []string
	for i, b := range bills {
		for _, wn := range b.Warnings {
			key := b.Offer + "\x00" + wn.String()
			if !seen[key] {
				seen[key] = true
				lines = append(lines, fmt.Sprintf("  #%d %s: %s", i+1, b.Offer, tr.Text(wn)))
			}
		}
	}
	if len(lines) > 0 {
		tr.Fprintf(w, "\nwarnings (UNKNOWN counts fees no source confirmed, computed as 0: such bills may be dearer, and their ≥ totals are the least they can be):\n%s\n", strings.Join(lines, "\n"))
	}
	for _, n := range notes {
		tr.Fprintf(w, "\nnote: %s\n", tr.Text(n))
	}
	offers, ages := make([]string, len(bills)), make([]*int, len(bills))
	for i, b := range bills {
		offers[i], ages[i] = b.Offer, b.PriceAgeDays
	}
	if line := priceDates(tr, offers, ages); line != "" {
		tr.Fprintf(w, "prices: %s\n", line)
	}
	for _, r := range rates {
		tr.Fprintf(w, "rate: %s\n", tr.Text(r))
	}
}

// Afford is quote --budget's table: the most hours each plan gives
// within the budget, most first, with the bill at those hours.
func Afford(w io.Writer, tr *i18n.Printer, p *billing.Profile, spanGiven bool, r *billing.Reach, wide bool) error {
	gpu := gpuLabel(tr, p)
	span := tr.T("run back to back")
	if spanGiven {
		span = tr.Tf("over %s", days(tr, p.SpanDays))
	}
	tr.Fprintf(w, "what %s %s buys of %s x%d, %s, %s, %s GB disk, %s GB egress: the most compute hours whose whole bill fits\n\n",
		report.Money(r.Budget), currencyName(tr, r.Currency), gpu, p.GPUs, span, starts(tr, p.Starts), trim(p.DiskGB), trim(p.EgressGB))
	bills := make([]billing.Bill, len(r.Plans))
	for i, a := range r.Plans {
		bills[i] = a.Bill
	}
	head, items, tail := billColumns(tr)
	cols := append(append(head, []column{
		// Never more hours than were found within the budget.
		{tr.T("HOURS"), false, func(i int, b billing.Bill) string { return atMost(b, trim(math.Floor(r.Plans[i].Hours*100+1e-9)/100)) }},
		{tr.T("TOTAL"), false, func(_ int, b billing.Bill) string { return atLeast(b, report.Money(b.Total)) }},
	}...), append(items, tail...)...)
	if r.Reference != "" { // after HOURS: what they are worth on the reference
		work := column{tr.T("WORK"), false, func(i int, b billing.Bill) string { return atMost(b, trim(math.Floor(r.Plans[i].Work*100+1e-9)/100)) }}
		cols = slices.Insert(cols, len(head)+1, work)
	}
	if err := billTable(tr, cols, wide, bills).Write(w); err != nil {
		return err
	}
	if !wide && len(bills) > 0 {
		fmt.Fprintf(w, "\n%s\n", tr.T(wideNoteAfford))
	}
	billNotes(w, tr, bills, r.Notes, r.Rates)
	return nil
}

// priceDates sums up how old the listed offers' prices are (ages[i] is
// offers[i]'s, nil when undated): the least age their as_of dates allow,
// youngest to oldest. An undated offer carries its own warning. Empty
// when no offer is dated, or the ages were not judged (Options.Today).
func priceDates(tr *i18n.Printer, offers []string, ages []*int) string {
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
	span := days(tr, lo)
	if hi != lo {
		span = tr.Tf("%d to %s", lo, days(tr, hi))
	}
	on := tr.Tf(" on %d of %d offers", dated, len(seen))
	switch {
	case len(seen) == 1:
		on = ""
	case dated == len(seen):
		on = tr.Tf(" on all %d offers", dated)
	}
	return tr.Tf("at least %s old%s (by the as_of dates, a month counting as its last day); prices move: confirm each at its source before ordering (gpurent catalog ls -o json lists them)", span, on)
}

// A figure under 0.01 keeps its first significant digits: 0.0003 h is
// not "0 h".
func trim(v float64) string {
	if v != 0 && math.Abs(v) < 0.01 {
		return strconv.FormatFloat(v, 'g', 2, 64)
	}
	s := strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.2f", v), "0"), ".")
	return s
}

// Plan is plan's table: each offer's totals by billing mode, what to buy
// and why, with spot's risk, the break-even and the checkpoint interval.
func Plan(w io.Writer, tr *i18n.Printer, plan *billing.Plan, deadline string) error {
	tr.Fprintf(w, "amounts in %s\n\n", currencyName(tr, plan.Currency))
	dlHead := tr.T("P(DEADLINE)")
	if deadline != "" {
		dlHead = "P(<=" + deadline + ")"
	}
	head := []string{tr.T("OFFER"), tr.T("BUY"), tr.T("ON_DEMAND"), tr.T("SUBSCRIPTION"), tr.T("SPOT"), tr.T("SPOT P50/P90"), tr.T("HOURS P50/P90"), dlHead,
		tr.T("BREAK-EVEN"), tr.T("CKPT YOUNG/DALY"), tr.T("LOST")}
	if plan.Reference != "" { // each offer's own hours for the work
		head = slices.Insert(head, 1, tr.T("HOURS"))
	}
	tab := report.NewTab(head...)
	for _, o := range plan.Offers {
		cell := func(plan string) string {
			v, ok := o.Totals[plan]
			if !ok {
				return "-"
			}
			for _, b := range o.Bills {
				if b.Plan == plan {
					return total(b)
				}
			}
			return report.Money(v)
		}
		spot, hours, dl := "-", "-", "-"
		if s := o.Spot; s != nil {
			spot = report.Money(s.P50Cost) + "/" + report.Money(s.P90Cost)
			hours = fmt.Sprintf("%.0f/%.0f", s.P50Hours, s.P90Hours)
			if s.DeadlineProbability != nil {
				dl = report.Percent(*s.DeadlineProbability)
			}
		}
		be := "-"
		for _, b := range o.BreakEven {
			if b.Period == catalog.PeriodMonth {
				be = tr.Tf("%.0f h/month (%.1f h/day)", b.Hours, b.HoursPerDay)
			} else if be == "-" {
				be = tr.Tf("%.0f h/%s", b.Hours, periodName(tr, b.Period))
			}
		}
		ck, lost := "-", "-"
		if c := o.Checkpoint; c != nil {
			ck = tr.Tf("%.0f/%.0f min", c.YoungMinutes, c.DalyMinutes)
			lost = report.Percent(c.LostFraction)
		}
		buy := planName(tr, o.Recommendation)
		if buy == "" {
			buy = "-"
		}
		row := []string{o.Offer, buy, cell(billing.OnDemand), cell(billing.Subscription), cell(billing.Spot), spot, hours, dl, be, ck, lost}
		if plan.Reference != "" {
			row = slices.Insert(row, 1, trim(math.Round(o.Hours*10)/10))
		}
		tab.Row(row...)
	}
	if err := tab.Write(w); err != nil {
		return err
	}
	for _, n := range plan.Notes {
		tr.Fprintf(w, "\nnote: %s\n", tr.Text(n))
	}
	why := tr.T("why:")
	if slices.ContainsFunc(plan.Offers, func(o billing.OfferPlan) bool {
		return slices.ContainsFunc(o.Bills, func(b billing.Bill) bool { return b.TotalIsLowerBound })
	}) {
		why = tr.T("why (≥: the total is the least it can be, fees no source confirmed counted as 0):")
	}
	fmt.Fprintln(w, "\n"+why)
	for _, o := range plan.Offers {
		fmt.Fprintf(w, "  %s: %s\n", o.Offer, tr.Text(o.Reason))
		var seen []string // said once: a note, then the bills' warnings
		for _, n := range o.Notes {
			seen = append(seen, n.String())
			tr.Fprintf(w, "    note: %s\n", tr.Text(n))
		}
		// The bills' warnings, each once: the unknown fees above all,
		// which the table's totals leave out.
		for _, b := range o.Bills {
			for _, wn := range b.Warnings {
				if !slices.Contains(seen, wn.String()) {
					seen = append(seen, wn.String())
					tr.Fprintf(w, "    warning: %s\n", tr.Text(wn))
				}
			}
		}
	}
	offers, ages := make([]string, len(plan.Offers)), make([]*int, len(plan.Offers))
	for i, o := range plan.Offers {
		offers[i], ages[i] = o.Offer, o.PriceAgeDays
	}
	if line := priceDates(tr, offers, ages); line != "" {
		tr.Fprintf(w, "\nprices: %s\n", line)
	}
	return nil
}

// Inference is plan --inference's table: what each offer serves and costs
// a day against the APIs, and the sourced rates behind it (rated: the
// throughput is the catalog's, not --tokens-per-second).
func Inference(w io.Writer, tr *i18n.Printer, res *billing.Inference, rated bool) error {
	// The utilisation changes INSTANCES and RENT/1M: the header says which
	// one they were computed at.
	load := tr.T("full load")
	pct := strconv.FormatFloat(res.Utilisation*100, 'g', 4, 64)
	if res.Utilisation < 1 {
		load = tr.Tf("%s%% load", pct)
	}
	tr.Fprintf(w, "%s model, %.0f output and %.0f input tokens a day, instances at %s; cheapest API: %s at %.4f in, %.4f out %s per 1M\n\n",
		res.Model, res.TokensPerDay, res.InputTokensPerDay, load, res.API, res.APIInputPerM, res.APIPerM, currencyName(tr, res.Currency))
	rentHead := tr.T("RENT/1M (FULL LOAD)")
	if res.Utilisation < 1 {
		rentHead = tr.Tf("RENT/1M (AT %s%% LOAD)", pct)
	}
	tab := report.NewTab(tr.T("OFFER"), tr.T("GPU"), tr.T("TOK/S"), tr.T("INSTANCES"), tr.T("RENT/DAY"), tr.T("API/DAY"), rentHead, tr.T("BEATS APIS"),
		tr.T("BREAK-EVEN TOK/DAY"), tr.T("CHEAPER"))
	for _, o := range res.Offers {
		be := tr.T("never")
		if o.BreakEvenTokensDay != nil {
			be = fmt.Sprintf("%.3g", *o.BreakEvenTokensDay)
		}
		tab.Row(o.Offer, o.GPU, fmt.Sprintf("%.0f", o.TokensPerSecond), fmt.Sprint(o.Instances), report.Money(o.RentPerDay), report.Money(o.APIPerDay),
			fmt.Sprintf("%.4f", o.RentPerMillion), tr.Tf("%d of %d", o.CheaperThanAPIs, len(res.APIs)), be, cheaperName(tr, o.Cheaper))
	}
	if err := tab.Write(w); err != nil {
		return err
	}
	// Every API compared with, so a user who cannot use the cheapest sees
	// how renting fares against the one they can.
	fmt.Fprintln(w)
	apiTab := report.NewTab(tr.T("API"), tr.T("IN/1M"), tr.T("OUT/1M"), tr.T("PER DAY"), tr.T("SOURCE"), tr.T("AS OF"))
	for _, a := range res.APIs {
		apiTab.Row(a.Provider, fmt.Sprintf("%.4f", a.InputPerM), fmt.Sprintf("%.4f", a.OutputPerM), report.Money(a.PerDay), a.Source, a.AsOf)
	}
	if err := apiTab.Write(w); err != nil {
		return err
	}
	ids, ages := make([]string, len(res.Offers)), make([]*int, len(res.Offers))
	var notes []string
	for _, n := range res.Notes {
		notes = append(notes, "  "+tr.Text(n))
	}
	for i, o := range res.Offers {
		ids[i], ages[i] = o.Offer, o.PriceAgeDays
		for _, n := range o.Notes {
			notes = append(notes, fmt.Sprintf("  %s: %s", o.Offer, tr.Text(n)))
		}
	}
	if len(notes) > 0 {
		tr.Fprintf(w, "\nnotes:\n%s\n", strings.Join(notes, "\n"))
	}
	// TOK/S decides every row, and each rate in the table was measured
	// with one model, precision and server version: say which.
	if rated && len(res.Offers) > 0 {
		var rates, sources []string
		for _, r := range billing.Throughputs() {
			if r.Model != res.Model {
				continue
			}
			rates = append(rates, fmt.Sprintf("%s ×%d %g", r.GPU, r.GPUs, r.TokensSec))
			if !slices.Contains(sources, r.Source) {
				sources = append(sources, r.Source)
			}
		}
		tr.Fprintf(w, "\nthroughput (TOK/S): %s tok/s (%s); an instance with more GPUs is rated as replicas of the size, among these that divide it, that serves the most tokens a second; a newer server or another model serves at another rate: give your own measured one with --tokens-per-second\n",
			strings.Join(rates, ", "), strings.Join(sources, "; "))
	}
	if line := priceDates(tr, ids, ages); line != "" {
		tr.Fprintf(w, "\nprices: %s\n", line)
	}
	return nil
}
