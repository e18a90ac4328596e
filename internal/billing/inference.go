package billing

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/gpurent/gpurent/internal/catalog"
	"github.com/gpurent/gpurent/internal/report"
)

// Throughput is a measured serving rate: aggregate output tokens per second
// of a model on a number of GPUs, with where it was measured.
type Throughput struct {
	Model     string  // "8B" or "70B"
	GPU       string  // model name, matched like catalog offers
	GPUs      int     // GPUs serving one replica
	TokensSec float64 // aggregate output tokens per second, batched
	Source    string
	AsOf      string
}

// APIPrice is a hosted API's price per million tokens.
type APIPrice struct {
	Model        string
	Provider     string
	InputPerM    float64 // USD per 1M input tokens
	OutputPerM   float64 // USD per 1M output tokens
	Source, AsOf string
}

// Throughputs are the sourced serving rates (shared/reference/catalog_notes.md
// §4.1): Llama-3.1 FP8, vLLM 0.5.4, batched. A new slice each call, so no
// caller can change the table for another.
func Throughputs() []Throughput {
	return []Throughput{
		{"8B", "A100 80GB", 1, 1518, "LambdaLabsML/vllm-benchmark benchmark_v0.md (Llama-3.1-8B FP8, vLLM 0.5.4, 320 prompts)", "undated (vLLM 0.5.4)"},
		{"8B", "H100", 1, 3400, "LambdaLabsML/vllm-benchmark benchmark_v0.md (Llama-3.1-8B FP8, vLLM 0.5.4)", "undated (vLLM 0.5.4)"},
		// The source says "A100"; its 1×A100 figure holds 70 GB of FP8
		// weights, which only the 80 GB card can, so it is that card
		// (a 2×40 GB instance would hold the weights with little room
		// for the KV cache: no measured rate).
		{"70B", "A100 80GB", 1, 209, "LambdaLabsML/vllm-benchmark benchmark_v0.md (Llama-3.1-70B FP8, vLLM 0.5.4, 4k context)", "undated (vLLM 0.5.4)"},
		{"70B", "A100 80GB", 2, 663, "LambdaLabsML/vllm-benchmark benchmark_v0.md (Llama-3.1-70B FP8, vLLM 0.5.4)", "undated (vLLM 0.5.4)"},
		{"70B", "H100", 1, 419, "LambdaLabsML/vllm-benchmark benchmark_v0.md (Llama-3.1-70B FP8, vLLM 0.5.4)", "undated (vLLM 0.5.4)"},
		{"70B", "H100", 2, 1728, "LambdaLabsML/vllm-benchmark benchmark_v0.md (Llama-3.1-70B FP8, vLLM 0.5.4)", "undated (vLLM 0.5.4)"},
		{"70B", "H100", 4, 2243, "LambdaLabsML/vllm-benchmark benchmark_v0.md (Llama-3.1-70B FP8, vLLM 0.5.4)", "undated (vLLM 0.5.4)"},
		{"70B", "H100", 8, 2573, "LambdaLabsML/vllm-benchmark benchmark_v0.md (Llama-3.1-70B FP8, vLLM 0.5.4)", "undated (vLLM 0.5.4)"},
	}
}

// APIPrices are sourced hosted-API prices (catalog_notes.md §4.2).
func APIPrices() []APIPrice {
	return []APIPrice{
		{"8B", "Together (Llama 3.1 8B Turbo)", 0.18, 0.18, "provider registries in public code", "undated"},
		{"8B", "DeepInfra (Llama 3.1 8B)", 0.02, 0.04, "HF hundredthrun/gpu-cloud-prices", "2026-11-05"},
		{"8B", "Fireworks (4B-16B tier)", 0.20, 0.20, "docs.fireworks.ai/serverless/pricing via silybench", "2026-09-25"},
		{"70B", "Together (Llama 3.1 70B Turbo)", 0.88, 0.88, "getmaxim bifrost calculator; code registries", "2025-26"},
		{"70B", "DeepInfra (Llama 3.1 70B)", 0.40, 0.40, "bifrost table", "undated"},
		{"70B", "AWS Bedrock (Llama 3.3 70B, us-east)", 0.72, 0.72, "bedrock.json feed via 2026-10-06 sources file", "2026-10-03"},
		{"70B", "DeepInfra (Llama 3.3 70B Turbo)", 0.10, 0.32, "HF hundredthrun/gpu-cloud-prices", "2026-11-05"},
	}
}

