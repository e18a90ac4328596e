package main

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpurent/gpurent/internal/bench"
	"github.com/gpurent/gpurent/internal/billing"
	"github.com/gpurent/gpurent/internal/render"
	"github.com/gpurent/gpurent/internal/report"
	"github.com/gpurent/gpurent/internal/task"
	"github.com/gpurent/gpurent/internal/units"
	"github.com/gpurent/gpurent/internal/usage"
)

// planOptions are plan's flags.
type planOptions struct {
	task      task.Flags     // the task: hours, span, disk, egress and the rest
	inf       task.Inference // with --inference: the model and its load
	trials    int            // --trials
	seed      uint64         // --seed
	deadline  string         // --deadline
	inference bool           // --inference
}

func newPlan(g *globals) *cobra.Command {
	var o planOptions
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
			return runPlan(g, &o, cmd.Flags())
		},
	}
	o.task.Register(cmd.Flags(), bench.MeasuredSpeeds)
	o.inf.Register(cmd.Flags())
	f := cmd.Flags()
	f.IntVar(&o.trials, "trials", 10000, "Monte Carlo trials per offer")
	f.Uint64Var(&o.seed, "seed", 1, "random seed; the same seed gives the same figures")
	f.StringVar(&o.deadline, "deadline", "", "finish-by time for spot, from the start (15d, 400h)")
	f.BoolVar(&o.inference, "inference", false, "compare renting GPUs for serving with a hosted API")
	return cmd
}

// runPlan says which billing mode to buy on each offer, or with
// --inference compares renting with an API.
func runPlan(g *globals, o *planOptions, fs *pflag.FlagSet) error {
	if err := task.ModeFlags(fs, o.inference); err != nil {
		return err
	}
	if o.inference {
		return runInference(g, fs, &o.task, o.inf)
	}
	if o.trials < 1 || o.trials > 10_000_000 {
		return usagef("--trials: want 1 to 10000000, got %d", o.trials)
	}
	var dl float64
	if o.deadline != "" {
		d, err := units.ParseDuration(o.deadline)
		if err != nil || d <= 0 || d.Hours() >= 24*365*100 {
			return usagef("--deadline: want a positive duration such as 15d or 400h, got %q", o.deadline)
		}
		dl = d.Hours()
	}
	cat, err := loadCatalog(g)
	if err != nil {
		return err
	}
	p, offers, opt, err := o.task.Load(fs, cat)
	if err != nil {
		return err
	}
	switch {
	case dl > 0 && !p.Interruptible:
		// Only spot is judged against it: on demand and
		// subscriptions run the hours as planned.
		return usagef("--deadline: judges spot runs, which need --interruptible (a job that resumes from checkpoints)")
	case dl > 0 && dl < p.ComputeHours && opt.Work == nil:
		// The deadline is wall time from the start: the work alone
		// takes longer, on any plan (with --reference, on the
		// reference GPU only: each offer is judged by its own hours).
		return usagef("--deadline %s is shorter than the %v h of compute: no plan meets it", o.deadline, p.ComputeHours)
	case dl > 0 && o.task.SpanGiven && dl > float64(p.SpanDays)*24:
		return usagef("--deadline %s is beyond the span of %d days (--days): a run must end within the span; give a longer --days or a shorter --deadline", o.deadline, p.SpanDays)
	}
	plan, err := billing.MakePlan(p, offers, cat.Rates, billing.PlanOptions{Options: opt, Trials: o.trials, Seed: o.seed, DeadlineHours: dl}, billing.Parallel)
	if err != nil {
		return err
	}
	if g.output == report.JSON {
		return report.WriteJSON(g.stdout, plan)
	}
	return render.Plan(g.stdout, g.tr, plan, o.deadline)
}

// runInference answers plan --inference: renting GPUs to serve a model,
// or a hosted API.
func runInference(g *globals, fs *pflag.FlagSet, t *task.Flags, inf task.Inference) error {
	cat, err := loadCatalog(g)
	if err != nil {
		return err
	}
	q, offers, notes, err := t.Inference(fs, cat, inf)
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
	return render.Inference(g.stdout, g.tr, res, q.TokensPerSec == nil)
}
