// Command gencatalog turns the sourced research table of GPU offers
// (internal/catalog/research/catalog_rows.csv) into gpurent's embedded catalog. The
// table is the evidence; this program only changes its shape, so that a new
// research pass is one command away from the binary:
//
//	go run ./internal/catalog/gencatalog > internal/catalog/default.yaml
//
// The rules, each chosen so that no number is invented:
//   - An empty cell is unknown, never zero; a literal 0 is a sourced "free".
//   - Billing increments are read from the text: "per second…" is 1s,
//     "per minute…" is 1m; anything else ("per card-hour", "hourly or
//     monthly") is unknown, since a price unit is not a rounding rule.
//   - "60 s" minimum is 60s. AutoDL's minimum is a charge of CNY 0.01, not a
//     time; it is written as 0s with a note.
//   - month_price becomes a month subscription, except Google Cloud's, which
//     is the hourly price times 730 h (a sustained list figure, not a
//     prepaid period), and is dropped.
//   - Rows priced as multi-year commitments are skipped: gpurent's
//     subscriptions are day, week and month.
//   - Egress "0 (in-region)" is unknown: the profile's egress leaves the region.
//   - AWS, Google Cloud and Azure bill egress by monthly volume: their rows
//     get the tier schedule (and AWS its free 100 GB) of pricing.md, see
//     egressMonths.
//   - No source gives spot interruption counts, so interruptions_per_day is
//     unknown everywhere; AWS offers carry the Spot Instance Advisor's
//     published frequency bucket (facts.go), the rest nothing.
//   - boot_fee is unknown unless the fee research gives a provider's own
//     words that only running time is billed (facts.go): then it is 0.
//   - Fees the table leaves empty take the sourced values of the fee
//     research (facts.go, from fees.csv), each named with its source in
//     fee_sources; the included disk's kind (ephemeral or persistent) is
//     set from the same research, unknown where no source says.
//   - Older readings of an offer are named by the newest one's
//     supersedes (facts.go).
//   - interconnect (nvlink or pcie) is written only for the offers whose
//     page says it (facts.go); elsewhere it is left out, unknown.
//   - gpu_memory_gb is copied as the row states it (unknown where empty):
//     quote's --gpu "H100 80GB" reads it where the model name says no size.
package main

import (
	"encoding/csv"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

func main() {
	path := flag.String("csv", "internal/catalog/research/catalog_rows.csv", "research table to convert (the default is the repository's, from its root)")
	flag.Parse()
	if err := run(*path, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "gencatalog:", err)
		os.Exit(1)
	}
}