// InferenceQuery is what the user wants to serve.
type InferenceQuery struct {
	Model        string   // "8B" or "70B"
	TokensPerDay float64  // output tokens a day
	TokensPerSec *float64 // per instance, overriding the table
	APIPricePerM *float64 // per 1M output tokens in the plan's currency, overriding the table
	Currency     string
	Today        time.Time // the day the offers' price ages are judged on; zero: not judged
}

// InferenceOffer compares renting one offer with calling the API.
type InferenceOffer struct {
	Offer              string   `json:"offer"`
	Provider           string   `json:"provider"`
	GPU                string   `json:"gpu"`
	TokensPerSecond    float64  `json:"tokens_per_second"` // per instance
	Instances          int      `json:"instances"`
	RentPerDay         float64  `json:"rent_per_day"`     // instances kept on 24 h at the on-demand price
	RentPerMillion     float64  `json:"rent_per_million"` // at full load
	APIPerDay          float64  `json:"api_per_day"`
	BreakEvenTokensDay *float64 `json:"break_even_tokens_per_day"` // nil: renting never beats the API
	Cheaper            string   `json:"cheaper"`                   // "rent" or "api"
	ThroughputSource   string   `json:"throughput_source"`
	// AsOf, PriceDate and PriceAgeDays are as in Bill; Notes warns of
	// prices that are old, undated or dated after today.
	AsOf         string   `json:"as_of"`
	PriceDate    string   `json:"price_date,omitempty"`
	PriceAgeDays *int     `json:"price_age_days,omitempty"`
	Notes        []string `json:"notes,omitempty"`
}

// Inference is the rent-versus-API comparison.
type Inference struct {
	Currency     string           `json:"currency"`
	Model        string           `json:"model"`
	TokensPerDay float64          `json:"tokens_per_day"`
	API          string           `json:"api"`
	APIPerM      float64          `json:"api_price_per_million"`
	Offers       []InferenceOffer `json:"offers"`
	// Notes count the offers left out, and why: an offer with no measured
	// rate silently missing would read as not sold.
	Notes []string `json:"notes,omitempty"`
}

// servingRate is a measured rate with the test of the offers it applies
// to, built once per plan.
type servingRate struct {
	Throughput
	applies func(*catalog.Offer) bool
}

func servingRates() []servingRate {
	var out []servingRate
	for _, t := range Throughputs() {
		out = append(out, servingRate{t, catalog.GPUMatcher(t.GPU)})
	}
	return out
}

// throughputFor is the instance's serving rate: data-parallel replicas of
// the largest measured tensor-parallel size that divides the instance.
// The rate's GPU is matched as --gpu is (catalog.GPUMatcher): "A100 80GB"
// is an "A100 SXM" offer stated at 80 GB too, never an A100 of 40 GB.
func throughputFor(model string, o *catalog.Offer, rates []servingRate) (float64, string, bool) {
	var best *servingRate
	for i := range rates {
		t := &rates[i]
		if t.Model != model || o.GPUs%t.GPUs != 0 || !t.applies(o) {
			continue
		}
		if best == nil || t.GPUs > best.GPUs {
			best = t
		}
	}
	if best == nil {
		return 0, "", false
	}
	replicas := o.GPUs / best.GPUs
	src := best.Source
	if replicas > 1 {
		src = fmt.Sprintf("%d replicas × %g tok/s on %d× %s: %s", replicas, best.TokensSec, best.GPUs, best.GPU, best.Source)
	}
	return float64(replicas) * best.TokensSec, src, true
}

// maxInstances bounds the instances an inference plan may need: a million
// is beyond any provider's stock, and the count must fit an int.
const maxInstances = 1e6

