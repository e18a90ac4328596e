package billing

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/catalog"
	"github.com/gpurent/gpurent/internal/i18n"
)

// TestWorkRanksByTheCostOfTheWork pins the case: 100 h of H100
// training cost about 199 USD on an H100 offer at 1.99/h and about 719 on
// an H20 at 1.075/h, since the H20 (148 dense BF16 TFLOPS) needs 669 h
// for the work of the H100 SXM's (989.5): by the hour the H20 ranked
// first, by the work it ranks last. An A100 (312) sits between.
func TestWorkRanksByTheCostOfTheWork(t *testing.T) {
	offers := []catalog.Offer{workOffer("h20", "H20", 1.075), workOffer("h100", "H100 SXM", 1.99), workOffer("a100", "A100 80GB SXM", 1.2)}
	p := Profile{ComputeHours: 100, GPUs: 1, Starts: 1}
	p.Defaults(nil)
	byHour, err := Make(&p, offers, catalog.Rates{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if byHour.Bills[0].Offer != "h20" || !strings.Contains(notes(byHour), "needs about 6.7x the hours of H100 SXM5") {
		t.Fatalf("by the hour: %s first; notes %s", byHour.Bills[0].Offer, notes(byHour))
	}
	w, err := NewWork("H100", ByTraining)
	if err != nil {
		t.Fatal(err)
	}
	q, err := Make(&p, offers, catalog.Rates{}, Options{Work: w})
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	hours := map[string]float64{}
	total := map[string]float64{}
	for _, b := range q.Bills {
		order = append(order, b.Offer)
		hours[b.Offer], total[b.Offer] = b.Hours, b.Total
	}
	if strings.Join(order, " ") != "h100 a100 h20" || q.Reference != "H100 SXM5" {
		t.Fatalf("order %v, reference %q", order, q.Reference)
	}
	if math.Abs(hours["h20"]-100*989.5/148) > 0.01 || hours["h100"] != 100 || math.Abs(total["h20"]-100*989.5/148*1.075) > 0.01 || math.Abs(total["h100"]-199) > 0.01 {
		t.Fatalf("hours %v, totals %v", hours, total)
	}
	// Memory bandwidth for inference: the H20 (4000 GB/s) outruns the
	// H100 SXM (3350).
	wi, _ := NewWork("H100 SXM", ByDecoding)
	qi, _ := Make(&p, offers, catalog.Rates{}, Options{Work: wi})
	if qi.Bills[0].Offer != "h20" || qi.Bills[0].Hours >= 100 {
		t.Fatalf("inference: %s first, %v h", qi.Bills[0].Offer, qi.Bills[0].Hours)
	}
	if _, err := NewWork("H9000", ByTraining); err == nil {
		t.Fatal("an unknown reference taken")
	}
}

// workOffer is an on-demand offer of one GPU, billed by the second.
func workOffer(id, gpu string, hourly float64) catalog.Offer {
	return catalog.Offer{ID: id, Provider: id, GPU: gpu, GPUs: 1, Currency: "USD",
		OnDemand: catalog.OnDemand{Hourly: catalog.Known(hourly), Increment: dur(time.Second), Minimum: dur(0)}}
}

func notes(q *Quote) string {
	var s []string
	for _, n := range q.Notes {
		s = append(s, n.String())
	}
	return strings.Join(s, "\n")
}

// TestUnknownIsNotZero: on the README's quote over the embedded catalog,
// a bill whose fees are unknown ranks by its estimate, so none ranks
// above one whose known bill is lower than that estimate, and every bill
// with an estimable unknown fee has its estimate (issue #56:
// suanjia-4090-cheapest ranked first on 8 fees counted as 0).
func TestUnknownIsNotZero(t *testing.T) {
	c, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	current, _ := catalog.Current(c.Offers)
	p := Profile{GPU: "RTX 4090", ComputeHours: 300, SpanDays: 30, Starts: 10, DiskGB: 200, EgressGB: 100}
	p.Defaults(nil)
	offers, err := Offers(&p, current)
	if err != nil {
		t.Fatal(err)
	}
	est := NewEstimates(current, c.Rates)
	if r := est["storage.running_gb_month"]; r.N < minSourced || r.Low > r.Mid || r.Mid > r.High {
		t.Fatalf("running storage range %+v", r)
	}
	q, err := Make(&p, offers, c.Rates, Options{Estimates: est})
	if err != nil {
		t.Fatal(err)
	}
	for i, b := range q.Bills {
		for _, n := range b.Unknown {
			if _, ok := estimable[n]; ok && est[n].N > 0 && b.Estimate == nil {
				t.Errorf("%s %s: %s unknown, not estimated", b.Offer, b.Plan, n)
			}
		}
		if b.Estimate != nil && !(b.Estimate.Low <= b.Estimate.Total && b.Estimate.Total <= b.Estimate.High && b.Total <= b.Estimate.Total) {
			t.Errorf("%s: estimate %+v, lower bound %v", b.Offer, b.Estimate, b.Total)
		}
		for _, a := range q.Bills[:i] {
			if a.rank() > b.rank() {
				t.Errorf("%s (%v) ranks above %s (%v)", a.Offer, a.rank(), b.Offer, b.rank())
			}
		}
	}
	// plan ranks its advice the same way: by the estimate of the plan it
	// recommends, each of which carries its estimate.
	plan, err := MakePlan(&p, offers, c.Rates, PlanOptions{Options: Options{Estimates: est}, Trials: 10}, nil)
	if err != nil {
		t.Fatal(err)
	}
	advised := func(o OfferPlan) *Bill {
		for i := range o.Bills {
			if o.Bills[i].Plan == o.Recommendation {
				return &o.Bills[i]
			}
		}
		return nil
	}
	estimated := 0
	for i, o := range plan.Offers {
		b := advised(o)
		if b == nil || o.Recommendation == Spot {
			continue
		}
		if b.Estimate != nil {
			estimated++
		}
		for _, a := range plan.Offers[:i] {
			if ab := advised(a); ab != nil && a.Recommendation != Spot && ab.rank() > b.rank() {
				t.Errorf("plan: %s (%v) advised above %s (%v)", a.Offer, ab.rank(), o.Offer, b.rank())
			}
		}
	}
	if estimated == 0 {
		t.Error("plan: no advised bill carries an estimate")
	}
	if !slices.ContainsFunc(plan.Notes, func(n i18n.Text) bool { return strings.HasPrefix(n.String(), "≈ marks estimates") }) {
		t.Errorf("plan: no note says what ≈ marks: %v", plan.Notes)
	}
	// A bill whose fees are all known ranks on its exact total.
	known := testOffer()
	q, _ = Make(&p, []catalog.Offer{known}, catalog.Rates{}, Options{Estimates: est})
	if q.Bills[0].Estimate != nil {
		t.Fatalf("estimated a known bill: %+v", q.Bills[0].Estimate)
	}
}

// TestWholeNodes: --gpus 64 --gpus-per-node 8 prices 8-GPU machines
// only, eight of each, with the interconnect each offer states; 64 is
// not 64 one-GPU rentals.
func TestWholeNodes(t *testing.T) {
	c, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	current, _ := catalog.Current(c.Offers)
	p := Profile{GPU: "H100", GPUs: 64, GPUsPerNode: 8, ComputeHours: 100}
	p.Defaults(nil)
	if ps := p.Validate(); len(ps) > 0 {
		t.Fatal(ps)
	}
	offers, err := Offers(&p, current)
	if err != nil {
		t.Fatal(err)
	}
	q, err := Make(&p, offers, c.Rates, Options{})
	if err != nil {
		t.Fatal(err)
	}
	nvlink := 0
	for _, b := range q.Bills {
		if b.GPUs != 8 || b.Instances != 8 {
			t.Errorf("%s: %d GPUs x %d machines", b.Offer, b.GPUs, b.Instances)
		}
		if b.Interconnect == "nvlink" {
			nvlink++
		}
	}
	if len(q.Bills) < 3 || nvlink == 0 {
		t.Fatalf("%d bills, %d with NVLink stated", len(q.Bills), nvlink)
	}
	for _, bad := range []Profile{{GPUs: 64, GPUsPerNode: 7}, {GPUs: 8, GPUsPerNode: 8, OneMachine: true}, {GPUs: 8, GPUsPerNode: -1}} {
		bad.ComputeHours = 1
		bad.Defaults(nil)
		if len(bad.Validate()) == 0 {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// TestAzureEgressFirst100GBFree: Azure bills internet egress from the
// 101st GB of a month, as AWS does (issue #56: it billed the first).
func TestAzureEgressFirst100GBFree(t *testing.T) {
	c, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	o, err := catalog.ByID(c.Offers, "azure-NC24ads_A100_v4")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ gb, want float64 }{{100, 0}, {200, 100 * 0.0875}} {
		p := Profile{ComputeHours: 10, EgressGB: tc.gb}
		p.Defaults(nil)
		q, err := Make(&p, []catalog.Offer{*o}, c.Rates, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got := item(q.Bills[0], "egress"); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%v GB: egress %v, want %v", tc.gb, got, tc.want)
		}
	}
}

// TestPlanAndBudgetByWork: plan and quote --budget read a reference GPU
// as quote does. plan plans each offer for its own GPU's hours (the
// H20's 669 h, so it advises the H100 first); a budget ranks the plans by
// the work it buys, in hours on the reference, not by its hours (1000
// USD buy 930 H20 hours, worth 139 H100 hours, and 502 H100 hours).
// Before, plan ignored --reference and --budget refused it.
func TestPlanAndBudgetByWork(t *testing.T) {
	offers := []catalog.Offer{workOffer("h20", "H20", 1.075), workOffer("h100", "H100 SXM", 1.99), workOffer("t4", "T4", 0.1)}
	p := Profile{ComputeHours: 100, GPUs: 1, Starts: 1}
	p.Defaults(nil)
	w, err := NewWork("H100", ByTraining)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := MakePlan(&p, offers, catalog.Rates{}, PlanOptions{Options: Options{Work: w}, Trials: 10}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, o := range plan.Offers {
		order = append(order, o.Offer)
		if want := map[string]float64{"h100": 100, "h20": 100 * 989.5 / 148}[o.Offer]; math.Abs(o.Hours-want) > 0.01 {
			t.Errorf("plan: %s for %v h, want %v", o.Offer, o.Hours, want)
		}
	}
	var pn []string
	for _, n := range plan.Notes {
		pn = append(pn, n.String())
	}
	if strings.Join(order, " ") != "h100 h20" || plan.Reference != "H100 SXM5" || !strings.Contains(strings.Join(pn, "\n"), "left out: offers of T4") {
		t.Fatalf("plan order %v, reference %q, notes %v", order, plan.Reference, pn)
	}

	r, err := Afford(&p, false, offers, catalog.Rates{}, Options{Work: w}, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Plans) != 2 || r.Plans[0].Bill.Offer != "h100" || r.Reference != "H100 SXM5" {
		t.Fatalf("budget: %+v", r.Plans)
	}
	h100, h20 := r.Plans[0], r.Plans[1]
	if math.Abs(h100.Work-h100.Hours) > 1e-9 || math.Abs(h100.Hours-1000/1.99) > 0.01 ||
		math.Abs(h20.Hours-1000/1.075) > 0.01 || math.Abs(h20.Work-h20.Hours*148/989.5) > 0.01 || h20.Bill.RatedAs != "H20" {
		t.Fatalf("budget: h100 %v h = %v work, h20 %v h = %v work (%s)", h100.Hours, h100.Work, h20.Hours, h20.Work, h20.Bill.RatedAs)
	}
	// Without a reference the hours rank, and the H20's many come first.
	byHours, err := Afford(&p, false, offers, catalog.Rates{}, Options{}, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if byHours.Plans[0].Bill.Offer != "t4" || byHours.Plans[1].Bill.Offer != "h20" || byHours.Plans[0].Work != 0 {
		t.Fatalf("by hours: %+v", byHours.Plans)
	}
}

// TestMeasuredWork rates by the user's own bench figures: an H20 that
// measured 120 BF16 GEMM TFLOPS to an H100's 600 needs 5x the hours (the
// datasheet says 6.7x), and a GPU never measured is left out and named,
// never rated by its datasheet beside measured ones.
func TestMeasuredWork(t *testing.T) {
	offers := []catalog.Offer{workOffer("h20", "H20", 1.075), workOffer("h100", "H100 SXM", 1.99), workOffer("a100", "A100 80GB SXM", 1.2)}
	p := Profile{ComputeHours: 100, GPUs: 1, Starts: 1}
	p.Defaults(nil)
	speeds := map[string]float64{"H100 SXM5": 600, "H20": 120}
	w, err := NewMeasuredWork("H100", ByTraining, speeds)
	if err != nil {
		t.Fatal(err)
	}
	q, err := Make(&p, offers, catalog.Rates{}, Options{Work: w})
	if err != nil {
		t.Fatal(err)
	}
	hours := map[string]float64{}
	for _, b := range q.Bills {
		hours[b.Offer] = b.Hours
	}
	if len(q.Bills) != 2 || math.Abs(hours["h20"]-500) > 1e-9 || hours["h100"] != 100 {
		t.Fatalf("hours %v", hours)
	}
	n := notes(q)
	for _, want := range []string{"by BF16 GEMM throughput (the medians of your bench history)", "left out: offers of A100 80GB SXM, whose BF16 GEMM throughput your bench history has not measured"} {
		if !strings.Contains(n, want) {
			t.Errorf("notes lack %q: %s", want, n)
		}
	}
	if _, err := NewMeasuredWork("A100", ByTraining, speeds); err == nil || !strings.Contains(err.Error(), "measured the BF16 GEMM throughput of H100 SXM5, H20 only") {
		t.Errorf("an unmeasured reference: %v", err)
	}
	if _, err := NewMeasuredWork("H100", ByTraining, nil); err == nil || !strings.Contains(err.Error(), "no bench run") {
		t.Errorf("an empty history: %v", err)
	}
	// Inference by the measured copy bandwidth.
	wi, err := NewMeasuredWork("H20", ByDecoding, map[string]float64{"H100 SXM5": 2600, "H20": 3200})
	if err != nil {
		t.Fatal(err)
	}
	qi, _ := Make(&p, offers, catalog.Rates{}, Options{Work: wi})
	if qi.Bills[0].Offer != "h20" || math.Abs(qi.Bills[1].Hours-100*3200.0/2600) > 1e-9 {
		t.Fatalf("inference: %s first, then %v h", qi.Bills[0].Offer, qi.Bills[1].Hours)
	}
}
