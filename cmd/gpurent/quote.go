package main

import (
	"math"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpurent/gpurent/internal/bench"
	"github.com/gpurent/gpurent/internal/billing"
	"github.com/gpurent/gpurent/internal/money"
	"github.com/gpurent/gpurent/internal/render"
	"github.com/gpurent/gpurent/internal/report"
	"github.com/gpurent/gpurent/internal/task"
)

// quoteOptions are quote's flags.
type quoteOptions struct {
	task   task.Flags // the task: hours, span, disk, egress and the rest
	top    int        // --top
	budget string     // --budget: instead of --hours
	wide   bool       // --wide
}

func newQuote(g *globals) *cobra.Command {
	var o quoteOptions
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
			return runQuote(g, &o, cmd.Flags())
		},
	}
	o.task.Register(cmd.Flags(), bench.MeasuredSpeeds)
	cmd.Flags().BoolVar(&o.wide, "wide", false, "show every column of the table: provider, GPU, instances, list price, boot, IP, unknown fees, detail")
	cmd.Flags().IntVar(&o.top, "top", 0, "show only the N cheapest bills (0: all); with --budget, the N that give the most hours")
	cmd.Flags().StringVar(&o.budget, "budget", "", "what the task may cost in all, such as 500 or 3500CNY (in --currency): instead of --hours, the most compute hours each plan gives within it, the rest of the task as given")
	return cmd
}

// runQuote prices the task on every offer, or with --budget says the hours
// each plan gives within it.
func runQuote(g *globals, o *quoteOptions, fs *pflag.FlagSet) error {
	if o.top < 0 {
		return usagef("--top: want 0 (all) or more, got %d", o.top)
	}
	var budget float64
	if o.budget != "" {
		v, cur, ok := money.ParseAmount(o.budget, money.CurrencyCode(o.task.Currency))
		if !ok {
			return usagef("--budget: want what the task may cost in all, such as 500, 3500CNY or ¥3500, got %s", report.Quote(o.budget))
		}
		if fs.Changed("currency") && cur != money.CurrencyCode(o.task.Currency) {
			return usagef("--budget: %q is in %s, and --currency %s: give one currency", o.budget, cur, o.task.Currency)
		}
		if v < 0.01 || v > 1e12 {
			return usagef("--budget: want from 0.01 to a trillion, got %s", report.Quote(o.budget))
		}
		budget, o.task.Currency, o.task.SolveHours = v, cur, true
	}
	cat, err := loadCatalog(g)
	if err != nil {
		return err
	}
	p, offers, opt, err := o.task.Load(fs, cat)
	if err != nil {
		return err
	}
	if budget > 0 {
		r, err := billing.Afford(p, o.task.SpanGiven, offers, cat.Rates, opt, budget)
		if err != nil {
			return err
		}
		r.Top(o.top)
		if g.output == report.JSON {
			return report.WriteJSON(g.stdout, r)
		}
		return render.Afford(g.stdout, g.tr, p, o.task.SpanGiven, r, o.wide)
	}
	q, err := billing.Make(p, offers, cat.Rates, opt)
	if err != nil {
		return err
	}
	cheapest := math.Inf(1)
	if len(q.Bills) > 0 {
		cheapest = q.Bills[0].Total
	}
	if n := billing.VariantNote(p, o.task.Variants(p, cat.Offers), cat.Rates, opt, cheapest); !n.IsZero() {
		q.Notes = append(q.Notes, n)
	}
	q.Top(o.top)
	if g.output == report.JSON {
		return report.WriteJSON(g.stdout, q)
	}
	return render.Quote(g.stdout, g.tr, p, q, o.wide)
}
