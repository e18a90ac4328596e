package billing

import (
	"testing"

	"github.com/gpurent/gpurent/internal/catalog"
)

// BenchmarkPlanWholeCatalog is `gpurent plan` over every embedded offer:
// 300 h, checkpoints every 30 min, 1.5 interruptions a day, 10000 trials per
// offer with a spot price. Run with -cpu 1,2 to see one core and two.
func BenchmarkPlanWholeCatalog(b *testing.B) { benchPlan(b, Parallel) }

// BenchmarkPlanWholeCatalogSerial is the same with the offers in turn.
func BenchmarkPlanWholeCatalogSerial(b *testing.B) { benchPlan(b, nil) }

func benchPlan(b *testing.B, run func(int, func(int))) {
	cat, err := catalog.Default()
	if err != nil {
		b.Fatal(err)
	}
	rate := 1.5
	p := &Profile{ComputeHours: 300, SpanDays: 30, Starts: 1, GPUs: 1, Interruptible: true,
		Checkpoint: &Checkpoint{Every: Duration(30 * 60e9), Write: Duration(60e9), Restart: Duration(300e9)}}
	opt := PlanOptions{Options: Options{InterruptionsPerDay: &rate}, Trials: 10000, Seed: 1}
	simulated := 0
	for b.Loop() {
		plan, err := MakePlan(p, cat.Offers, cat.Rates, opt, run)
		if err != nil {
			b.Fatal(err)
		}
		simulated = 0
		for _, o := range plan.Offers {
			if o.Spot != nil {
				simulated++
			}
		}
	}
	b.ReportMetric(float64(len(cat.Offers)), "offers")
	b.ReportMetric(float64(simulated), "simulated")
}
