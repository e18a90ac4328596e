package billing

import (
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
	// 70B on 8×H100 at 2573 tok/s (the 8-GPU row), 16/h:
	//   capacity 2573 × 86400 = 222.3 M tokens a day → 1 instance for 100 M
	//   rent 24 × 16 = 384 a day; API 100 × 1 = 100 a day → API cheaper
	//   rent per 1M at full load = 16 / (2573 × 3600) × 1e6 = 1.7274 > 1 → never
	// 70B on 2×H100 at 1728 tok/s, 4/h:
	//   capacity 149.3 M a day → 1 instance; rent 96 a day < 100 → rent
	//   per 1M = 4 / (1728 × 3600) × 1e6 = 0.64300; break-even 96/1 × 1e6 = 96 M a day
	// 70B on 4 GPUs: the 4-GPU row (2243), not 2 × the 2-GPU row.
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
	if x8.TokensPerSecond != 2573 || x8.Instances != 1 || !near(x8.RentPerDay, 384) || x8.Cheaper != "api" || x8.BreakEvenTokensDay != nil {
		t.Errorf("x8: %+v", x8)
	}
	if math.Abs(x8.RentPerMillion-1.7274) > 1e-4 {
		t.Errorf("x8 per 1M %v", x8.RentPerMillion)
	}
	if x2.TokensPerSecond != 1728 || !near(x2.RentPerDay, 96) || x2.Cheaper != "rent" || x2.BreakEvenTokensDay == nil || !near(*x2.BreakEvenTokensDay, 96e6) {
		t.Errorf("x2: %+v", x2)
	}
	if x4.TokensPerSecond != 2243 {
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

// A demand no rental could serve is refused with the flag's name: 1e30
// tokens a day at 2573 tok/s is 4.5e21 instances (1e30 / (2573 × 86400)),
// which as an int turned negative and made renting "cheaper".
func TestPlanInferenceBeyondAnyRental(t *testing.T) {
	_, err := PlanInference(InferenceQuery{Model: "70B", TokensPerDay: 1e30}, []catalog.Offer{h100("x8", 8, 16)}, catalog.Rates{})
	if err == nil || !strings.Contains(err.Error(), "--tokens-per-day: 1e+30 tokens a day need 4.5e+21 instances of x8") {
		t.Errorf("got %v", err)
	}
	// A million instances is the bound: 2573 × 86400 × 1e6 tokens fit.
	if _, err := PlanInference(InferenceQuery{Model: "70B", TokensPerDay: 2573 * 86400 * 1e6}, []catalog.Offer{h100("x8", 8, 16)}, catalog.Rates{}); err != nil {
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
	if strings.Join(res.Notes, "\n") != strings.Join(want, "\n") {
		t.Errorf("notes\n%s\nwant\n%s", strings.Join(res.Notes, "\n"), strings.Join(want, "\n"))
	}
}
