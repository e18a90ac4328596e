package billing

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/catalog"
)

func h100(id string, gpus int, hourly float64) catalog.Offer {
	return catalog.Offer{ID: id, Provider: "P", GPU: "H100 SXM", GPUs: gpus, Currency: "USD", Source: "s", AsOf: "d",
		OnDemand: catalog.OnDemand{Hourly: catalog.Known(hourly), Increment: dur(time.Second)}}
}

func TestPlanInference(t *testing.T) {
	price := 1.0 // per 1M output tokens
	// 70B on 8×H100: 4 replicas of the 2-GPU rate, 4 × 1728 = 6912 tok/s, 16/h:
	//   capacity 6912 × 86400 = 597.2 M tokens a day → 1 instance for 100 M
	//   rent 24 × 16 = 384 a day; API 100 × 1 = 100 a day → API cheaper
	//   rent per 1M at full load = 16 / (6912 × 3600) × 1e6 = 0.64300 < 1
	//   → break-even 384 / 1 × 1e6 = 384 M a day
	// 70B on 2×H100 at 1728 tok/s, 4/h:
	//   capacity 149.3 M a day → 1 instance; rent 96 a day < 100 → rent
	//   per 1M = 4 / (1728 × 3600) × 1e6 = 0.64300; break-even 96/1 × 1e6 = 96 M a day
	// 70B on 4 GPUs: 2 × the 2-GPU row (3456) beats the 4-GPU row (2243).
	res, err := PlanInference(InferenceQuery{Model: "70B", TokensPerDay: 100e6, APIPricePerM: &price},
		[]catalog.Offer{h100("x8", 8, 16), h100("x2", 2, 4), h100("x4", 4, 8)}, catalog.Rates{})
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]InferenceOffer{}
	for _, o := range res.Offers {
		by[o.Offer] = o
	}
	x8, x2, x4 := by["x8"], by["x2"], by["x4"]
	if x8.TokensPerSecond != 6912 || x8.Instances != 1 || !near(x8.RentPerDay, 384) || x8.Cheaper != "api" || x8.BreakEvenTokensDay == nil || !near(*x8.BreakEvenTokensDay, 384e6) {
		t.Errorf("x8: %+v", x8)
	}
	if math.Abs(x8.RentPerMillion-0.64300) > 1e-5 {
		t.Errorf("x8 per 1M %v", x8.RentPerMillion)
	}
	if x2.TokensPerSecond != 1728 || !near(x2.RentPerDay, 96) || x2.Cheaper != "rent" || x2.BreakEvenTokensDay == nil || !near(*x2.BreakEvenTokensDay, 96e6) {
		t.Errorf("x2: %+v", x2)
	}
	if x4.TokensPerSecond != 3456 {
		t.Errorf("x4 uses %v tok/s", x4.TokensPerSecond)
	}
	// 8B on a 2-GPU instance: 2 replicas of the 1-GPU row, 2 × 3400.
	res, err = PlanInference(InferenceQuery{Model: "8B", TokensPerDay: 1e6}, []catalog.Offer{h100("x2", 2, 4)}, catalog.Rates{})
	if err != nil || res.Offers[0].TokensPerSecond != 6800 || !strings.Contains(res.API, "DeepInfra") {
		t.Errorf("8B replicas: %+v %v", res, err)
	}
	if _, err := PlanInference(InferenceQuery{Model: "8B", TokensPerDay: 1e6}, []catalog.Offer{{ID: "l4", GPU: "L4", GPUs: 1, Currency: "USD",
		OnDemand: catalog.OnDemand{Hourly: catalog.Known(1)}}}, catalog.Rates{}); err == nil || !strings.Contains(err.Error(), "--tokens-per-second") {
		t.Errorf("no throughput for L4: %v", err)
	}
}

