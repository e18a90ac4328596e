package task

import (
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/gpurent/gpurent/internal/billing"
	"github.com/gpurent/gpurent/internal/catalog"
	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/report"
	"github.com/gpurent/gpurent/internal/usage"
)

// Inference are plan --inference's own flags: what is served, at what
// measured rate, against which API price.
type Inference struct {
	Model         string
	TokensPerDay  float64
	TokensPerSec  float64
	APIPrice      float64
	InputPerDay   float64
	APIInputPrice float64
	Utilisation   string
}

// Register adds the flags to fs.
func (in *Inference) Register(f *pflag.FlagSet) {
	f.Float64Var(&in.TokensPerDay, "tokens-per-day", 0, "with --inference: output tokens to serve a day")
	f.StringVar(&in.Model, "model", "8B", "with --inference: model size, 8B or 70B")
	f.Float64Var(&in.TokensPerSec, "tokens-per-second", 0, "with --inference: your measured output tokens/s per instance")
	f.Float64Var(&in.APIPrice, "api-price", 0, "with --inference: API price per 1M output tokens, in --currency")
	f.Float64Var(&in.InputPerDay, "input-tokens-per-day", 0, "with --inference: input (prompt) tokens a day, priced by the API; rented capacity is judged on the measured output rate, whose benchmark includes its prompts")
	f.Float64Var(&in.APIInputPrice, "api-input-price", 0, "with --inference and --api-price: API price per 1M input tokens, in --currency (needed when --input-tokens-per-day is above 0)")
	f.StringVar(&in.Utilisation, "utilisation", "1", "with --inference: share of each instance's measured rate the traffic keeps busy, a fraction in (0, 1] or a percent (60%)")
}

// Inference reads the task flags and in (as fs holds them) into the query
// billing.PlanInference answers and the offers it prices, with the notes
// --provider gives.
func (t *Flags) Inference(fs *pflag.FlagSet, cat *catalog.Catalog, in Inference) (billing.InferenceQuery, []catalog.Offer, []i18n.Text, error) {
	var q billing.InferenceQuery
	if !fs.Changed("tokens-per-day") {
		return q, nil, nil, usage.Errorf("--tokens-per-day: required with --inference")
	}
	// The model, the input tokens and which API prices go together are
	// checked by billing.PlanInference, whose errors name the flags.
	util, err := parseUtilisation(in.Utilisation)
	if err != nil {
		return q, nil, nil, err
	}
	p := &billing.Profile{GPU: t.gpu, MinGPUMemoryGB: t.minMemory}
	current, _ := t.Current(cat.Offers)
	offers, err := billing.Offers(p, current)
	if err != nil {
		return q, nil, nil, usage.Errorf("--gpu: %v", err)
	}
	if offers, err = billing.WithMemory(p, offers); err != nil {
		return q, nil, nil, usage.Errorf("--min-gpu-memory: %v", err)
	}
	var notes []i18n.Text
	if offers, notes, err = t.WithProvider(current, offers); err != nil {
		return q, nil, nil, err
	}
	t.Currency = strings.ToUpper(strings.TrimSpace(t.Currency))
	q = billing.InferenceQuery{Model: in.Model, TokensPerDay: in.TokensPerDay, InputTokensPerDay: in.InputPerDay, Utilisation: util, Currency: t.Currency}
	if q.Today, err = Today(os.LookupEnv, time.Now); err != nil {
		return q, nil, nil, err
	}
	for _, c := range []struct {
		name   string
		v      float64
		dst    **float64
		zeroOK bool // an input price of 0 is a price; an output price of 0 no API has
	}{{"tokens-per-second", in.TokensPerSec, &q.TokensPerSec, false}, {"api-price", in.APIPrice, &q.APIPricePerM, false}, {"api-input-price", in.APIInputPrice, &q.APIInputPricePerM, true}} {
		if !fs.Changed(c.name) {
			continue
		}
		if math.IsNaN(c.v) || math.IsInf(c.v, 0) || c.v < 0 || c.v == 0 && !c.zeroOK || c.v > 1e9 {
			want := "a positive number"
			if c.zeroOK {
				want = "0 or more"
			}
			return q, nil, nil, usage.Errorf("--%s: want %s, at most a billion, got %v", c.name, want, c.v)
		}
		v := c.v
		*c.dst = &v
	}
	if _, err := cat.Rates.Convert(1, "USD", t.Currency); err != nil {
		return q, nil, nil, usage.Errorf("--currency: %v", err)
	}
	return q, offers, notes, nil
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
		return 0, usage.Errorf("--utilisation: want a fraction from 0.01 to 1 such as 0.6, or a percent from 1%% to 100%% such as 60%%, got %s", report.Quote(s))
	}
	return v, nil
}

// ModeFlags refuses a flag the chosen mode of plan does not read: a flag of
// the other mode would be ignored without a word, and a user who passes
// --hours to --inference (or --model without it) believes it shaped the
// answer. plan's own flags are listed with the task's.
func ModeFlags(fs *pflag.FlagSet, inference bool) error {
	trainingOnly := []string{"profile", "gpus", "hours", "days", "starts", "disk", "egress", "interruptible", "one-machine", "shared-disk", "ckpt-every", "ckpt-write", "ckpt-restart", "ckpt-size", "interruptions-per-day", "trials", "seed", "deadline"}
	inferenceOnly := []string{"tokens-per-day", "model", "tokens-per-second", "api-price", "input-tokens-per-day", "api-input-price", "utilisation"}
	unused, mode := inferenceOnly, "without --inference"
	if inference {
		unused, mode = trainingOnly, "with --inference"
	}
	for _, name := range unused {
		if fs.Changed(name) {
			return usage.Errorf("--%s: not used %s", name, mode)
		}
	}
	return nil
}
