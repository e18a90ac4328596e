package billing

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/catalog"
)

func TestExpectedHandWorked(t *testing.T) {
	// No checkpoints, 1 h of work, 1 interruption an hour, no restart time:
	// e^1 − 1 = 1.718282 h expected.
	h, k := Run{Work: 1, Every: 1, Rate: 1}.Expected()
	if math.Abs(h-1.718282) > 1e-6 || math.Abs(k-1.718282) > 1e-6 {
		t.Errorf("got %v h, %v interruptions", h, k)
	}
	// 2.5 h of work in 1 h segments with a 0.1 h write: 2 segments of 1.1 h
	// and a last one of 0.6 h. At λ = 0 that is 2.8 h exactly.
	if h, _ := (Run{Work: 2.5, Every: 1, Write: 0.1}).Expected(); !near(h, 2.8) {
		t.Errorf("no interruptions: %v h, want 2.8", h)
	}
	// With λ = 0.5/h and a 0.2 h restart: (2(e^0.55 − 1) + (e^0.3 − 1)) × 2.2
	// = (2 × 0.733253 + 0.349859) × 2.2 = 1.816365 × 2.2 = 3.996003 h.
	h, _ = Run{Work: 2.5, Every: 1, Write: 0.1, Restart: 0.2, Rate: 0.5}.Expected()
	if math.Abs(h-3.996003) > 1e-5 {
		t.Errorf("got %v h, want 3.996003", h)
	}
}

func TestMonteCarloMatchesClosedForm(t *testing.T) {
	for _, r := range []Run{
		// 300 h of work, checkpoint every 30 min taking 1 min, 5 min restart,
		// 1.5 interruptions a day.
		{Work: 300, Every: 0.5, Write: 1.0 / 60, Restart: 5.0 / 60, Rate: 1.5 / 24},
		// A partial last segment and a high rate.
		{Work: 10.3, Every: 2, Write: 0.25, Restart: 0.5, Rate: 0.4},
		// No checkpoints at all.
		{Work: 3, Every: 3, Rate: 0.2},
	} {
		want, _ := r.Expected()
		risk := MonteCarlo(r, Cost{PerHour: 1}, 200000, 42, 0)
		if rel := math.Abs(risk.MeanHours-want) / want; rel > 0.01 {
			t.Errorf("%+v: Monte Carlo mean %v vs closed form %v (%.2f%% off)", r, risk.MeanHours, want, rel*100)
		}
		if !near(risk.MeanCost, risk.MeanHours) {
			t.Errorf("cost at 1/h should equal hours: %v vs %v", risk.MeanCost, risk.MeanHours)
		}
		if !(risk.P50Hours <= risk.P90Hours) || risk.P50Hours < r.Work {
			t.Errorf("%+v: P50 %v P90 %v", r, risk.P50Hours, risk.P90Hours)
		}
	}
}

func TestMonteCarloReproducibleAndDeadline(t *testing.T) {
	r := Run{Work: 50, Every: 1, Write: 0.05, Restart: 0.1, Rate: 0.05}
	a := MonteCarlo(r, Cost{PerHour: 2, PerInterruption: 1, Fixed: 3}, 5000, 7, 55)
	b := MonteCarlo(r, Cost{PerHour: 2, PerInterruption: 1, Fixed: 3}, 5000, 7, 55)
	if a != b && !(math.IsNaN(a.DeadlineProb) && math.IsNaN(b.DeadlineProb)) {
		t.Fatalf("same seed, different results: %+v vs %+v", a, b)
	}
	if a.DeadlineProb <= 0 || a.DeadlineProb >= 1 {
		t.Errorf("P(finish within 55 h) = %v, want strictly between 0 and 1", a.DeadlineProb)
	}
	// The minimum possible time is 50 segments of 1.05 h = 52.5 h: a deadline
	// below it is never met.
	if c := MonteCarlo(r, Cost{}, 2000, 7, 52); c.DeadlineProb != 0 {
		t.Errorf("deadline below the minimum met with probability %v", c.DeadlineProb)
	}
	if c := MonteCarlo(r, Cost{}, 10, 7, 0); !math.IsNaN(c.DeadlineProb) {
		t.Errorf("no deadline: %v", c.DeadlineProb)
	}
}

