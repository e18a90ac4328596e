package billing

import (
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/catalog"
	"github.com/gpurent/gpurent/internal/i18n"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func item(b Bill, kind string) float64 {
	for _, it := range b.Items {
		if it.Kind == kind {
			return it.Amount
		}
	}
	return math.NaN()
}

func dur(d time.Duration) catalog.Duration { return catalog.KnownDuration(d) }

// testOffer has every fee known and round numbers, so bills can be worked
// out by hand: 2/h, 1 h increment, 3 h minimum, 50 GB included, storage
// 0.72 per GB-month running (0.001 per GB-hour) and 1.44 stopped (0.002),
// egress 0.1/GB, boot 0.5 per start, IP 3 a month, released after 2 days.
// The included disk is persistent: it keeps its data while stopped.
func testOffer() catalog.Offer {
	return catalog.Offer{
		ID: "t", Provider: "Test", GPU: "RTX 4090", GPUs: 2, Currency: "USD", Source: "hand", AsOf: "2026-11-30",
		OnDemand: catalog.OnDemand{Hourly: catalog.Known(2), Increment: dur(time.Hour), Minimum: dur(3 * time.Hour)},
		BootFee:  catalog.Known(0.5),
		Storage: catalog.Storage{IncludedGB: catalog.Known(50), IncludedDisk: catalog.DiskPersistent,
			RunningGBMonth: catalog.Known(0.72), StoppedGBMonth: catalog.Known(1.44)},
		EgressGB:            catalog.Known(0.1),
		IPMonth:             catalog.Known(3),
		ReleaseAfterStopped: dur(48 * time.Hour),
	}
}

func onDemand(t *testing.T, p Profile, o catalog.Offer) Bill {
	t.Helper()
	p.Defaults(nil)
	if ps := p.Validate(); len(ps) > 0 {
		t.Fatalf("profile invalid: %v", ps)
	}
	b, ok := onDemandBill(&p, &o)
	if !ok {
		t.Fatal("no on-demand bill")
	}
	return b
}

func TestOnDemandWorkedExample(t *testing.T) {
	// 10 h in 4 starts over 10 days, 100 GB disk, 50 GB egress, 1 instance.
	//   each run 2.5 h, rounded up to 3 h (1 h increment; the 3 h minimum agrees)
	//   compute  3 h × 4 starts × 2/h                    = 24
	//   storage  50 GB extra × (0.001 × 10 h + 0.002 × 230 h stopped) = 0.5 + 23 = 23.5
	//   egress   50 GB × 0.1                             = 5
	//   boot     4 × 0.5                                 = 2
	//   ip       3 × 10/30 days                          = 1
	//   total 55.5; list 2/h × 10 h = 20; hidden (55.5 − 20) / 55.5
	b := onDemand(t, Profile{GPUs: 2, ComputeHours: 10, SpanDays: 10, Starts: 4, DiskGB: 100, EgressGB: 50}, testOffer())
	for kind, want := range map[string]float64{ItemCompute: 24, ItemStorage: 23.5, ItemEgress: 5, ItemBoot: 2, ItemIP: 1} {
		if got := item(b, kind); !near(got, want) {
			t.Errorf("%s = %v, want %v", kind, got, want)
		}
	}
	if !near(b.Total, 55.5) || !near(b.ListTotal, 20) || !near(b.HiddenShare, 35.5/55.5) {
		t.Errorf("total %v list %v hidden %v", b.Total, b.ListTotal, b.HiddenShare)
	}
	// Stopped gaps are 230 h / 4 = 57.5 h, longer than the 48 h release.
	if len(b.Warnings) != 1 || !strings.Contains(b.Warnings[0].String(), "57.5 h exceeds release_after_stopped 2d") {
		t.Errorf("warnings %q", strs(b.Warnings))
	}
}

// Checkpoints streamed to a store outside the provider are data sent out:
// the worked example with a 2 GB checkpoint every 3 h of compute.
//
//	uploads  ceil(10 h / 3 h) = 4, the last at the end; 4 × 2 GB = 8 GB
//	egress   (50 + 8) GB × 0.1 = 5.8 (was 5)
func TestCheckpointUploadsAreEgress(t *testing.T) {
	p := Profile{GPUs: 2, ComputeHours: 10, SpanDays: 10, Starts: 4, DiskGB: 100, EgressGB: 50,
		Checkpoint: &Checkpoint{Every: Duration(3 * time.Hour), SizeGB: 2}}
	if n, gb := p.Uploads(); n != 4 || gb != 8 {
		t.Errorf("uploads %d, %v GB; want 4, 8", n, gb)
	}
	b := onDemand(t, p, testOffer())
	if got := item(b, ItemEgress); !near(got, 5.8) || !near(b.Total, 56.3) {
		t.Errorf("egress %v total %v, want 5.8 and 56.3", got, b.Total)
	}
	q, err := Make(&p, []catalog.Offer{testOffer()}, catalog.Rates{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(strs(q.Notes), func(n string) bool {
		return strings.HasPrefix(n, "egress includes 4 checkpoint uploads of 2 GB (8 GB)")
	}) {
		t.Errorf("notes %q", strs(q.Notes))
	}
	// Without a size, or exactly 9 h (3 intervals), the counts follow.
	p.Checkpoint.SizeGB = 0
	if n, gb := p.Uploads(); n != 0 || gb != 0 {
		t.Errorf("no size: %d, %v", n, gb)
	}
	p.Checkpoint.SizeGB, p.ComputeHours = 1, 9
	if n, _ := p.Uploads(); n != 3 {
		t.Errorf("9 h every 3 h: %d uploads, want 3", n)
	}
}

// A provider that bills egress by month (AWS's schedule: 100 GB free,
// then 0.09 up to 10 TB): the task's egress is spread over the months of
// its span, each month with its own allowance.
//
//	30 days, 2000 GB: one month, (2000 − 100) × 0.09 = 171
//	45 days, 2000 GB: two months of 1000 GB, 2 × 900 × 0.09 = 162
//	45 days, 150 GB: two months of 75 GB, all free
func TestEgressByMonth(t *testing.T) {
	o := testOffer()
	o.EgressGB = catalog.Known(0.09)
	o.EgressMonth = &catalog.EgressMonth{FreeGB: 100, Tiers: []catalog.EgressTier{{AboveGB: 10240, Price: 0.085}}}
	for _, c := range []struct {
		days      int
		gb, want  float64
		wantMonth string
	}{{30, 2000, 171, "counts as 2000 GB in each of 1 month"}, {45, 2000, 162, "counts as 1000 GB in each of 2 months"}, {45, 150, 0, "counts as 75 GB in each of 2 months"}} {
		p := Profile{GPUs: 2, ComputeHours: 10, SpanDays: c.days, Starts: 1, EgressGB: c.gb}
		if got := item(onDemand(t, p, o), ItemEgress); !near(got, c.want) {
			t.Errorf("%d days, %v GB: egress %v, want %v", c.days, c.gb, got, c.want)
		}
		q, err := Make(&p, []catalog.Offer{o, testOffer()}, catalog.Rates{}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		note := "Test bill egress by each month's volume, in tiers: the task's " + strconvG(c.gb) + " GB " + c.wantMonth +
			" (spread evenly over the span); a month's free allowance (Test: 100 GB) is the account's"
		if !slices.ContainsFunc(strs(q.Notes), func(n string) bool { return strings.HasPrefix(n, note) }) {
			t.Errorf("notes %q, want one starting %q", strs(q.Notes), note)
		}
	}
	// An offer without a schedule pays every GB at egress_gb, whatever
	// the span, and no note speaks of months.
	p := Profile{GPUs: 2, ComputeHours: 10, SpanDays: 45, Starts: 1, EgressGB: 2000}
	if got := item(onDemand(t, p, testOffer()), ItemEgress); !near(got, 200) {
		t.Errorf("flat egress %v, want 200", got)
	}
	q, _ := Make(&p, []catalog.Offer{testOffer()}, catalog.Rates{}, Options{})
	if slices.ContainsFunc(strs(q.Notes), func(n string) bool { return strings.Contains(n, "each month's volume") }) {
		t.Errorf("a month note without a monthly schedule: %q", strs(q.Notes))
	}
}

func strconvG(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func TestOnDemandRounding(t *testing.T) {
	o := testOffer()
	for _, tc := range []struct {
		name      string
		inc, min  time.Duration
		hours     float64
		starts    int
		wantHours float64 // billed hours in all
	}{
		// 1 run of 0.5 h: the 3 h minimum applies.
		{"minimum", time.Hour, 3 * time.Hour, 0.5, 1, 3},
		// 2 runs of 2.5 h, 1 h increment: 2 × 3 h.
		{"increment", time.Hour, 0, 5, 2, 6},
		// per second: 2 runs of 2.5 h billed exactly.
		{"per second", time.Second, 0, 5, 2, 5},
		// per minute: 3 runs of 0.3333… h = 20 min exactly; 1 min increment adds nothing.
		{"per minute exact", time.Minute, 0, 1, 3, 1},
		// AWS-like: per second with a 60 s minimum; 10 runs of 30 s → 10 × 60 s.
		{"60 s minimum", time.Second, time.Minute, 10 * 30.0 / 3600, 10, 10.0 / 60},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o.OnDemand.Increment, o.OnDemand.Minimum = dur(tc.inc), dur(tc.min)
			b := onDemand(t, Profile{ComputeHours: tc.hours, Starts: tc.starts, SpanDays: 1}, o)
			if got := item(b, ItemCompute); !near(got, tc.wantHours*2) {
				t.Errorf("compute %v, want %v h × 2/h = %v", got, tc.wantHours, tc.wantHours*2)
			}
		})
	}
}

func TestInstancesAndUnknownFees(t *testing.T) {
	o := testOffer()
	o.BootFee, o.IPMonth = catalog.Fee{}, catalog.Fee{} // the zero Fee is unknown
	o.OnDemand.Increment = catalog.Duration{}
	// 3 GPUs on a 2-GPU offer: 2 instances. 7 h in 1 start, no rounding
	// (increment unknown): compute 7 × 2 × 2 = 28; unknown boot and IP are 0.
	b := onDemand(t, Profile{GPUs: 3, ComputeHours: 7}, o)
	if b.Instances != 2 || !near(b.Total, 28) || !near(b.ListTotal, 28) || b.HiddenShare != 0 {
		t.Fatalf("instances %d total %v list %v hidden %v", b.Instances, b.Total, b.ListTotal, b.HiddenShare)
	}
	if len(b.Warnings) != 1 || b.Warnings[0].String() != "unknown, computed as 0: on_demand.increment (no rounding applied), boot_fee, ip_month" {
		t.Errorf("warnings %q", strs(b.Warnings))
	}
	if strings.Join(b.Unknown, ",") != "on_demand.increment,boot_fee,ip_month" {
		t.Errorf("unknown %q", b.Unknown)
	}
}

// offerNotesFor is what quote and plan note for a task of gpus GPUs over
// two offers, one of 2 GPUs an instance and one of 8.
func offerNotesFor(t *testing.T, gpus int) map[string][]string {
	t.Helper()
	two, eight := testOffer(), testOffer()
	eight.ID, eight.GPUs = "eight", 8
	p := Profile{GPUs: gpus, ComputeHours: 10, Interruptible: true}
	p.Defaults(nil)
	q, err := Make(&p, []catalog.Offer{two, eight}, catalog.Rates{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := MakePlan(&p, []catalog.Offer{two, eight}, catalog.Rates{}, PlanOptions{Trials: 10}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return map[string][]string{"quote": strs(q.Notes), "plan": strs(plan.Notes)}
}

// noteWith is the first of notes containing s, or "".
func noteWith(notes []string, s string) string {
	for _, n := range notes {
		if strings.Contains(n, s) {
			return n
		}
	}
	return ""
}

// GPUs spread over several instances are said to be, and so are idle GPUs
// an offer sold by the machine bills, in quote and plan; a job that fills
// one instance of every offer gets neither note.
func TestInstanceNotes(t *testing.T) {
	const split, idle = "need several instances", "idle but billed"
	for _, tc := range []struct {
		gpus int
		what string
		want string
	}{
		{2, split, ""},
		{8, split, "1 of 2 offers need several instances for 8 GPUs: their GPUs sit in separate machines and talk over the network"},
		{16, split, "2 of 2 offers need several instances for 16 GPUs: their GPUs sit in separate machines and talk over the network, " +
			"which a job that splits one model across GPUs (tensor or pipeline parallel, FSDP) feels; the catalog does not record the network " +
			"between instances; no offer here has 16 GPUs in one instance (the most is 8)"},
		{1, idle, "2 of 2 offers rent more GPUs than the task's 1 (up to 7 more, idle but billed)"},
		{2, idle, "1 of 2 offers rent more GPUs than the task's 2 (up to 6 more, idle but billed)"},
		{3, idle, "2 of 2 offers rent more GPUs than the task's 3 (up to 5 more, idle but billed)"}, // 2 × 2 and 1 × 8
		{8, idle, ""},
		{16, idle, ""},
	} {
		for where, notes := range offerNotesFor(t, tc.gpus) {
			got := noteWith(notes, tc.what)
			if (tc.want == "") != (got == "") || !strings.HasPrefix(got, tc.want) {
				t.Errorf("%d GPUs, %s notes %q, want %q", tc.gpus, where, got, tc.want)
			}
		}
	}
}

func subOffer(hourly float64, subs ...catalog.Subscription) catalog.Offer {
	return catalog.Offer{ID: "s", Provider: "Sub", GPU: "RTX 4090", GPUs: 1, Currency: "USD", Source: "hand", AsOf: "2026-11-30",
		OnDemand:      catalog.OnDemand{Hourly: catalog.Known(hourly), Increment: dur(time.Second), Minimum: dur(0)},
		Subscriptions: subs, BootFee: catalog.Known(0), IPMonth: catalog.Known(0), EgressGB: catalog.Known(0),
		Storage: catalog.Storage{IncludedGB: catalog.Known(0), RunningGBMonth: catalog.Known(0), StoppedGBMonth: catalog.Known(0)}}
}

func TestSubscriptionCover(t *testing.T) {
	day := catalog.Subscription{Period: "day", Price: 40}
	week := catalog.Subscription{Period: "week", Price: 250}
	month := catalog.Subscription{Period: "month", Price: 900}
	for _, tc := range []struct {
		name       string
		subs       []catalog.Subscription
		hours      float64
		days       int
		wantTotal  float64
		wantDetail string
	}{
		// 24 h a day for 30 days; on demand a day is 48. A month (900) beats
		// 30 days (1200), 4 weeks + 2 days (1080) and on demand (1440).
		{"month", []catalog.Subscription{day, week, month}, 720, 30, 900, "1 month"},
		// 10 days: 1 week + 3 days = 250 + 120 = 370 beats 2 weeks (500),
		// 10 days (400) and a month (900).
		{"week and days", []catalog.Subscription{day, week, month}, 240, 10, 370, "1 week + 3 days"},
		// 9 days with only a week on sale: 1 week + 2 days on demand
		// (2 × 48 = 96) = 346 beats 2 weeks (500) and 9 days on demand (432).
		{"mixed with on demand", []catalog.Subscription{week}, 216, 9, 346, "1 week + 48 h on demand"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := subOffer(2, tc.subs...)
			p := Profile{ComputeHours: tc.hours, SpanDays: tc.days}
			p.Defaults(nil)
			b, ok := subscriptionBill(&p, &o, false)
			if !ok {
				t.Fatal("no subscription bill")
			}
			if !near(b.Total, tc.wantTotal) || b.Detail.String() != tc.wantDetail {
				t.Errorf("got %v %q, want %v %q", b.Total, b.Detail.String(), tc.wantTotal, tc.wantDetail)
			}
		})
	}
	// 2 h a day for 30 days: a day on demand is 4, and packed 24 h into a
	// day it is 48, less than a day's 50: no period pays off either way,
	// and there is no subscription bill.
	o := subOffer(2, catalog.Subscription{Period: "day", Price: 50}, week, month)
	p := Profile{ComputeHours: 60, SpanDays: 30}
	p.Defaults(nil)
	if b, ok := subscriptionBill(&p, &o, false); ok {
		t.Errorf("subscription offered although on demand is cheaper: %+v", b)
	}
}

func TestSubscriptionStorage(t *testing.T) {
	// While subscribed the instance is kept: storage at the running rate all
	// day, never the stopped rate. 100 GB extra at 0.72/GB-month running =
	// 0.1 an hour; a month = 720 h × 0.1 = 72, on top of the 900 price.
	o := subOffer(2, catalog.Subscription{Period: "month", Price: 900})
	o.Storage = catalog.Storage{IncludedGB: catalog.Known(0), RunningGBMonth: catalog.Known(0.72), StoppedGBMonth: catalog.Known(100)}
	p := Profile{ComputeHours: 720, SpanDays: 30, DiskGB: 100}
	p.Defaults(nil)
	b, ok := subscriptionBill(&p, &o, false)
	if !ok || !near(item(b, ItemStorage), 72) || !near(b.Total, 972) {
		t.Fatalf("ok %v storage %v total %v", ok, item(b, ItemStorage), b.Total)
	}
}

func TestBreakEvenFollowsFromPrices(t *testing.T) {
	// A month priced at 75% of 720 h on demand (1/h): 540, so it breaks even
	// at 540 h (18 h a day), not at the 160-180 h the seed document claims.
	o := subOffer(1, catalog.Subscription{Period: "month", Price: 0.75 * 720})
	p := Profile{ComputeHours: 300, SpanDays: 30}
	p.Defaults(nil)
	plan, err := MakePlan(&p, []catalog.Offer{o}, catalog.Rates{}, PlanOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	be := plan.Offers[0].BreakEven
	if len(be) != 1 || !near(be[0].Hours, 540) || !near(be[0].HoursPerDay, 18) {
		t.Fatalf("break-even %+v", be)
	}
	if plan.Offers[0].Recommendation != OnDemand {
		t.Errorf("300 h < 540 h should stay on demand, got %s (%s)", plan.Offers[0].Recommendation, plan.Offers[0].Reason.String())
	}
	p.ComputeHours = 600
	plan, _ = MakePlan(&p, []catalog.Offer{o}, catalog.Rates{}, PlanOptions{}, nil)
	if plan.Offers[0].Recommendation != Subscription {
		t.Errorf("600 h > 540 h should subscribe, got %s (%s)", plan.Offers[0].Recommendation, plan.Offers[0].Reason.String())
	}
}

// A spot price without an interruption rate is billed but not
// recommended, and the reason says so rather than that on demand is the
// only price known; an offer sold as spot only is not called unpriced.
func TestSpotWithoutRateNamed(t *testing.T) {
	o := testOffer()
	o.GPUs = 1
	o.Spot = &catalog.Spot{Hourly: catalog.Known(0.5)}
	p := Profile{ComputeHours: 10, SpanDays: 1, Interruptible: true}
	p.Defaults(nil)
	plan, err := MakePlan(&p, []catalog.Offer{o}, catalog.Rates{}, PlanOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	op := plan.Offers[0]
	if _, billed := op.Totals[Spot]; !billed || op.Recommendation != OnDemand ||
		op.Reason.String() != "on demand is the only plan judged: spot is not judged without an interruption rate (--interruptions-per-day)" {
		t.Errorf("%s: %q (totals %v)", op.Recommendation, op.Reason.String(), op.Totals)
	}
	o.OnDemand.Hourly = catalog.Fee{} // unknown
	plan, _ = MakePlan(&p, []catalog.Offer{o}, catalog.Rates{}, PlanOptions{}, nil)
	if op := plan.Offers[0]; op.Recommendation != "" || !strings.Contains(op.Reason.String(), "spot is the only price known for this offer, and spot is not judged") {
		t.Errorf("%s: %q", op.Recommendation, op.Reason.String())
	}
}

func TestSpotBill(t *testing.T) {
	o := testOffer()
	o.GPUs = 1
	o.Spot = &catalog.Spot{Hourly: catalog.Known(1), InterruptionsPerDay: catalog.Known(2.4), Notice: dur(30 * time.Second)}
	// 2 h of work, checkpoint every 1 h, write 0.1 h, restart 0.2 h, at
	// 2.4/day = 0.1/h. A segment is 1.1 h: e^(0.11) − 1 = 0.116278 expected
	// failures, each costing 1/0.1 + 0.2 = 10.2 h → 1.186035 h extra; with
	// the 1.1 h itself, 2 segments take 2 × 1.186035 = 2.372070 h in all.
	p := Profile{ComputeHours: 2, SpanDays: 1, Interruptible: true,
		Checkpoint: &Checkpoint{Every: Duration(time.Hour), Write: Duration(6 * time.Minute), Restart: Duration(12 * time.Minute)}}
	p.Defaults(nil)
	b, ok := spotBill(&p, &o, Options{})
	if !ok {
		t.Fatal("no spot bill")
	}
	fails := 2 * math.Expm1(0.11)
	hours := fails * 10.2
	if math.Abs(hours-2.372070) > 1e-5 {
		t.Fatalf("hand arithmetic: %v", hours)
	}
	if got := item(b, ItemCompute); !near(got, hours*1) {
		t.Errorf("compute %v, want %v", got, hours)
	}
	// Boot: 0.5 × (1 start + 0.2326 expected interruptions).
	if got := item(b, ItemBoot); !near(got, 0.5*(1+fails)) {
		t.Errorf("boot %v, want %v", got, 0.5*(1+fails))
	}
	// The 6 min write does not fit in the 30 s notice.
	if !strings.Contains(strings.Join(strs(b.Warnings), "\n"), "longer than the 30s interruption notice") {
		t.Errorf("warnings %q", strs(b.Warnings))
	}
	// Not interruptible: no spot bill, and the quote says why.
	p.Interruptible = false
	q, err := Make(&p, []catalog.Offer{o}, catalog.Rates{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range q.Bills {
		if b.Plan == Spot {
			t.Error("spot quoted for a job that cannot resume")
		}
	}
	if len(q.Notes) != 1 || !strings.Contains(q.Notes[0].String(), "not interruptible") {
		t.Errorf("notes %q", strs(q.Notes))
	}
}

func TestQuoteSortsAndConverts(t *testing.T) {
	cheap := subOffer(1)
	cheap.ID, cheap.Currency = "cny", "CNY" // 1 CNY/h = 0.1 USD/h at 10 CNY per USD
	dear := subOffer(0.5)
	dear.ID = "usd"
	rates := catalog.Rates{AsOf: "2026-11-30", PerUSD: map[string]float64{"USD": 1, "CNY": 10}}
	p := Profile{ComputeHours: 10}
	p.Defaults(nil)
	q, err := Make(&p, []catalog.Offer{dear, cheap}, rates, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(q.Bills) != 2 || q.Bills[0].Offer != "cny" || !near(q.Bills[0].Total, 1) || !near(q.Bills[1].Total, 5) {
		t.Fatalf("bills %+v", q.Bills)
	}
	if len(q.Rates) != 1 || q.Rates[0].String() != "1 USD = 10 CNY (as of 2026-11-30)" {
		t.Errorf("rates %q", strs(q.Rates))
	}
	q, _ = Make(&p, []catalog.Offer{dear, cheap}, rates, Options{Currency: "CNY"})
	if !near(q.Bills[1].Total, 50) || q.Currency != "CNY" {
		t.Errorf("in CNY: %+v", q.Bills[1])
	}
	// --top 1 keeps the CNY offer: no rate was needed for what is shown.
	if q.Top(1); len(q.Bills) != 1 || len(q.Rates) != 0 {
		t.Errorf("top 1 in CNY: %d bills, rates %q", len(q.Bills), strs(q.Rates))
	}
	// A budget's plans likewise: in USD, the CNY offer's hours come first.
	r, err := Afford(&p, false, []catalog.Offer{dear, cheap}, rates, Options{}, 5)
	if err != nil || len(r.Rates) != 1 {
		t.Fatalf("afford: %v, rates %q", err, strs(r.Rates))
	}
	if r.Top(1); len(r.Plans) != 1 || r.Plans[0].Bill.Offer != "cny" || len(r.Rates) != 1 {
		t.Errorf("afford top 1: %+v, rates %q", r.Plans, strs(r.Rates))
	}
	r, _ = Afford(&p, false, []catalog.Offer{dear, cheap}, rates, Options{Currency: "CNY"}, 50)
	if r.Top(1); len(r.Plans) != 1 || r.Plans[0].Bill.Offer != "cny" || len(r.Rates) != 0 {
		t.Errorf("afford top 1 in CNY: %+v, rates %q", r.Plans, strs(r.Rates))
	}
	if _, err := Make(&p, []catalog.Offer{dear}, rates, Options{Currency: "JPY"}); err == nil || !strings.Contains(err.Error(), "no exchange rate for JPY") {
		t.Errorf("JPY: %v", err)
	}
}

func TestOffersNoMatch(t *testing.T) {
	p := Profile{GPU: "TPU v5"}
	_, err := Offers(&p, []catalog.Offer{testOffer()})
	if err == nil || !strings.Contains(err.Error(), `no offer has GPU "TPU v5"; the catalog has: RTX 4090`) {
		t.Errorf("got %v", err)
	}
}

// Each mistake is reported once, against the field that holds it: a span
// derived from bad hours, or hours checked against a bad span, add noise.
func TestProfileValidateOneErrorPerMistake(t *testing.T) {
	for _, c := range []struct {
		p    Profile
		want []string
	}{
		{Profile{ComputeHours: -1}, []string{"compute_hours: want a positive number of hours, got -1"}},
		{Profile{ComputeHours: 5, SpanDays: -2}, []string{"span_days: want at least 1 day, got -2"}},
		{Profile{ComputeHours: 50, SpanDays: 1}, []string{"compute_hours: 50 h do not fit in a span of 1 day (24 h)"}},
		{Profile{ComputeHours: 0, SpanDays: -1}, []string{"compute_hours: want a positive number of hours, got 0", "span_days: want at least 1 day, got -1"}},
		// Not "span_days: ... got 0", which the user never gave.
		{Profile{ComputeHours: 1e9}, []string{"compute_hours: want fewer than 876000 hours (a century), got 1e+09"}},
	} {
		c.p.Defaults(nil)
		var got []string
		for _, pr := range c.p.Validate() {
			got = append(got, pr.Path+": "+pr.Msg.String())
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%+v: %q, want %q", c.p, got, c.want)
		}
	}
}

// TestPriceAge: every bill carries its offer's source and the age of its
// prices on Options.Today; past StalePriceDays, or with no date stated, a
// warning says to confirm them; without a Today nothing is judged.
func TestPriceAge(t *testing.T) {
	p := Profile{GPU: "RTX 4090", ComputeHours: 10, SpanDays: 1}
	p.Defaults(nil)
	dated, undated := testOffer(), testOffer()
	undated.ID, undated.AsOf = "u", "not stated on the page"
	stated := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		today time.Time
		age   int // -1: not judged; -2: dated after today
		stale bool
	}{
		{time.Time{}, -1, false},
		{stated, 0, false},
		{stated.AddDate(0, 0, StalePriceDays), StalePriceDays, false},
		{stated.AddDate(0, 0, StalePriceDays+1), StalePriceDays + 1, true},
		{stated.AddDate(0, 0, -1), -2, true}, // dated after today: warned, no age
	} {
		q, err := Make(&p, []catalog.Offer{dated, undated}, catalog.Rates{}, Options{Today: c.today})
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range q.Bills {
			if b.Source != "hand" || b.AsOf != dated.AsOf && b.AsOf != undated.AsOf {
				t.Errorf("today %v, %s: source %q, as_of %q", c.today, b.Offer, b.Source, b.AsOf)
			}
			warned := slices.ContainsFunc(strs(b.Warnings), func(w string) bool {
				return strings.HasPrefix(w, "prices dated ") || strings.HasPrefix(w, "the source states no date")
			})
			if c.age == -2 && b.Offer != "u" {
				if b.PriceAgeDays != nil || !warned || !strings.Contains(strings.Join(strs(b.Warnings), "\n"), "after today (2026-11-29)") {
					t.Errorf("dated after today: age %v, warnings %q", b.PriceAgeDays, strs(b.Warnings))
				}
				continue
			}
			switch {
			case b.Offer == "u":
				if b.PriceAgeDays != nil || warned != !c.today.IsZero() {
					t.Errorf("today %v, undated offer: age %v, warnings %q", c.today, b.PriceAgeDays, strs(b.Warnings))
				}
			case c.age < 0:
				if b.PriceAgeDays != nil || b.PriceDate != "" || warned {
					t.Errorf("no today: age %v, date %q, warnings %q", b.PriceAgeDays, b.PriceDate, strs(b.Warnings))
				}
			default:
				if b.PriceAgeDays == nil || *b.PriceAgeDays != c.age || b.PriceDate != "2026-11-30" || warned != c.stale {
					t.Errorf("today %v: age %v, date %q, warnings %q; want age %d, stale %v", c.today, b.PriceAgeDays, b.PriceDate, strs(b.Warnings), c.age, c.stale)
				}
			}
		}
	}
}

// min_gpu_memory_gb keeps the offers whose GPUs may hold it: by the memory
// an offer states, else by its model's datasheet rows. An offer that may
// be too small, but is not known to be, is kept and counted in a note.
func TestWithMemory(t *testing.T) {
	offers := []catalog.Offer{
		{ID: "h100-80", GPU: "H100", GPUs: 1, GPUMemoryGB: catalog.Known(80)},
		{ID: "nvl", GPU: "H100 NVL", GPUs: 1},     // the datasheet: 94 GB
		{ID: "h100-?", GPU: "H100", GPUs: 1},      // 80 or 94 GB
		{ID: "4090", GPU: "RTX 4090", GPUs: 1},    // 24 GB
		{ID: "mystery", GPU: "Test GPU", GPUs: 1}, // no row: unknown
	}
	ids := func(os []catalog.Offer) string {
		var s []string
		for _, o := range os {
			s = append(s, o.ID)
		}
		return strings.Join(s, " ")
	}
	for _, tc := range []struct {
		min       float64
		ids, note string
	}{
		{0, "h100-80 nvl h100-? 4090 mystery", ""},
		{24, "h100-80 nvl h100-? 4090 mystery", "1 of 5 offers may have GPUs of less than 24 GB"},
		{80, "h100-80 nvl h100-? mystery", "1 of 4 offers may have GPUs of less than 80 GB"},
		{90, "nvl h100-? mystery", "2 of 3 offers may have GPUs of less than 90 GB"},
		{94, "nvl h100-? mystery", "2 of 3 offers may have GPUs of less than 94 GB"},
		{95, "mystery", "1 of 1 offer may have GPUs of less than 95 GB"},
	} {
		p := &Profile{MinGPUMemoryGB: tc.min, GPUs: 1}
		got, err := WithMemory(p, offers)
		if err != nil || ids(got) != tc.ids {
			t.Errorf("min %v: %q, %v; want %q", tc.min, ids(got), err, tc.ids)
			continue
		}
		if n := memoryNote(p, got).String(); (tc.note == "") != (n == "") || !strings.HasPrefix(n, tc.note) {
			t.Errorf("min %v: note %q, want it to begin %q", tc.min, n, tc.note)
		}
	}
	_, err := WithMemory(&Profile{GPU: "RTX 4090", MinGPUMemoryGB: 48}, offers[3:4])
	if err == nil || err.Error() != `no offer among the 1 offer of GPU "RTX 4090" has GPUs of 48 GB or more; the most is 24 GB (RTX 4090)` {
		t.Errorf("too small: %v", err)
	}
	for _, bad := range []float64{-1, math.NaN(), math.Inf(1)} {
		p := &Profile{ComputeHours: 1, SpanDays: 1, GPUs: 1, Starts: 1, MinGPUMemoryGB: bad}
		if ps := p.Validate(); len(ps) != 1 || ps[0].Path != "min_gpu_memory_gb" {
			t.Errorf("min_gpu_memory_gb %v: %v", bad, ps)
		}
	}
}

// TestPlanBillsAreQuotes: plan's bills of an offer are quote's bills of
// it, in plan's order, converted and dated alike, and plan names the
// offer's GPUs, memory and instances as its bills do.
func TestPlanBillsAreQuotes(t *testing.T) {
	o := testOffer()
	o.ID, o.Currency, o.GPUMemoryGB = "cny", "CNY", catalog.Known(24)
	o.Subscriptions = []catalog.Subscription{{Period: catalog.PeriodWeek, Price: 50}}
	o.Spot = &catalog.Spot{Hourly: catalog.Known(1), InterruptionsPerDay: catalog.Known(2.4), Notice: dur(30 * time.Second)}
	rates := catalog.Rates{AsOf: "2026-11-30", PerUSD: map[string]float64{"USD": 1, "CNY": 10}}
	p := Profile{ComputeHours: 40, SpanDays: 7, Starts: 3, GPUs: 3, DiskGB: 80, EgressGB: 5, Interruptible: true,
		Checkpoint: &Checkpoint{Every: Duration(time.Hour), Write: Duration(6 * time.Minute), Restart: Duration(12 * time.Minute)}}
	p.Defaults(nil)
	opt := Options{Today: time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)}
	q, err := Make(&p, []catalog.Offer{o}, rates, opt)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := MakePlan(&p, []catalog.Offer{o}, rates, PlanOptions{Options: opt, Trials: 100}, nil)
	if err != nil {
		t.Fatal(err)
	}
	op := plan.Offers[0]
	if len(op.Bills) != 3 || len(q.Bills) != 3 {
		t.Fatalf("plan has %d bills, quote %d; want 3 each", len(op.Bills), len(q.Bills))
	}
	for i, want := range []string{OnDemand, Subscription, Spot} {
		b := op.Bills[i]
		if b.Plan != want {
			t.Errorf("bill %d is %s, want %s", i, b.Plan, want)
		}
		j := slices.IndexFunc(q.Bills, func(x Bill) bool { return x.Plan == b.Plan })
		if j < 0 || !reflect.DeepEqual(b, q.Bills[j]) {
			t.Errorf("plan's %s bill\n%+v\nquote's\n%+v", b.Plan, b, q.Bills)
		}
		if !near(op.Totals[b.Plan], b.Total) {
			t.Errorf("totals[%s] = %v, bill %v", b.Plan, op.Totals[b.Plan], b.Total)
		}
	}
	if op.GPUs != 2 || op.Instances != 2 || op.GPUMemoryGB != catalog.Known(24) {
		t.Errorf("gpus %d, instances %d, memory %v; want 2, 2, 24", op.GPUs, op.Instances, op.GPUMemoryGB)
	}
	if b := op.Bills[0]; b.OfferCurrency != "CNY" || b.PriceDate != "2026-11-30" || b.PriceAgeDays == nil || *b.PriceAgeDays != 3 {
		t.Errorf("on-demand bill currency %s, price date %q, age %v", b.OfferCurrency, b.PriceDate, b.PriceAgeDays)
	}
}

// Issue #37 item 6: 600 h in 40 days on a 4090 at 1.98 an hour with a
// 1,052 month. Spread evenly (15 h a day) a month never pays off (it
// breaks even at 531 h a month, 17.7 h a day), and quote said pay as you
// go: 1,188. Packed into the month (20 h a day) the 600 h cost 1,052,
// and the bill says it assumes that schedule.
func TestSubscriptionPacksHours(t *testing.T) {
	o := subOffer(1.98, catalog.Subscription{Period: catalog.PeriodMonth, Price: 1052})
	p := Profile{ComputeHours: 600, SpanDays: 40}
	p.Defaults(nil)
	b, ok := subscriptionBill(&p, &o, false)
	if !ok || !near(b.Total, 1052) || b.Schedule != SchedulePacked {
		t.Fatalf("ok %v, %+v", ok, b)
	}
	if !strings.Contains(b.Detail.String(), "600 h run inside, 20 h a day") {
		t.Errorf("detail %q does not say the schedule", b.Detail.String())
	}
	if !slices.ContainsFunc(strs(b.Warnings), func(w string) bool {
		return strings.HasPrefix(w, "schedule: ") && strings.Contains(w, "136.00 USD more")
	}) {
		t.Errorf("warnings %q do not say the schedule and what spreading costs", strs(b.Warnings))
	}
	// 760 h: the month holds 720 of them, 40 more on demand (79.20).
	p.ComputeHours = 760
	if b, ok = subscriptionBill(&p, &o, false); !ok || !near(b.Total, 1052+40*1.98) || !strings.HasSuffix(b.Detail.String(), "+ 40 h on demand") {
		t.Fatalf("760 h: ok %v, %+v", ok, b)
	}
	// Where spreading costs the same, the bill keeps the user's schedule.
	p = Profile{ComputeHours: 720, SpanDays: 30}
	p.Defaults(nil)
	if b, ok = subscriptionBill(&p, &o, false); !ok || b.Schedule != ScheduleSpread || b.Detail.String() != "1 month" {
		t.Fatalf("720 h in 30 days: ok %v, %+v", ok, b)
	}
	plan, err := MakePlan(&Profile{ComputeHours: 600, SpanDays: 40, GPUs: 1, Starts: 1}, []catalog.Offer{o}, catalog.Rates{}, PlanOptions{}, nil)
	if err != nil || plan.Offers[0].Recommendation != Subscription {
		t.Fatalf("plan: %v %+v", err, plan.Offers[0])
	}
}

// Issue #37 item 2: AWS's and Google's included disk is instance store or
// local SSD, wiped on stop, yet it was counted as a kept disk, so a stopped
// instance's storage cost 0. The worked example above with an ephemeral
// included disk: the 100 GB live on a volume, all of them billed,
// 100 × (0.001 × 10 h + 0.002 × 230 h) = 47 (not 23.5). Run back to back
// in one start, nothing is stopped and the included disk holds the data.
func TestEphemeralDiskIsNotKept(t *testing.T) {
	o := testOffer()
	o.Storage.IncludedDisk = catalog.DiskEphemeral
	b := onDemand(t, Profile{GPUs: 2, ComputeHours: 10, SpanDays: 10, Starts: 4, DiskGB: 100, EgressGB: 50}, o)
	if got := item(b, ItemStorage); !near(got, 47) {
		t.Errorf("storage %v, want 47", got)
	}
	if !slices.ContainsFunc(strs(b.Warnings), func(w string) bool { return strings.Contains(w, "included 50 GB disk is ephemeral") }) {
		t.Errorf("warnings %q", strs(b.Warnings))
	}
	b = onDemand(t, Profile{GPUs: 2, ComputeHours: 24, SpanDays: 1, Starts: 1, DiskGB: 100}, o)
	if got := item(b, ItemStorage); !near(got, 50*0.001*24) {
		t.Errorf("back to back: storage %v, want %v", got, 50*0.001*24)
	}
	// Where no source says, a bill that leans on the included disk over a
	// stop names the unknown.
	o.Storage.IncludedDisk = ""
	b = onDemand(t, Profile{GPUs: 2, ComputeHours: 10, SpanDays: 10, Starts: 4, DiskGB: 100}, o)
	if !slices.Contains(b.Unknown, "storage.included_disk") {
		t.Errorf("unknown %q", b.Unknown)
	}
}

// strs is each text's English.
func strs(ts []i18n.Text) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.String()
	}
	return out
}

// A shared disk is a network volume with its own rate where the offer
// states one (issue #56: RunPod's were billed at the pod volume's rate).
// 100 GB over the worked example's 240 h span, 10 h running, at 0.72 per
// GB-month (0.001 per GB-hour), stopped or not: 100 × 0.001 × 240 = 24,
// once for the two instances. Without the rate, the disk's rates stand in
// (100 × (0.001 × 10 + 0.002 × 230) = 47) and a note says so.
func TestSharedDiskHasItsOwnRate(t *testing.T) {
	p := Profile{GPUs: 4, ComputeHours: 10, SpanDays: 10, Starts: 4, DiskGB: 100, SharedDisk: true}
	o := testOffer()
	o.Storage.SharedGBMonth = catalog.Known(0.72)
	if b := onDemand(t, p, o); !near(item(b, ItemStorage), 24) || b.Instances != 2 {
		t.Errorf("with a volume rate: storage %v on %d instances, want 24 on 2", item(b, ItemStorage), b.Instances)
	}
	b := onDemand(t, p, testOffer())
	if !near(item(b, ItemStorage), 47) {
		t.Errorf("without one: storage %v, want 47", item(b, ItemStorage))
	}
	if !slices.ContainsFunc(strs(b.Warnings), func(w string) bool { return strings.HasPrefix(w, "no network-volume rate is known") }) {
		t.Errorf("no note that the volume's rate is unknown: %q", strs(b.Warnings))
	}
}
