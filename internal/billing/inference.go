package billing

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/gpurent/gpurent/internal/catalog"
	"github.com/gpurent/gpurent/internal/i18n"
)

// Throughput is a measured serving rate: aggregate output tokens per second
// of a model on a number of GPUs, with where it was measured.
type Throughput struct {
	Model string // "8B" or "70B"
	GPU   string // model name, matched like catalog offers
	// Form is the measured card's form factor ("SXM"): a PCIe or NVL
	// card of the same name has less memory bandwidth and power, so it
	// does not take the rate.
	Form      string
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

// Throughputs are the sourced serving rates (internal/catalog/research/catalog_notes.md
// §4.1): Llama-3.1 FP8, vLLM 0.5.4, batched, on "NVIDIA H100-80GB-SXM and
// NVIDIA A100-80GB-SXM GPUs" (benchmark_v0.md, Benchmark Design). A new
// slice each call, so no caller can change the table for another.
func Throughputs() []Throughput {
	return []Throughput{
		{"8B", "A100 80GB", "SXM", 1, 1518, "LambdaLabsML/vllm-benchmark benchmark_v0.md (Llama-3.1-8B FP8, vLLM 0.5.4, 320 prompts)", "undated (vLLM 0.5.4)"},
		{"8B", "H100", "SXM", 1, 3400, "LambdaLabsML/vllm-benchmark benchmark_v0.md (Llama-3.1-8B FP8, vLLM 0.5.4)", "undated (vLLM 0.5.4)"},
		// The source says "A100"; its 1×A100 figure holds 70 GB of FP8
		// weights, which only the 80 GB card can, so it is that card
		// (a 2×40 GB instance would hold the weights with little room
		// for the KV cache: no measured rate).
		{"70B", "A100 80GB", "SXM", 1, 209, "LambdaLabsML/vllm-benchmark benchmark_v0.md (Llama-3.1-70B FP8, vLLM 0.5.4, 4k context)", "undated (vLLM 0.5.4)"},
		{"70B", "A100 80GB", "SXM", 2, 663, "LambdaLabsML/vllm-benchmark benchmark_v0.md (Llama-3.1-70B FP8, vLLM 0.5.4)", "undated (vLLM 0.5.4)"},
		{"70B", "H100", "SXM", 1, 419, "LambdaLabsML/vllm-benchmark benchmark_v0.md (Llama-3.1-70B FP8, vLLM 0.5.4)", "undated (vLLM 0.5.4)"},
		{"70B", "H100", "SXM", 2, 1728, "LambdaLabsML/vllm-benchmark benchmark_v0.md (Llama-3.1-70B FP8, vLLM 0.5.4)", "undated (vLLM 0.5.4)"},
		{"70B", "H100", "SXM", 4, 2243, "LambdaLabsML/vllm-benchmark benchmark_v0.md (Llama-3.1-70B FP8, vLLM 0.5.4)", "undated (vLLM 0.5.4)"},
		{"70B", "H100", "SXM", 8, 2573, "LambdaLabsML/vllm-benchmark benchmark_v0.md (Llama-3.1-70B FP8, vLLM 0.5.4)", "undated (vLLM 0.5.4)"},
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
	Model        string  // "8B" or "70B", in any case and spacing
	TokensPerDay float64 // output tokens a day
	// InputTokensPerDay are the prompt tokens a day. They are priced by
	// the API but add no rented capacity: the measured output rates were
	// taken with their benchmark's prompts already being processed.
	InputTokensPerDay float64
	TokensPerSec      *float64 // per instance, overriding the table
	APIPricePerM      *float64 // per 1M output tokens in the plan's currency, overriding the table
	// APIInputPricePerM prices the input tokens with APIPricePerM; nil
	// with APIPricePerM is allowed only when there are no input tokens,
	// since pricing them at 0 would flatter the API.
	APIInputPricePerM *float64
	// Utilisation is the share of each instance's measured rate that the
	// traffic keeps busy, in (0, 1]; 0 stands for 1 (full load). Demand is
	// uneven through a day, and instances are rented for all of it.
	Utilisation float64
	Currency    string
	Today       time.Time // the day the offers' price ages are judged on; zero: not judged
}

// InferenceOffer compares renting one offer with calling the API.
type InferenceOffer struct {
	Offer           string  `json:"offer"`
	Provider        string  `json:"provider"`
	GPU             string  `json:"gpu"`
	TokensPerSecond float64 `json:"tokens_per_second"` // per instance, at full load
	Instances       int     `json:"instances"`
	RentPerDay      float64 `json:"rent_per_day"`     // instances kept on 24 h at the on-demand price
	RentPerMillion  float64 `json:"rent_per_million"` // per 1M output tokens at the plan's utilisation
	APIPerDay       float64 `json:"api_per_day"`      // the cheapest API's
	// BreakEvenTokensDay are the output tokens a day, with input tokens in
	// the query's proportion, above which one instance beats the cheapest
	// API; nil: at the plan's utilisation it never does.
	BreakEvenTokensDay *float64 `json:"break_even_tokens_per_day"`
	Cheaper            string   `json:"cheaper"` // "rent" or "api", against the cheapest API
	// CheaperThanAPIs counts the listed APIs that cost more a day than
	// renting: the cheapest API may be one a user cannot or will not use.
	CheaperThanAPIs  int    `json:"cheaper_than_apis"`
	ThroughputSource string `json:"throughput_source"`
	// AsOf, PriceDate and PriceAgeDays are as in Bill; Notes warns of
	// prices that are old, undated or dated after today.
	AsOf         string      `json:"as_of"`
	PriceDate    string      `json:"price_date,omitempty"`
	PriceAgeDays *int        `json:"price_age_days,omitempty"`
	Notes        []i18n.Text `json:"notes,omitempty"`
}

// InferenceAPI is one API price compared with, in the plan's currency.
type InferenceAPI struct {
	Provider   string  `json:"provider"`
	InputPerM  float64 `json:"input_per_million"`
	OutputPerM float64 `json:"output_per_million"`
	PerDay     float64 `json:"per_day"` // the query's input and output tokens a day
	Source     string  `json:"source"`
	AsOf       string  `json:"as_of"`
}

// Inference is the rent-versus-API comparison.
type Inference struct {
	Currency          string  `json:"currency"`
	Model             string  `json:"model"`
	TokensPerDay      float64 `json:"tokens_per_day"`
	InputTokensPerDay float64 `json:"input_tokens_per_day"`
	Utilisation       float64 `json:"utilisation"`
	// API and APIPerM are the cheapest API for the query's tokens and its
	// output price, kept from before APIs listed them all.
	API          string  `json:"api"`
	APIPerM      float64 `json:"api_price_per_million"`
	APIInputPerM float64 `json:"api_input_price_per_million"`
	// APIs are every sourced API price of the model (or the one given),
	// cheapest a day first: the cheapest alone hides how far the others are.
	APIs   []InferenceAPI   `json:"apis"`
	Offers []InferenceOffer `json:"offers"`
	// Notes count the offers left out, and why: an offer with no measured
	// rate silently missing would read as not sold.
	Notes []i18n.Text `json:"notes,omitempty"`
}

// KnownModels are the models with a measured rate or a sourced API price,
// in table order.
func KnownModels() []string {
	var out []string
	for _, t := range Throughputs() {
		if !slices.Contains(out, t.Model) {
			out = append(out, t.Model)
		}
	}
	for _, a := range APIPrices() {
		if !slices.Contains(out, a.Model) {
			out = append(out, a.Model)
		}
	}
	return out
}

// CanonicalModel is the known model that s names, ignoring case and
// surrounding space ("70b" is 70B), and whether there is one; an unknown
// name comes back trimmed.
func CanonicalModel(s string) (string, bool) {
	s = strings.TrimSpace(s)
	for _, m := range KnownModels() {
		if strings.EqualFold(s, m) {
			return m, true
		}
	}
	return s, false
}

// ModelList is the known models for a message: "8B or 70B".
func ModelList() string {
	m := KnownModels()
	if len(m) < 2 {
		return strings.Join(m, "")
	}
	return strings.Join(m[:len(m)-1], ", ") + " or " + m[len(m)-1]
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
		model := catalog.GPUMatcher(t.GPU)
		out = append(out, servingRate{t, func(o *catalog.Offer) bool {
			f := formOf(o.GPU)
			return model(o) && (f == "" || strings.EqualFold(f, t.Form))
		}})
	}
	return out
}

// formOf is the form factor a GPU's name states (SXM, PCIe, NVL), or "".
func formOf(gpu string) string {
	for _, w := range strings.FieldsFunc(strings.ToLower(gpu), func(r rune) bool { return r == ' ' || r == '-' || r == '(' || r == ')' || r == '/' }) {
		switch {
		case strings.HasPrefix(w, "sxm"):
			return "SXM"
		case w == "pcie":
			return "PCIe"
		case w == "nvl":
			return "NVL"
		}
	}
	return ""
}

// throughputFor is the instance's serving rate: data-parallel replicas of
// the measured tensor-parallel size, among those that divide the
// instance, that serves the most tokens a second. The largest size is not
// always it: on 8×H100 one 70B replica over 8 GPUs serves 2573 tok/s, four
// over 2 GPUs each 4 × 1728 = 6912. Only sizes measured on the offer's GPU
// count, so no rate is extrapolated. The rate's GPU is matched as --gpu is
// (catalog.GPUMatcher): "A100 80GB" is an "A100 SXM" offer stated at 80 GB
// too, never an A100 of 40 GB.
func throughputFor(model string, o *catalog.Offer, rates []servingRate) (float64, string, bool) {
	var best *servingRate
	var bestTPS float64
	for i := range rates {
		t := &rates[i]
		if t.Model != model || t.GPUs <= 0 || o.GPUs%t.GPUs != 0 || !t.applies(o) {
			continue
		}
		// On a tie the larger size wins: fewer replicas to run.
		if tps := float64(o.GPUs/t.GPUs) * t.TokensSec; best == nil || tps > bestTPS || tps == bestTPS && t.GPUs > best.GPUs {
			best, bestTPS = t, tps
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
	if best.Form != "" && formOf(o.GPU) == "" {
		src += fmt.Sprintf("; measured on %s %s, which the offer's %q may not be", best.GPU, best.Form, o.GPU)
	}
	return bestTPS, src, true
}

// maxInstances bounds the instances an inference plan may need: a million
// is beyond any provider's stock, and the count must fit an int.
const maxInstances = 1e6

// maxTokensPerDay is a quadrillion tokens a day, some thousand times what
// the largest APIs serve: beyond it a figure is a typo.
const maxTokensPerDay = 1e15

// validTokens checks a tokens-a-day figure named by its flag.
func validTokens(flag string, v float64, zeroOK bool) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || v == 0 && !zeroOK || v > maxTokensPerDay {
		want := "a positive number"
		if zeroOK {
			want = "0 or more"
		}
		return i18n.Errorf("--%s: want %s, at most %g, got %v", flag, want, maxTokensPerDay, v)
	}
	return nil
}

// apis are the API prices the query is compared with, in cur, cheapest a
// day first: the given prices when there are, else every sourced one of
// the model.
func apis(q InferenceQuery, model, cur string, rates catalog.Rates) ([]InferenceAPI, error) {
	perDay := func(in, out float64) float64 {
		return q.InputTokensPerDay/1e6*in + q.TokensPerDay/1e6*out
	}
	if q.APIPricePerM != nil {
		a := InferenceAPI{Provider: "--api-price", OutputPerM: *q.APIPricePerM, Source: "--api-price", AsOf: "given"}
		switch {
		case q.APIInputPricePerM != nil:
			a.InputPerM, a.Source = *q.APIInputPricePerM, "--api-price, --api-input-price"
		case q.InputTokensPerDay > 0:
			return nil, i18n.Errorf("--api-input-price: needed to price --input-tokens-per-day with --api-price (its price per 1M input tokens, in %s)", cur)
		}
		a.PerDay = perDay(a.InputPerM, a.OutputPerM)
		return []InferenceAPI{a}, nil
	}
	if q.APIInputPricePerM != nil {
		return nil, i18n.Errorf("--api-input-price: needs --api-price: a sourced API's input price goes with its own output price")
	}
	var out []InferenceAPI
	for _, p := range APIPrices() {
		if p.Model != model {
			continue
		}
		a := InferenceAPI{Provider: p.Provider, Source: p.Source, AsOf: p.AsOf}
		var err error
		if a.InputPerM, err = rates.Convert(p.InputPerM, "USD", cur); err != nil {
			return nil, err
		}
		if a.OutputPerM, err = rates.Convert(p.OutputPerM, "USD", cur); err != nil {
			return nil, err
		}
		a.PerDay = perDay(a.InputPerM, a.OutputPerM)
		out = append(out, a)
	}
	if len(out) == 0 {
		return nil, i18n.Errorf("--model: no API price for %q; known models are %s, or pass --api-price", model, ModelList())
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].PerDay < out[j].PerDay })
	return out, nil
}