func TestOptimalIntervalDalyExamples(t *testing.T) {
	// Daly (2006), figure captions:
	// δ = 5 min; M = 24 h → 117 min; M = 6 h → 57 min; M = 15 min → 9.1 min.
	for _, tc := range []struct{ mtbfMin, wantMin, tol float64 }{
		{24 * 60, 117, 0.5}, {6 * 60, 57, 0.5}, {15, 9.1, 0.05},
	} {
		iv := OptimalInterval(5.0/60, tc.mtbfMin/60)
		if got := iv.Daly * 60; math.Abs(got-tc.wantMin) > tc.tol {
			t.Errorf("M = %v min: Daly %v min, want %v", tc.mtbfMin, got, tc.wantMin)
		}
	}
	// Young: √(2 × 5 min × 24 h) = √(2 × 5 × 1440) min = 120 min.
	if iv := OptimalInterval(5.0/60, 24); math.Abs(iv.Young*60-120) > 1e-9 {
		t.Errorf("Young %v min, want 120", iv.Young*60)
	}
	// δ ≥ 2M: checkpoint every M.
	if iv := OptimalInterval(3, 1); iv.Daly != 1 {
		t.Errorf("δ ≥ 2M: %v", iv.Daly)
	}
}

func TestDalyMinimisesExpectedTime(t *testing.T) {
	// The closed form's own minimum should sit near Daly's interval: the
	// expected time at Daly's τ is within 0.5% of the best τ on a fine grid.
	write, rate := 2.0/60, 1.0/6
	iv := OptimalInterval(write, 1/rate)
	at := func(every float64) float64 {
		h, _ := Run{Work: 1000, Every: every, Write: write, Restart: 0.1, Rate: rate}.Expected()
		return h
	}
	best := math.Inf(1)
	for e := 0.05; e < 5; e += 0.001 {
		best = math.Min(best, at(e))
	}
	if got := at(iv.Daly); got > best*1.005 {
		t.Errorf("expected time at Daly's %v h is %v, best on grid %v", iv.Daly, got, best)
	}
}

// BenchmarkSimulate is one trial of a 300-hour job checkpointing every 30
// minutes at 1.5 interruptions a day: the spot simulation's unit of work.
func BenchmarkSimulate(b *testing.B) {
	r := Run{Work: 300, Every: 0.5, Write: 1.0 / 60, Restart: 5.0 / 60, Rate: 1.5 / 24}
	rng := rand.New(rand.NewPCG(1, 2))
	var sink float64
	b.ReportAllocs()
	for b.Loop() {
		sink += r.Simulate(rng).Hours
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "trials/s")
	_ = sink
}

// BenchmarkMonteCarlo10k is one offer's plan: 10000 trials with quantiles.
func BenchmarkMonteCarlo10k(b *testing.B) {
	r := Run{Work: 300, Every: 0.5, Write: 1.0 / 60, Restart: 5.0 / 60, Rate: 1.5 / 24}
	b.ReportAllocs()
	for b.Loop() {
		MonteCarlo(r, Cost{PerHour: 1}, 10000, 1, 400)
	}
	b.ReportMetric(10000*float64(b.N)/b.Elapsed().Seconds(), "trials/s")
}

// BenchmarkMonteCarloAtBudget is one offer's plan at simBudget: a year
// checkpointed every 30 min at 2 interruptions an hour, 31,700 a trial, of
// which simTrials allows 315 trials; beside BenchmarkMonteCarlo10k it shows
// what the budget costs against an ordinary offer.
func BenchmarkMonteCarloAtBudget(b *testing.B) {
	r := Run{Work: 8760, Every: 0.5, Write: 1.0 / 60, Restart: 5.0 / 60, Rate: 2}
	trials, _ := simTrials(r, 10000)
	for b.Loop() {
		MonteCarlo(r, Cost{PerHour: 1}, trials, 1, 0)
	}
	b.ReportMetric(float64(trials), "trials")
}

// simulateSegments is the textbook simulation, one draw per segment
// attempt: the peer the interruption-stepping Simulate is checked and
// benchmarked against.
func (r Run) simulateSegments(rng *rand.Rand) float64 {
	full, seg, last := r.segments()
	var t float64
	attempt := func(T float64) {
		for {
			x := rng.ExpFloat64() / r.Rate
			if x >= T {
				t += T
				return
			}
			t += x + r.Restart
		}
	}
	for range full {
		attempt(seg)
	}
	if last > 0 {
		attempt(last)
	}
	return t
}