// PlanInference compares renting each offer (kept on all day, on demand)
// with a hosted API for q.TokensPerDay output tokens.
func PlanInference(q InferenceQuery, offers []catalog.Offer, rates catalog.Rates) (*Inference, error) {
	cur := q.Currency
	if cur == "" {
		cur = "USD"
	}
	if q.TokensPerDay <= 0 || math.IsNaN(q.TokensPerDay) || math.IsInf(q.TokensPerDay, 0) {
		return nil, fmt.Errorf("--tokens-per-day: want a positive number, got %v", q.TokensPerDay)
	}
	res := &Inference{Currency: cur, Model: q.Model, TokensPerDay: q.TokensPerDay, Offers: []InferenceOffer{}}
	if q.APIPricePerM != nil {
		res.API, res.APIPerM = "--api-price", *q.APIPricePerM
	} else {
		best := math.Inf(1)
		for _, a := range APIPrices() {
			if a.Model == q.Model && a.OutputPerM < best {
				best = a.OutputPerM
				res.API = fmt.Sprintf("%s, %s (%s)", a.Provider, a.Source, a.AsOf)
			}
		}
		if math.IsInf(best, 1) {
			return nil, fmt.Errorf("--model: no API price for %q; known models are 8B and 70B, or pass --api-price", q.Model)
		}
		v, err := rates.Convert(best, "USD", cur)
		if err != nil {
			return nil, err
		}
		res.APIPerM = v
	}
	apiPerDay := q.TokensPerDay / 1e6 * res.APIPerM
	measured := servingRates()
	// The offers left out for want of a price or of a rate, and the
	// GPUs of the latter, each once.
	noPrice, unrated := 0, 0
	var noRate []string
	for i := range offers {
		o := &offers[i]
		hourly, ok := o.OnDemand.Hourly.Value()
		if !ok {
			noPrice++
			continue
		}
		f, err := rates.Convert(1, o.Currency, cur)
		if err != nil {
			return nil, fmt.Errorf("offer %s: %w", o.ID, err)
		}
		hourly *= f
		var tps float64
		var src string
		if q.TokensPerSec != nil {
			tps, src = *q.TokensPerSec, "--tokens-per-second"
		} else if tps, src, ok = throughputFor(q.Model, o, measured); !ok {
			unrated++
			if !slices.Contains(noRate, o.GPU) {
				noRate = append(noRate, o.GPU)
			}
			continue
		}
		need := math.Ceil(q.TokensPerDay / (tps * 86400))
		if need > maxInstances {
			return nil, fmt.Errorf("--tokens-per-day: %g tokens a day need %.3g instances of %s at %g tok/s, more than any provider rents", q.TokensPerDay, need, o.ID, tps)
		}
		n := int(need)
		io := InferenceOffer{
			Offer: o.ID, Provider: o.Provider, GPU: o.GPU, TokensPerSecond: tps, Instances: n,
			RentPerDay: float64(n) * 24 * hourly, RentPerMillion: hourly / (tps * 3600) * 1e6,
			APIPerDay: apiPerDay, ThroughputSource: src, AsOf: o.AsOf,
		}
		var stale string
		if io.PriceDate, io.PriceAgeDays, stale = priceAge(o, q.Today); stale != "" {
			io.Notes = append(io.Notes, stale)
		}
		if io.RentPerMillion < res.APIPerM {
			be := 24 * hourly / res.APIPerM * 1e6
			io.BreakEvenTokensDay = &be
		}
		io.Cheaper = "api"
		if io.RentPerDay < apiPerDay {
			io.Cheaper = "rent"
		}
		res.Offers = append(res.Offers, io)
	}
	if len(res.Offers) == 0 {
		return nil, fmt.Errorf("no offer of this GPU has a measured throughput for %s with an on-demand price; pass --tokens-per-second", q.Model)
	}
	if unrated > 0 {
		more := ""
		if len(noRate) > 12 {
			noRate, more = noRate[:12], fmt.Sprintf(" and %d more", len(noRate)-12)
		}
		res.Notes = append(res.Notes, fmt.Sprintf("%s left out: no measured %s rate on %s%s; measure one and pass --tokens-per-second",
			report.Count(unrated, "offer"), q.Model, strings.Join(noRate, ", "), more))
	}
	if noPrice > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%s left out: no on-demand price (renting to serve all day is priced on demand)", report.Count(noPrice, "offer")))
	}
	sort.SliceStable(res.Offers, func(i, j int) bool { return res.Offers[i].RentPerDay < res.Offers[j].RentPerDay })
	return res, nil
}