func run(path string, w io.Writer) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	if len(rows) < 2 {
		return fmt.Errorf("%s: no rows", path)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	for _, need := range []string{"provider", "offer_id", "instance_type", "gpu_model", "gpus_per_instance", "gpu_memory_gb", "region", "currency",
		"on_demand_hourly_per_instance", "spot_hourly_per_instance", "day_price", "week_price", "month_price", "billing_increment",
		"minimum_billed", "storage_running_gb_month", "storage_stopped_gb_month", "included_storage_gb", "egress_per_gb", "ip_month",
		"release_after_stopped_days", "spot_notice_seconds", "source_url", "as_of", "confidence"} {
		if _, ok := col[need]; !ok {
			return fmt.Errorf("%s: column %q missing", path, need)
		}
	}
	fmt.Fprint(w, header)
	n := 0
	for _, r := range rows[1:] {
		get := func(k string) string { return strings.TrimSpace(r[col[k]]) }
		if strings.Contains(get("billing_increment"), "commitment") {
			continue
		}
		var notes, sourced []string
		provider, id := get("provider"), get("offer_id")
		// fill is the cell's value, or the sourced fact for an empty one.
		fill := func(field, cell string) string {
			if cell != "unknown" {
				return cell
			}
			if f, ok := factFor(provider, id, field); ok {
				sourced = append(sourced, field+" "+f.value+": "+f.source)
				return f.value
			}
			return cell
		}
		fmt.Fprintf(w, "  - id: %s\n", q(get("offer_id")))
		fmt.Fprintf(w, "    provider: %s\n", q(get("provider")))
		fmt.Fprintf(w, "    instance: %s\n", q(get("instance_type")))
		fmt.Fprintf(w, "    gpu: %s\n", q(get("gpu_model")))
		fmt.Fprintf(w, "    gpus: %s\n", get("gpus_per_instance"))
		fmt.Fprintf(w, "    gpu_memory_gb: %s\n", num(get("gpu_memory_gb")))
		fmt.Fprintf(w, "    region: %s\n", q(get("region")))
		fmt.Fprintf(w, "    currency: %s\n", get("currency"))
		fmt.Fprintf(w, "    source: %s\n", q(get("source_url")))
		fmt.Fprintf(w, "    as_of: %s\n", q(get("as_of")))
		fmt.Fprintf(w, "    confidence: %s\n", get("confidence"))
		if ic, ok := interconnect[id]; ok {
			fmt.Fprintf(w, "    interconnect: %s\n    interconnect_source: %s\n", ic.value, q(ic.source))
		}

		inc := "unknown"
		switch b := get("billing_increment"); {
		case strings.HasPrefix(b, "per second"), strings.HasPrefix(b, "per-second"):
			inc = "1s"
		case strings.HasPrefix(b, "per minute"):
			inc = "1m"
		}
		minimum := "unknown"
		switch m := get("minimum_billed"); {
		case m == "60 s":
			minimum = "60s"
		case strings.HasPrefix(m, "CNY"):
			minimum = "0s"
			notes = append(notes, "minimum charge "+m+" (money, not time)")
		}
		if b := get("billing_increment"); b != "" && inc == "unknown" {
			notes = append(notes, "billing: "+b)
		}
		if old := supersedes[id]; len(old) > 0 {
			fmt.Fprintf(w, "    supersedes: [%s]\n", strings.Join(quoteAll(old), ", "))
		}
		inc, minimum = fill("on_demand.increment", inc), fill("on_demand.minimum", minimum)
		fmt.Fprintf(w, "    on_demand: {hourly: %s, increment: %s, minimum: %s}\n", num(get("on_demand_hourly_per_instance")), inc, minimum)
		if m := get("month_price"); m != "" && !strings.HasPrefix(get("provider"), "Google") {
			fmt.Fprintf(w, "    subscriptions: [{period: month, price: %s}]\n", m)
		}
		if s := get("spot_hourly_per_instance"); s != "" {
			notice := "unknown"
			if n := get("spot_notice_seconds"); n != "" {
				notice = n + "s"
			}
			fmt.Fprintf(w, "    spot: {hourly: %s, interruptions_per_day: unknown, notice: %s%s}\n", s, notice, frequencyYAML(id))
		}
		fmt.Fprintf(w, "    boot_fee: %s\n", fill("boot_fee", "unknown"))
		d := disk(provider, id)
		if d.source != "" {
			sourced = append(sourced, "included disk "+d.value+": "+d.source)
		}
		shared := ""
		if v := fill("storage.shared_gb_month", "unknown"); v != "unknown" {
			shared = ", shared_gb_month: " + v
		}
		fmt.Fprintf(w, "    storage: {included_gb: %s, included_disk: %s, running_gb_month: %s, stopped_gb_month: %s%s}\n",
			fill("storage.included_gb", num(get("included_storage_gb"))), d.value, fill("storage.running_gb_month", num(get("storage_running_gb_month"))),
			fill("storage.stopped_gb_month", num(get("storage_stopped_gb_month"))), shared)
		eg := get("egress_per_gb")
		if strings.Contains(eg, "in-region") {
			notes = append(notes, "egress free in-region only")
			eg = ""
		}
		egress := fill("egress_gb", num(eg))
		fmt.Fprintf(w, "    egress_gb: %s\n", egress)
		if m, ok := egressMonths[get("provider")]; ok && eg == m.first {
			fmt.Fprintf(w, "    egress_month: %s\n", m.schedule)
		}
		fmt.Fprintf(w, "    ip_month: %s\n", fill("ip_month", num(get("ip_month"))))
		rel := "unknown"
		if d := get("release_after_stopped_days"); d != "" {
			rel = d + "d"
		}
		fmt.Fprintf(w, "    release_after_stopped: %s\n", fill("release_after_stopped", rel))
		if len(notes) > 0 {
			fmt.Fprintf(w, "    notes: %s\n", q(strings.Join(notes, "; ")))
		}
		if len(sourced) > 0 {
			fmt.Fprintf(w, "    fee_sources: [%s]\n", strings.Join(quoteAll(sourced), ", "))
		}
		n++
	}
	if n == 0 {
		return fmt.Errorf("%s: every row was skipped", path)
	}
	return nil
}