func TestSegmentSimulationAgrees(t *testing.T) {
	r := Run{Work: 40, Every: 0.5, Write: 0.05, Restart: 0.2, Rate: 0.3}
	want, _ := r.Expected()
	rng := rand.New(rand.NewPCG(3, 4))
	var sum float64
	const n = 100000
	for range n {
		sum += r.simulateSegments(rng)
	}
	if rel := math.Abs(sum/n-want) / want; rel > 0.01 {
		t.Errorf("segment simulation mean %v vs closed form %v", sum/n, want)
	}
}

// BenchmarkSimulateSegments is the same trial as BenchmarkSimulate, stepped
// segment by segment.
func BenchmarkSimulateSegments(b *testing.B) {
	r := Run{Work: 300, Every: 0.5, Write: 1.0 / 60, Restart: 5.0 / 60, Rate: 1.5 / 24}
	rng := rand.New(rand.NewPCG(1, 2))
	var sink float64
	for b.Loop() {
		sink += r.simulateSegments(rng)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "trials/s")
	_ = sink
}

// A run that expects more interruptions than simBudget allows draws fewer
// trials, or none, and says so: 300 h checkpointed every 12 h (plus a
// 5-minute write) at one interruption an hour redoes each 12.08 h segment
// e^12.08 − 1 ≈ 176,000 times, 4.4 million interruptions a run (by hand:
// 25 segments × 176,000), and 10000 trials of it would run for hours.
func TestSimulationBudget(t *testing.T) {
	hopeless := Run{Work: 300, Every: 12, Write: 5.0 / 60, Restart: 0, Rate: 1}
	if _, fails := hopeless.Expected(); fails < 4e6 || fails > 5e6 {
		t.Fatalf("expected interruptions %v, want about 4.4 million", fails)
	}
	if n, note := simTrials(hopeless, 10000); n != 0 || !strings.Contains(note.String(), "spot risk not simulated: a run expects 4.4") {
		t.Errorf("hopeless run: %d trials, %q", n, note)
	}
	// A year checkpointed every 30 min at 2 an hour: 17,520 segments of
	// 0.5167 h, e^(2×0.5167) − 1 ≈ 1.81 each, about 31,700 a run: 315 trials
	// fit 1e7 draws.
	long := Run{Work: 8760, Every: 0.5, Write: 1.0 / 60, Restart: 5.0 / 60, Rate: 2}
	if n, note := simTrials(long, 10000); n < 300 || n > 330 || !strings.Contains(note.String(), fmt.Sprintf("spot risk from %d trials, not 10000", n)) {
		t.Errorf("long run: %d trials, %q", n, note)
	}
	// The README's example fits whole.
	easy := Run{Work: 300, Every: 0.5, Write: 1.0 / 60, Restart: 5.0 / 60, Rate: 1.5 / 24}
	if n, note := simTrials(easy, 10000); n != 10000 || !note.IsZero() {
		t.Errorf("easy run: %d trials, %q", n, note)
	}
}

// MakePlan on the hopeless run finishes at once, judges spot on its
// expected cost, and says why there is no simulation.
func TestPlanSkipsAHopelessSimulation(t *testing.T) {
	o := testOffer()
	o.Spot = &catalog.Spot{Hourly: catalog.Known(1), InterruptionsPerDay: catalog.Known(24), Notice: dur(30 * time.Second)}
	p := Profile{ComputeHours: 300, SpanDays: 30, Interruptible: true, Checkpoint: &Checkpoint{Every: Duration(12 * time.Hour), Write: Duration(5 * time.Minute)}}
	p.Defaults(nil)
	plan, err := MakePlan(&p, []catalog.Offer{o}, catalog.Rates{}, PlanOptions{Trials: 10000}, nil)
	if err != nil {
		t.Fatal(err)
	}
	op := plan.Offers[0]
	if op.Spot != nil || op.Recommendation == Spot || !strings.Contains(strings.Join(strs(op.Notes), "\n"), "spot risk not simulated") {
		t.Errorf("spot %+v, recommendation %s, notes %q", op.Spot, op.Recommendation, strs(op.Notes))
	}
}