// PlanInference compares renting each offer (kept on all day, on demand)
// with hosted APIs for q.TokensPerDay output and q.InputTokensPerDay input
// tokens.
func PlanInference(q InferenceQuery, offers []catalog.Offer, rates catalog.Rates) (*Inference, error) {
	cur := q.Currency
	if cur == "" {
		cur = "USD"
	}
	if err := validTokens("tokens-per-day", q.TokensPerDay, false); err != nil {
		return nil, err
	}
	if err := validTokens("input-tokens-per-day", q.InputTokensPerDay, true); err != nil {
		return nil, err
	}
	util := q.Utilisation
	if util == 0 {
		util = 1
	}
	if !(util > 0 && util <= 1) {
		return nil, i18n.Errorf("--utilisation: want a fraction in (0, 1], got %v", q.Utilisation)
	}
	model, known := CanonicalModel(q.Model)
	if !known && (q.TokensPerSec == nil || q.APIPricePerM == nil) {
		return nil, i18n.Errorf("--model: want %s, got %q (or give both --tokens-per-second and --api-price)", ModelList(), q.Model)
	}
	list, err := apis(q, model, cur, rates)
	if err != nil {
		return nil, err
	}
	cheapest := list[0]
	res := &Inference{Currency: cur, Model: model, TokensPerDay: q.TokensPerDay, InputTokensPerDay: q.InputTokensPerDay, Utilisation: util,
		API: cheapest.Provider, APIPerM: cheapest.OutputPerM, APIInputPerM: cheapest.InputPerM, APIs: list, Offers: []InferenceOffer{}}
	if q.APIPricePerM == nil {
		res.API = fmt.Sprintf("%s, %s (%s)", cheapest.Provider, cheapest.Source, cheapest.AsOf)
	}
	apiPerDay := cheapest.PerDay
	// The cheapest API's price per 1M output tokens with the input tokens
	// that come with them, so renting and the API are compared per output
	// token at the query's mix.
	apiPerM := cheapest.OutputPerM + cheapest.InputPerM*q.InputTokensPerDay/q.TokensPerDay
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
			return nil, i18n.Errorf("offer %s: %w", o.ID, err)
		}
		hourly *= f
		var tps float64
		var src string
		if q.TokensPerSec != nil {
			tps, src = *q.TokensPerSec, "--tokens-per-second"
		} else if tps, src, ok = throughputFor(model, o, measured); !ok {
			unrated++
			if !slices.Contains(noRate, o.GPU) {
				noRate = append(noRate, o.GPU)
			}
			continue
		}
		need := math.Ceil(q.TokensPerDay / (tps * 86400 * util))
		if need > maxInstances {
			return nil, i18n.Errorf("--tokens-per-day: %g tokens a day need %.3g instances of %s at %g tok/s, more than any provider rents", q.TokensPerDay, need, o.ID, tps*util)
		}
		n := int(need)
		io := InferenceOffer{
			Offer: o.ID, Provider: o.Provider, GPU: o.GPU, TokensPerSecond: tps, Instances: n,
			RentPerDay: float64(n) * 24 * hourly, RentPerMillion: hourly / (tps * 3600 * util) * 1e6,
			APIPerDay: apiPerDay, ThroughputSource: src, AsOf: o.AsOf,
		}
		var stale i18n.Text
		if io.PriceDate, io.PriceAgeDays, stale = priceAge(o, q.Today); !stale.IsZero() {
			io.Notes = append(io.Notes, stale)
		}
		if io.RentPerMillion < apiPerM {
			be := 24 * hourly / apiPerM * 1e6
			io.BreakEvenTokensDay = &be
		}
		io.Cheaper = "api"
		if io.RentPerDay < apiPerDay {
			io.Cheaper = "rent"
		}
		for _, a := range list {
			if io.RentPerDay < a.PerDay {
				io.CheaperThanAPIs++
			}
		}
		res.Offers = append(res.Offers, io)
	}
	if len(res.Offers) == 0 {
		return nil, i18n.Errorf("no offer of this GPU has a measured throughput for %s with an on-demand price; pass --tokens-per-second", model)
	}
	if unrated > 0 {
		var more i18n.Text
		if len(noRate) > 12 {
			noRate, more = noRate[:12], i18n.Textf(" and %d more", len(noRate)-12)
		}
		res.Notes = append(res.Notes, i18n.Textf("%s left out: no measured %s rate on %s%s; measure one and pass --tokens-per-second",
			i18n.Plural(unrated, "%d offer", "%d offers"), model, strings.Join(noRate, ", "), more))
	}
	if noPrice > 0 {
		res.Notes = append(res.Notes, i18n.Textf("%s left out: no on-demand price (renting to serve all day is priced on demand)", i18n.Plural(noPrice, "%d offer", "%d offers")))
	}
	sort.SliceStable(res.Offers, func(i, j int) bool { return res.Offers[i].RentPerDay < res.Offers[j].RentPerDay })
	return res, nil
}