// egressMonths are the providers that bill egress by volume per month,
// from internal/catalog/research/pricing.md (sections 5 to 7: each cloud's
// get_egress_cost in SkyPilot, 1 TB = 1024 GB as there; AWS's first
// 100 GB a month free from its S3 pricing page; Azure's first 100 GB a
// month free: "Azure egress: first 100 GB/month free, then tiered
// ~$0.087/GB", https://c3x.dev/blog/azure-egress-bandwidth-cost/ (2026,
// secondary; issue #56: Azure was billed from the first GB)). A row takes its
// provider's schedule only when its egress_per_gb is the schedule's first
// price, so a research pass that changes the price drops a stale schedule
// rather than mixing the two.
var egressMonths = map[string]struct{ first, schedule string }{
	"AWS":          {"0.09", "{free_gb: 100, tiers: [{above_gb: 10240, price: 0.085}, {above_gb: 51200, price: 0.07}, {above_gb: 153600, price: 0.05}]}"},
	"Google Cloud": {"0.12", "{tiers: [{above_gb: 1024, price: 0.11}, {above_gb: 10240, price: 0.08}]}"},
	"Azure":        {"0.0875", "{free_gb: 100, tiers: [{above_gb: 10240, price: 0.083}, {above_gb: 51200, price: 0.07}, {above_gb: 153600, price: 0.05}]}"},
}

// num is a number cell as YAML: the number, or unknown when empty.
func num(s string) string {
	if s == "" {
		return "unknown"
	}
	if _, err := strconv.ParseFloat(s, 64); err != nil {
		return "unknown"
	}
	return s
}

// q quotes a string for YAML (JSON-style double quotes are valid YAML).
func q(s string) string { return strconv.Quote(s) }

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = q(s)
	}
	return out
}

const header = `# gpurent's embedded catalog. GENERATED by internal/catalog/gencatalog from
# internal/catalog/research/catalog_rows.csv (128 sourced offers, 28 providers); edit the
# research table and regenerate rather than editing this file.
#
# Every price is per instance and per hour unless named otherwise, tax excluded.
# "unknown" means no source confirmed the fee; gpurent computes it as 0 and says so.
version: 1
exchange_rates:
  # Each rate with its own date: EUR is the ECB rate of 1.1269 USD per EUR quoted
  # in internal/catalog/research/catalog_notes.md (Scaleway, 2026-10-06), inverted. CNY is
  # 6.97-6.98 CNY per USD ("early 2026", secondary, pixelation.org currency note),
  # midpoint used, "early 2026" read as its first quarter. Override with your own.
  as_of: "2026-Q1"
  source: "EUR: ECB 1.1269 USD/EUR via catalog_notes.md (2026-10-06); CNY: 6.97-6.98 per USD, early 2026, secondary (pixelation.org)"
  USD: 1
  EUR: {rate: 0.887390, as_of: "2026-10-06", source: "ECB 1.1269 USD/EUR via catalog_notes.md"}
  CNY: {rate: 6.975, as_of: "2026-Q1", source: "6.97-6.98 CNY per USD, early 2026, secondary (pixelation.org)"}
offers:
`