// A run that would never finish gets no spot bill, and quote and plan say
// why the row is missing: 300 h in one segment (no checkpoints) at one
// interruption an hour expects e^300 − 1 interruptions.
func TestNeverFinishingSpotIsNamed(t *testing.T) {
	o := testOffer()
	o.Spot = &catalog.Spot{Hourly: catalog.Known(1), InterruptionsPerDay: catalog.Known(24), Notice: dur(30 * time.Second)}
	p := Profile{ComputeHours: 300, SpanDays: 30, Interruptible: true}
	p.Defaults(nil)
	q, err := Make(&p, []catalog.Offer{o}, catalog.Rates{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range q.Bills {
		if b.Plan == Spot {
			t.Errorf("spot billed: %+v", b)
		}
	}
	want := "spot not quoted on 1 offer (t): at the interruption rate a run would practically never finish"
	if !strings.Contains(strings.Join(strs(q.Notes), "\n"), want) {
		t.Errorf("quote notes %q", strs(q.Notes))
	}
	plan, err := MakePlan(&p, []catalog.Offer{o}, catalog.Rates{}, PlanOptions{Trials: 100}, nil)
	if err != nil || !strings.Contains(strings.Join(strs(plan.Notes), "\n"), want) {
		t.Errorf("plan notes %q, %v", strs(plan.Notes), err)
	}
}

// The note on a never-finishing spot run says what to change: give
// checkpoint settings where there are none, checkpoint more often where
// they are too sparse; plan's reason for the offer names spot as not
// quoted instead of calling on demand the only plan priced.
func TestNeverFinishingSpotAdvice(t *testing.T) {
	o := testOffer()
	o.Spot = &catalog.Spot{Hourly: catalog.Known(1), InterruptionsPerDay: catalog.Known(24), Notice: dur(30 * time.Second)}
	p := Profile{ComputeHours: 300, SpanDays: 30, Interruptible: true}
	p.Defaults(nil)
	plan, err := MakePlan(&p, []catalog.Offer{o}, catalog.Rates{}, PlanOptions{Trials: 100}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Join(strs(plan.Notes), "\n"); !strings.Contains(n, "never finish: with no checkpoint settings, each interruption restarts it from the beginning") || strings.Contains(n, "checkpoint more often") {
		t.Errorf("no checkpoints: %q", n)
	}
	if r := plan.Offers[0].Reason.String(); r != "on demand is the only plan judged: spot is not quoted: at this interruption rate the run would practically never finish (see the note)" {
		t.Errorf("reason %q", r)
	}
	p.Checkpoint = &Checkpoint{Every: Duration(100 * time.Hour), Write: Duration(time.Minute), Restart: Duration(time.Minute)}
	plan, _ = MakePlan(&p, []catalog.Offer{o}, catalog.Rates{}, PlanOptions{Trials: 100}, nil)
	if n := strings.Join(strs(plan.Notes), "\n"); !strings.Contains(n, "never finish, each checkpoint interval being interrupted before it ends almost surely; checkpoint more often") {
		t.Errorf("sparse checkpoints: %q", n)
	}
}

// Checkpoint settings without the write or restart time price those as 0,
// the cheapest the spot bill can be, and the bill says which were left out.
func TestSpotBillNamesMissingCheckpointTimes(t *testing.T) {
	o := testOffer()
	o.Spot = &catalog.Spot{Hourly: catalog.Known(1), InterruptionsPerDay: catalog.Known(2)}
	p := Profile{ComputeHours: 10, SpanDays: 1, Interruptible: true, Checkpoint: &Checkpoint{Every: Duration(30 * time.Minute)}}
	p.Defaults(nil)
	b, ok := spotBill(&p, &o, Options{})
	if w := strings.Join(strs(b.Warnings), "\n"); !ok || !strings.Contains(w, "no --ckpt-write or --ckpt-restart: counted as 0") {
		t.Errorf("warnings %q", strs(b.Warnings))
	}
	p.Checkpoint.Write = Duration(time.Minute)
	b, _ = spotBill(&p, &o, Options{})
	if w := strings.Join(strs(b.Warnings), "\n"); !strings.Contains(w, "no --ckpt-restart: counted as 0") || strings.Contains(w, "--ckpt-write") {
		t.Errorf("warnings %q", strs(b.Warnings))
	}
	p.Checkpoint.Restart = Duration(5 * time.Minute)
	b, _ = spotBill(&p, &o, Options{})
	if w := strings.Join(strs(b.Warnings), "\n"); strings.Contains(w, "counted as 0") {
		t.Errorf("warnings %q", strs(b.Warnings))
	}
}

// Without a write time the Young and Daly interval is 0 minutes, which is
// no advice: the plan says what it needs instead.
func TestCheckpointAdviceNeedsWriteTime(t *testing.T) {
	o := testOffer()
	o.Spot = &catalog.Spot{Hourly: catalog.Known(1), InterruptionsPerDay: catalog.Known(1)}
	p := Profile{ComputeHours: 100, SpanDays: 10, Interruptible: true, Checkpoint: &Checkpoint{Every: Duration(30 * time.Minute)}}
	p.Defaults(nil)
	plan, err := MakePlan(&p, []catalog.Offer{o}, catalog.Rates{}, PlanOptions{Trials: 100}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if op := plan.Offers[0]; op.Checkpoint != nil || !slices.Contains(strs(op.Notes), "no checkpoint advice: it needs the time to write one checkpoint (--ckpt-write)") {
		t.Errorf("checkpoint %+v, notes %q", op.Checkpoint, strs(op.Notes))
	}
	p.Checkpoint.Write = Duration(time.Minute)
	plan, _ = MakePlan(&p, []catalog.Offer{o}, catalog.Rates{}, PlanOptions{Trials: 100}, nil)
	if c := plan.Offers[0].Checkpoint; c == nil || c.YoungMinutes <= 0 || c.DalyMinutes <= 0 {
		t.Errorf("checkpoint %+v", c)
	}
}

// Issue #37: AWS publishes interruption-frequency buckets. Without an
// interruption rate, a spot bill takes its offer's bucket at the upper
// end (10-15% a month: −ln(0.85)/30 a day), and an open bucket (>20%)
// at its lower end, which makes the bill a lower bound.
func TestSpotPublishedFrequency(t *testing.T) {
	o := testOffer()
	o.Spot = &catalog.Spot{Hourly: catalog.Known(1), Notice: dur(2 * time.Minute),
		Frequency: &catalog.Frequency{Low: 0.10, High: catalog.Known(0.15), Source: "advisor", AsOf: "2025-06-28"}}
	p := Profile{GPUs: 2, ComputeHours: 100, SpanDays: 30, Interruptible: true, Checkpoint: &Checkpoint{Every: Duration(time.Hour), Write: Duration(time.Minute), Restart: Duration(time.Minute)}}
	p.Defaults(nil)
	r, known := spotRun(&p, &o, Options{})
	if !known || !near(r.Rate, -math.Log(0.85)/30/24) {
		t.Fatalf("rate %v %v", r.Rate, known)
	}
	b, ok := spotBill(&p, &o, Options{})
	if !ok || b.TotalIsLowerBound || !slices.ContainsFunc(strs(b.Warnings), func(w string) bool {
		return strings.HasPrefix(w, "interruption rate from advisor (2025-06-28): 10.0% to 15.0%")
	}) {
		t.Fatalf("closed bucket: %+v", b)
	}
	o.Spot.Frequency = &catalog.Frequency{Low: 0.20, Source: "advisor", AsOf: "2025-06-28"}
	if b, ok = spotBill(&p, &o, Options{}); !ok || !b.TotalIsLowerBound {
		t.Fatalf("open bucket: %+v", b)
	}
	// Nor is spot bought on it: every figure of the run would be its best.
	o.OnDemand.Hourly = catalog.Known(50)
	plan, err := MakePlan(&p, []catalog.Offer{o}, catalog.Rates{}, PlanOptions{Trials: 200}, nil)
	if err != nil || plan.Offers[0].Recommendation == Spot || !strings.Contains(plan.Offers[0].Reason.String(), "known only as a floor") {
		t.Fatalf("bought on a floor: %v %+v", err, plan.Offers[0])
	}
	one := 2.0
	if b, ok = spotBill(&p, &o, Options{InterruptionsPerDay: &one}); !ok || slices.ContainsFunc(strs(b.Warnings), func(w string) bool { return strings.HasPrefix(w, "interruption rate from") }) {
		t.Fatalf("--interruptions-per-day overrides it: %+v", b)
	}
}
