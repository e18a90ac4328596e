package main

import (
	"github.com/spf13/cobra"

	"github.com/gpurent/gpurent/internal/billing"
	"github.com/gpurent/gpurent/internal/render"
	"github.com/gpurent/gpurent/internal/report"
	"github.com/gpurent/gpurent/internal/task"
	"github.com/gpurent/gpurent/internal/units"
	"github.com/gpurent/gpurent/internal/usage"
)

func newPlan(g *globals) *cobra.Command {
	var t task.Flags
	var inf task.Inference
	var (
		trials    int
		seed      uint64
		deadline  string
		inference bool
	)
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "On demand, subscription or spot: break-even, spot risk, checkpoint interval",
		Long: `plan says which billing mode to buy for your task on each offer, and why:
the break-even hours of each subscription period computed from the offer's own
prices, spot risk by Monte Carlo (P50/P90 cost and finish time, the chance to
meet a deadline), and the checkpoint interval of Young and Daly with the share
of paid hours lost at yours.

With --inference it compares renting GPUs to serve a model with a hosted API,
and prints the tokens per day above which renting pays.`,
		Example: `  gpurent plan --gpu "RTX 4090" --hours 300 --days 30
  gpurent plan --gpu H100 --hours 300 --interruptible --interruptions-per-day 1.5 \
      --ckpt-every 30m --ckpt-write 1m --ckpt-restart 5m --deadline 15d
  gpurent plan --inference --model 70B --gpu H100 --tokens-per-day 50000000`,
		Args: args(noArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := task.ModeFlags(cmd.Flags(), inference); err != nil {
				return err
			}
			if inference {
				return runInference(cmd, g, &t, inf)
			}
			if trials < 1 || trials > 10_000_000 {
				return usagef("--trials: want 1 to 10000000, got %d", trials)
			}
			var dl float64
			if deadline != "" {
				d, err := units.ParseDuration(deadline)
				if err != nil || d <= 0 || d.Hours() >= 24*365*100 {
					return usagef("--deadline: want a positive duration such as 15d or 400h, got %q", deadline)
				}
				dl = d.Hours()
			}
			cat, err := loadCatalog(g.catalogs)
			if err != nil {
				return err
			}
			p, offers, opt, err := t.Load(cmd.Flags(), cat)
			if err != nil {
				return err
			}
			switch {
			case dl > 0 && !p.Interruptible:
				// Only spot is judged against it: on demand and
				// subscriptions run the hours as planned.
				return usagef("--deadline: judges spot runs, which need --interruptible (a job that resumes from checkpoints)")
			case dl > 0 && dl < p.ComputeHours:
				// The deadline is wall time from the start: the work alone
				// takes longer, on any plan.
				return usagef("--deadline %s is shorter than the %v h of compute: no plan meets it", deadline, p.ComputeHours)
			case dl > 0 && t.SpanGiven && dl > float64(p.SpanDays)*24:
				return usagef("--deadline %s is beyond the span of %d days (--days): a run must end within the span; give a longer --days or a shorter --deadline", deadline, p.SpanDays)
			}
			plan, err := billing.MakePlan(p, offers, cat.Rates, billing.PlanOptions{Options: opt, Trials: trials, Seed: seed, DeadlineHours: dl}, billing.Parallel)
			if err != nil {
				return err
			}
			if g.output == report.JSON {
				return report.WriteJSON(g.stdout, plan)
			}
			return render.Plan(g.stdout, plan, deadline)
		},
	}
	t.Register(cmd.Flags())
	inf.Register(cmd.Flags())
	f := cmd.Flags()
	f.IntVar(&trials, "trials", 10000, "Monte Carlo trials per offer")
	f.Uint64Var(&seed, "seed", 1, "random seed; the same seed gives the same figures")
	f.StringVar(&deadline, "deadline", "", "finish-by time for spot, from the start (15d, 400h)")
	f.BoolVar(&inference, "inference", false, "compare renting GPUs for serving with a hosted API")
	return cmd
}

// runInference answers plan --inference: renting GPUs to serve a model,
// or a hosted API.
func runInference(cmd *cobra.Command, g *globals, t *task.Flags, inf task.Inference) error {
	cat, err := loadCatalog(g.catalogs)
	if err != nil {
		return err
	}
	q, offers, notes, err := t.Inference(cmd.Flags(), cat, inf)
	if err != nil {
		return err
	}
	res, err := billing.PlanInference(q, offers, cat.Rates)
	if err != nil {
		return usage.Wrap(err)
	}
	res.Notes = append(notes, res.Notes...)
	if g.output == report.JSON {
		return report.WriteJSON(g.stdout, res)
	}
	return render.Inference(g.stdout, res, q.TokensPerSec == nil)
}