// An 8-GPU node serves 70B fastest as 4 replicas of 2 GPUs (4 × 1728 =
// 6912 tok/s), not as one replica over all 8 (2573): the table's own
// figures say so, and the source says which layout was taken. Only
// measured sizes count: 3 GPUs are 3 replicas of 1 (3 × 419 = 1257), 6 are
// 3 of 2 (3 × 1728 = 5184, above 6 × 419 = 2514).
func TestPlanInferenceLayout(t *testing.T) {
	res, err := PlanInference(InferenceQuery{Model: "70B", TokensPerDay: 1e6},
		[]catalog.Offer{h100("x8", 8, 16), h100("x3", 3, 6), h100("x6", 6, 12)}, catalog.Rates{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		tps float64
		src string
	}{
		"x8": {6912, "4 replicas × 1728 tok/s on 2× H100: LambdaLabsML"},
		"x3": {1257, "3 replicas × 419 tok/s on 1× H100: LambdaLabsML"},
		"x6": {5184, "3 replicas × 1728 tok/s on 2× H100: LambdaLabsML"},
	}
	for _, o := range res.Offers {
		w := want[o.Offer]
		if o.TokensPerSecond != w.tps || !strings.HasPrefix(o.ThroughputSource, w.src) {
			t.Errorf("%s: %v tok/s from %q, want %v from %q…", o.Offer, o.TokensPerSecond, o.ThroughputSource, w.tps, w.src)
		}
	}
}

// The API is paid for input and output tokens at their own prices. For
// 300 M input and 100 M output tokens of 70B a day (USD per 1M in/out):
//
//	DeepInfra 3.3 Turbo 0.10/0.32: 300 × 0.10 + 100 × 0.32 =  62
//	DeepInfra 3.1       0.40/0.40: 300 × 0.40 + 100 × 0.40 = 160
//	Bedrock             0.72/0.72: 300 × 0.72 + 100 × 0.72 = 288
//	Together            0.88/0.88: 300 × 0.88 + 100 × 0.88 = 352
//
// 2×H100 at 4/h serves the 100 M output tokens on 1 instance (1728 ×
// 86400 = 149.3 M) for 96 a day: dearer than 62, cheaper than the other
// three. Per 1M output tokens the cheapest API costs 0.32 + 3 × 0.10 =
// 0.62 with its inputs, below renting's 0.64300 at full load: never.
func TestPlanInferenceInputTokens(t *testing.T) {
	res, err := PlanInference(InferenceQuery{Model: "70B", TokensPerDay: 100e6, InputTokensPerDay: 300e6},
		[]catalog.Offer{h100("x2", 2, 4)}, catalog.Rates{})
	if err != nil {
		t.Fatal(err)
	}
	o := res.Offers[0]
	if !near(o.APIPerDay, 62) || o.Cheaper != "api" || o.CheaperThanAPIs != 3 || o.BreakEvenTokensDay != nil {
		t.Errorf("offer %+v", o)
	}
	var days []float64
	for _, a := range res.APIs {
		days = append(days, a.PerDay)
	}
	if len(days) != 4 || !near(days[0], 62) || !near(days[1], 160) || !near(days[2], 288) || !near(days[3], 352) {
		t.Errorf("API per day %v, want 62 160 288 352", days)
	}
	if res.InputTokensPerDay != 300e6 || !near(res.APIInputPerM, 0.10) || !near(res.APIPerM, 0.32) {
		t.Errorf("result %+v", res)
	}

	// Given prices: 200 M in at 0.5 + 100 M out at 1 = 100 + 100 = 200 a day.
	out, in := 1.0, 0.5
	res, err = PlanInference(InferenceQuery{Model: "70B", TokensPerDay: 100e6, InputTokensPerDay: 200e6, APIPricePerM: &out, APIInputPricePerM: &in},
		[]catalog.Offer{h100("x2", 2, 4)}, catalog.Rates{})
	if err != nil || !near(res.Offers[0].APIPerDay, 200) || len(res.APIs) != 1 || !near(res.APIs[0].PerDay, 200) {
		t.Errorf("given prices: %+v %v", res, err)
	}
	// An output price alone cannot price input tokens.
	_, err = PlanInference(InferenceQuery{Model: "70B", TokensPerDay: 100e6, InputTokensPerDay: 200e6, APIPricePerM: &out},
		[]catalog.Offer{h100("x2", 2, 4)}, catalog.Rates{})
	if err == nil || !strings.HasPrefix(err.Error(), "--api-input-price") {
		t.Errorf("input tokens without an input price: %v", err)
	}
}

// Kept on all day at half load, an instance serves half its rate: 100 M
// tokens a day of 70B on 2×H100 (1728 tok/s, 4/h) take 2 instances, not 1
// (1728 × 86400 × 0.5 = 74.6 M each), and 1M tokens cost
// 4 / (1728 × 3600 × 0.5) × 1e6 = 1.28601, twice 0.64300.
func TestPlanInferenceUtilisation(t *testing.T) {
	full, err := PlanInference(InferenceQuery{Model: "70B", TokensPerDay: 100e6}, []catalog.Offer{h100("x2", 2, 4)}, catalog.Rates{})
	if err != nil {
		t.Fatal(err)
	}
	half, err := PlanInference(InferenceQuery{Model: "70B", TokensPerDay: 100e6, Utilisation: 0.5}, []catalog.Offer{h100("x2", 2, 4)}, catalog.Rates{})
	if err != nil {
		t.Fatal(err)
	}
	f, h := full.Offers[0], half.Offers[0]
	if f.Instances != 1 || h.Instances != 2 || !near(h.RentPerMillion, 2*f.RentPerMillion) || math.Abs(h.RentPerMillion-1.28601) > 1e-5 || !near(h.RentPerDay, 192) {
		t.Errorf("full %+v\nhalf %+v", f, h)
	}
	if full.Utilisation != 1 || half.Utilisation != 0.5 {
		t.Errorf("utilisation %v %v", full.Utilisation, half.Utilisation)
	}
	for _, u := range []float64{-0.1, 1.5, math.NaN()} {
		if _, err := PlanInference(InferenceQuery{Model: "70B", TokensPerDay: 1e6, Utilisation: u}, []catalog.Offer{h100("x2", 2, 4)}, catalog.Rates{}); err == nil || !strings.HasPrefix(err.Error(), "--utilisation") {
			t.Errorf("utilisation %v: %v", u, err)
		}
	}
}

// Every sourced API price of the model is listed, cheapest first and in
// the plan's currency; the verdict is against the cheapest, and each offer
// says how many it beats. 140 M output tokens of 70B a day:
// DeepInfra 3.3 Turbo 44.8, DeepInfra 3.1 56, Bedrock 100.8, Together 123.2;
// 2×H100 at 4/h is 96 a day: it beats 2. In EUR at 0.5 a USD all halve.
func TestPlanInferenceAPIs(t *testing.T) {
	res, err := PlanInference(InferenceQuery{Model: "70B", TokensPerDay: 140e6}, []catalog.Offer{h100("x2", 2, 4)}, catalog.Rates{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range res.APIs {
		got = append(got, fmt.Sprintf("%s %.1f", a.Provider, a.PerDay))
	}
	want := "DeepInfra (Llama 3.3 70B Turbo) 44.8|DeepInfra (Llama 3.1 70B) 56.0|AWS Bedrock (Llama 3.3 70B, us-east) 100.8|Together (Llama 3.1 70B Turbo) 123.2"
	if strings.Join(got, "|") != want {
		t.Errorf("APIs\n%s\nwant\n%s", strings.Join(got, "|"), want)
	}
	o := res.Offers[0]
	if o.CheaperThanAPIs != 2 || o.Cheaper != "api" || !near(o.APIPerDay, 44.8) || !strings.HasPrefix(res.API, "DeepInfra (Llama 3.3 70B Turbo)") || !near(res.APIPerM, 0.32) {
		t.Errorf("offer %+v, API %q at %v", o, res.API, res.APIPerM)
	}
	if a := res.APIs[0]; a.Source != "HF hundredthrun/gpu-cloud-prices" || a.AsOf != "2026-11-05" || !near(a.InputPerM, 0.10) || !near(a.OutputPerM, 0.32) {
		t.Errorf("cheapest %+v", a)
	}
	eur := catalog.Rates{PerUSD: map[string]float64{"EUR": 0.5}}
	res, err = PlanInference(InferenceQuery{Model: "70B", TokensPerDay: 140e6, Currency: "EUR"}, []catalog.Offer{h100("x2", 2, 4)}, eur)
	if err != nil || !near(res.APIs[0].PerDay, 22.4) || !near(res.APIs[0].OutputPerM, 0.16) || !near(res.APIPerM, 0.16) {
		t.Errorf("EUR: %+v %v", res, err)
	}
}

// The model is named as people write it: "70b" and " 70B " are 70B; a
// model with no measured rate and no API price is refused, naming the
// known ones.
func TestPlanInferenceModelName(t *testing.T) {
	for _, m := range []string{"70b", " 70B "} {
		res, err := PlanInference(InferenceQuery{Model: m, TokensPerDay: 1e6}, []catalog.Offer{h100("x2", 2, 4)}, catalog.Rates{})
		if err != nil || res.Model != "70B" || res.Offers[0].TokensPerSecond != 1728 || len(res.APIs) != 4 {
			t.Errorf("%q: %+v %v", m, res, err)
		}
	}
	if m, ok := CanonicalModel(" 8b"); m != "8B" || !ok {
		t.Errorf("CanonicalModel: %q %v", m, ok)
	}
	_, err := PlanInference(InferenceQuery{Model: "13B", TokensPerDay: 1e6}, []catalog.Offer{h100("x2", 2, 4)}, catalog.Rates{})
	if err == nil || !strings.Contains(err.Error(), "--model") || !strings.Contains(err.Error(), "8B or 70B") {
		t.Errorf("13B: %v", err)
	}
}

// A demand no rental could serve is refused with the flag's name: 1e30
// tokens a day is past the bound; 1e15 at 1 tok/s (--tokens-per-second) is
// 1.16e10 instances (1e15 / 86400), which as an int could turn negative
// and make renting "cheaper".
func TestPlanInferenceBeyondAnyRental(t *testing.T) {
	_, err := PlanInference(InferenceQuery{Model: "70B", TokensPerDay: 1e30}, []catalog.Offer{h100("x8", 8, 16)}, catalog.Rates{})
	if err == nil || !strings.Contains(err.Error(), "--tokens-per-day: want a positive number, at most 1e+15, got 1e+30") {
		t.Errorf("got %v", err)
	}
	one, price := 1.0, 1.0
	_, err = PlanInference(InferenceQuery{Model: "70B", TokensPerDay: 1e15, TokensPerSec: &one, APIPricePerM: &price}, []catalog.Offer{h100("x8", 8, 16)}, catalog.Rates{})
	if err == nil || !strings.Contains(err.Error(), "--tokens-per-day: 1e+15 tokens a day need 1.16e+10 instances of x8") {
		t.Errorf("got %v", err)
	}
	// A million instances is the bound: 6912 × 86400 × 1e6 tokens fit.
	if _, err := PlanInference(InferenceQuery{Model: "70B", TokensPerDay: 6912 * 86400 * 1e6}, []catalog.Offer{h100("x8", 8, 16)}, catalog.Rates{}); err != nil {
		t.Errorf("a million instances: %v", err)
	}
}

// A rate measured on a GPU applies to the offers --gpu would find by that
// name, memory included: the 70B A100 rates are the 80 GB card's (the
// 1-GPU one holds 70 GB of FP8 weights), so an "A100 SXM" stated at 80 GB
// takes them and an A100 of 40 GB, left without a rate, is counted in a
// note rather than dropped unsaid.
func TestPlanInferenceMemory(t *testing.T) {
	offer := func(id, gpu string, gpus int, mem catalog.Fee) catalog.Offer {
		o := h100(id, gpus, 2)
		o.GPU, o.GPUMemoryGB = gpu, mem
		return o
	}
	noPrice := offer("np", "A100 80GB", 1, catalog.Fee{})
	noPrice.OnDemand.Hourly = catalog.Fee{}
	res, err := PlanInference(InferenceQuery{Model: "70B", TokensPerDay: 1e6}, []catalog.Offer{
		offer("sxm80", "A100 SXM", 1, catalog.Known(80)),
		offer("x8-80", "A100 80GB SXM", 8, catalog.Known(80)),
		offer("sxm40", "A100 SXM", 8, catalog.Known(40)),
		offer("pcie40", "A100 40GB", 2, catalog.Known(40)),
		offer("sxm?", "A100 SXM", 1, catalog.Fee{}),
		noPrice,
	}, catalog.Rates{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, o := range res.Offers {
		got[o.Offer] = o.TokensPerSecond
	}
	// 8 GPUs: 4 replicas of the 2-GPU rate, 4 × 663.
	if len(got) != 2 || got["sxm80"] != 209 || got["x8-80"] != 2652 {
		t.Errorf("rates %v, want sxm80 209 and x8-80 2652 only", got)
	}
	want := []string{
		"3 offers left out: no measured 70B rate on A100 SXM, A100 40GB; measure one and pass --tokens-per-second",
		"1 offer left out: no on-demand price (renting to serve all day is priced on demand)",
	}
	if strings.Join(strs(res.Notes), "\n") != strings.Join(want, "\n") {
		t.Errorf("notes\n%s\nwant\n%s", strings.Join(strs(res.Notes), "\n"), strings.Join(want, "\n"))
	}
}

// The rates were measured on SXM cards (issue #56: an H100 PCIe, with 2.0
// TB/s to the SXM's 3.35, took the SXM rate): a PCIe or NVL card takes
// none and is counted in the note; an offer that names no form factor
// takes the rate, its source saying on which card it was measured.
func TestPlanInferenceFormFactor(t *testing.T) {
	offer := func(id, gpu string) catalog.Offer {
		o := h100(id, 1, 2)
		o.GPU = gpu
		return o
	}
	res, err := PlanInference(InferenceQuery{Model: "8B", TokensPerDay: 1e6}, []catalog.Offer{
		offer("sxm", "H100 SXM"), offer("pcie", "H100 PCIe"), offer("nvl", "H100 NVL"), offer("plain", "H100"),
	}, catalog.Rates{})
	if err != nil {
		t.Fatal(err)
	}
	src := map[string]string{}
	for _, o := range res.Offers {
		src[o.Offer] = o.ThroughputSource
	}
	if len(src) != 2 || strings.Contains(src["sxm"], "may not be") ||
		!strings.HasSuffix(src["plain"], `; measured on H100 SXM, which the offer's "H100" may not be`) {
		t.Errorf("rated %q; want sxm and plain only, plain with the form it was measured on", src)
	}
	if want := "2 offers left out: no measured 8B rate on H100 PCIe, H100 NVL; measure one and pass --tokens-per-second"; len(res.Notes) == 0 || res.Notes[0].String() != want {
		t.Errorf("notes %q, want %q first", strs(res.Notes), want)
	}
}
