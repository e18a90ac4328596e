package main

import (
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpurent/gpurent/internal/billing"
	"github.com/gpurent/gpurent/internal/render"
	"github.com/gpurent/gpurent/internal/report"
	"github.com/gpurent/gpurent/internal/units"
	"github.com/gpurent/gpurent/internal/usage"
)

func newPlan(g *globals) *cobra.Command {
	var t taskFlags
	var (
		trials       int
		seed         uint64
		deadline     string
		inference    bool
		tokensPerDay float64
		model        string
		tokensPerSec float64
		apiPrice     float64
		inf          inferenceFlags
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
			if err := modeFlags(cmd.Flags(), inference); err != nil {
				return err
			}
			if inference {
				return runInference(cmd, g, &t, model, tokensPerDay, tokensPerSec, apiPrice, inf)
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
			p, offers, cat, opt, err := t.load(cmd, g)
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
			case dl > 0 && t.spanGiven && dl > float64(p.SpanDays)*24:
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
	t.register(cmd.Flags())
	f := cmd.Flags()
	f.IntVar(&trials, "trials", 10000, "Monte Carlo trials per offer")
	f.Uint64Var(&seed, "seed", 1, "random seed; the same seed gives the same figures")
	f.StringVar(&deadline, "deadline", "", "finish-by time for spot, from the start (15d, 400h)")
	f.BoolVar(&inference, "inference", false, "compare renting GPUs for serving with a hosted API")
	f.Float64Var(&tokensPerDay, "tokens-per-day", 0, "with --inference: output tokens to serve a day")
	f.StringVar(&model, "model", "8B", "with --inference: model size, 8B or 70B")
	f.Float64Var(&tokensPerSec, "tokens-per-second", 0, "with --inference: your measured output tokens/s per instance")
	f.Float64Var(&apiPrice, "api-price", 0, "with --inference: API price per 1M output tokens, in --currency")
	f.Float64Var(&inf.inputPerDay, "input-tokens-per-day", 0, "with --inference: input (prompt) tokens a day, priced by the API; rented capacity is judged on the measured output rate, whose benchmark includes its prompts")
	f.Float64Var(&inf.apiInputPrice, "api-input-price", 0, "with --inference and --api-price: API price per 1M input tokens, in --currency (needed when --input-tokens-per-day is above 0)")
	f.StringVar(&inf.utilisation, "utilisation", "1", "with --inference: share of each instance's measured rate the traffic keeps busy, a fraction in (0, 1] or a percent (60%)")
	return cmd
}

// inferenceFlags are plan's --inference flags added after its first
// release, kept together so runInference's parameters do not grow with
// each one.
type inferenceFlags struct {
	inputPerDay   float64
	apiInputPrice float64
	utilisation   string
}

// parseUtilisation reads --utilisation as a fraction (0.6) or a percent
// (60%): both are how people say it, and a bare 60 is refused rather than
// guessed at, since 60 of 1 and 60% differ a hundredfold.
func parseUtilisation(s string) (float64, error) {
	t := strings.TrimSpace(s)
	scale := 1.0
	if p, ok := strings.CutSuffix(t, "%"); ok {
		t, scale = strings.TrimSpace(p), 100
	}
	v, err := strconv.ParseFloat(t, 64)
	if v /= scale; err != nil || !(v >= 0.01 && v <= 1) {
		return 0, usagef("--utilisation: want a fraction from 0.01 to 1 such as 0.6, or a percent from 1%% to 100%% such as 60%%, got %s", report.Quote(s))
	}
	return v, nil
}

// Flags that belong to one of plan's two modes. A flag of the other mode
// would be ignored without a word, and a user who passes --hours to
// --inference (or --model without it) believes it shaped the answer.
var (
	trainingOnly  = []string{"profile", "gpus", "hours", "days", "starts", "disk", "egress", "interruptible", "one-machine", "shared-disk", "ckpt-every", "ckpt-write", "ckpt-restart", "ckpt-size", "interruptions-per-day", "trials", "seed", "deadline"}
	inferenceOnly = []string{"tokens-per-day", "model", "tokens-per-second", "api-price", "input-tokens-per-day", "api-input-price", "utilisation"}
)

// modeFlags refuses a flag the chosen mode does not read.
func modeFlags(fs *pflag.FlagSet, inference bool) error {
	unused, mode := inferenceOnly, "without --inference"
	if inference {
		unused, mode = trainingOnly, "with --inference"
	}
	for _, name := range unused {
		if fs.Changed(name) {
			return usagef("--%s: not used %s", name, mode)
		}
	}
	return nil
}

func runInference(cmd *cobra.Command, g *globals, t *taskFlags, model string, perDay, perSec, apiPrice float64, inf inferenceFlags) error {
	fs := cmd.Flags()
	if !fs.Changed("tokens-per-day") {
		return usagef("--tokens-per-day: required with --inference")
	}
	// The model, the input tokens and which API prices go together are
	// checked by billing.PlanInference, whose errors name the flags.
	util, err := parseUtilisation(inf.utilisation)
	if err != nil {
		return err
	}
	cat, err := loadCatalog(g.catalogs)
	if err != nil {
		return err
	}
	p := &billing.Profile{GPU: t.gpu, MinGPUMemoryGB: t.minMemory}
	current, _ := t.current(cat.Offers)
	offers, err := billing.Offers(p, current)
	if err != nil {
		return usagef("--gpu: %v", err)
	}
	if offers, err = billing.WithMemory(p, offers); err != nil {
		return usagef("--min-gpu-memory: %v", err)
	}
	var providerNotes []string
	if offers, providerNotes, err = t.withProvider(current, offers); err != nil {
		return err
	}
	t.currency = strings.ToUpper(strings.TrimSpace(t.currency))
	q := billing.InferenceQuery{Model: model, TokensPerDay: perDay, InputTokensPerDay: inf.inputPerDay, Utilisation: util, Currency: t.currency}
	if q.Today, err = today(os.LookupEnv, time.Now); err != nil {
		return err
	}
	for _, c := range []struct {
		name   string
		v      float64
		dst    **float64
		zeroOK bool // an input price of 0 is a price; an output price of 0 no API has
	}{{"tokens-per-second", perSec, &q.TokensPerSec, false}, {"api-price", apiPrice, &q.APIPricePerM, false}, {"api-input-price", inf.apiInputPrice, &q.APIInputPricePerM, true}} {
		if !fs.Changed(c.name) {
			continue
		}
		if math.IsNaN(c.v) || math.IsInf(c.v, 0) || c.v < 0 || c.v == 0 && !c.zeroOK || c.v > 1e9 {
			want := "a positive number"
			if c.zeroOK {
				want = "0 or more"
			}
			return usagef("--%s: want %s, at most a billion, got %v", c.name, want, c.v)
		}
		v := c.v
		*c.dst = &v
	}
	if _, err := cat.Rates.Convert(1, "USD", t.currency); err != nil {
		return usagef("--currency: %v", err)
	}
	res, err := billing.PlanInference(q, offers, cat.Rates)
	if err != nil {
		return usage.Wrap(err)
	}
	res.Notes = append(providerNotes, res.Notes...)
	if g.output == report.JSON {
		return report.WriteJSON(g.stdout, res)
	}
	return render.Inference(g.stdout, res, q.TokensPerSec == nil)
}
