package refresh

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/catalog"
	"github.com/gpurent/gpurent/internal/catalog/refresh/feedtest"
)

var day = time.Date(2026, 12, 7, 9, 30, 0, 0, time.UTC)

func refresh(t *testing.T, failing ...string) (Result, *catalog.Catalog) {
	t.Helper()
	c, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	eps, err := ParseEndpoints(feedtest.Serve(t, "testdata", failing...))
	if err != nil {
		t.Fatal(err)
	}
	r := Refresh(context.Background(), c.Offers, Options{Endpoints: eps, Now: day, Getenv: func(k string) string {
		switch k {
		case "VAST_API_KEY", "RUNPOD_API_KEY", "LAMBDA_API_KEY":
			return "key-" + k
		}
		return ""
	}})
	return r, c
}

func slicesIndex(offers []catalog.Offer, id string) int {
	for i := range offers {
		if offers[i].ID == id {
			return i
		}
	}
	return -1
}

func find(offers []catalog.Offer, id string) *catalog.Offer {
	for i := range offers {
		if offers[i].ID == id {
			return &offers[i]
		}
	}
	return nil
}

// TestRefreshFromRecordedAnswers: AWS's Linux on-demand price (not the
// Windows, dedicated or capacity-reservation SKU, nor the reserved term),
// Azure's newest Linux pay-as-you-go and Spot meters (not Windows, dev/test
// or a reservation, across pages), Vast.ai's median of single-GPU offers
// as a new reading; a zero price rejected with the reason; too few Vast
// offers said; the result a catalog that reads back and validates.
func TestRefreshFromRecordedAnswers(t *testing.T) {
	r, c := refresh(t)
	p5 := find(r.Offers, "aws-p5.48xlarge")
	// Its spot price is not read: the offer keeps its date, and says
	// what was refreshed when.
	if p5 == nil || p5.OnDemand.Hourly != catalog.Known(51.2) || p5.AsOf != c.Offers[slicesIndex(c.Offers, "aws-p5.48xlarge")].AsOf ||
		!strings.Contains(p5.Notes, "on_demand refreshed 2026-12-07T09:30:00Z from ") || !strings.Contains(p5.Notes, "/offers/v1.0/aws/AmazonEC2/current/us-east-1/index.json") {
		t.Fatalf("p5: %+v", p5)
	}
	// Both its prices read: dated today, from its source.
	nd := find(r.Offers, "azure-ND96isr_H100_v5")
	if nd == nil || nd.OnDemand.Hourly != catalog.Known(89.5) || nd.Spot.Hourly != catalog.Known(17.9) || nd.AsOf != "2026-12-07" ||
		!strings.Contains(nd.Source, "/api/retail/prices?api-version=2023-01-01-preview&$filter=") || !strings.Contains(nd.Source, "(fetched 2026-12-07T09:30:00Z") {
		t.Fatalf("ND96isr: %+v", nd)
	}
	h100 := find(r.Offers, "vast-h100-sxm-median-2026-12-07")
	if h100 == nil || h100.OnDemand.Hourly != catalog.Known(2.2) || len(h100.Supersedes) != 1 || h100.Supersedes[0] != "vast-h100-sxm-median-2026-10-19" {
		t.Fatalf("vast H100: %+v", h100)
	}
	if v := find(r.Offers, "vast-4090-median-2026-12-07"); v == nil || v.OnDemand.Hourly != catalog.Known(0.375) || v.EgressGB.IsKnown() {
		t.Fatalf("vast 4090: %+v", v)
	}
	// The hosts' own disk and bandwidth rates, as medians of the same
	// offers: storage billed running and stopped, the upload rate as
	// egress (a 0 is a rate), the catalog's unknowns said as -1.
	if h100.Storage.RunningGBMonth != catalog.Known(0.15) || h100.Storage.StoppedGBMonth != catalog.Known(0.15) || h100.EgressGB != catalog.Known(0.005) {
		t.Fatalf("vast H100 fees: storage %+v, egress %+v", h100.Storage, h100.EgressGB)
	}
	fees := 0
	for _, c := range r.Updated {
		if c.Offer == h100.ID && (c.Plan == "storage_gb_month" && c.After == 0.15 || c.Plan == "egress_gb" && c.After == 0.005) && c.Before == -1 {
			fees++
		}
	}
	if fees != 2 {
		t.Errorf("the fees' changes are not listed: %+v", r.Updated)
	}
	rejected := map[string]string{}
	for _, x := range r.Rejected {
		if rejected[x.Offer] == "" { // the first source's reason
			rejected[x.Offer] = x.Reason
		}
	}
	if rejected["aws-g5.xlarge"] != "on_demand: a price of 0" || rejected["azure-NC24ads_A100_v4"] != "on_demand: a price of 0" {
		t.Fatalf("rejected: %v", rejected)
	}
	if find(r.Offers, "aws-g5.xlarge") != nil || !strings.Contains(r.Failed["vast"], "2 offers of A100 SXM4, too few") {
		t.Fatalf("failed %v", r.Failed)
	}
	// What is written reads back as a catalog over the embedded one.
	path := t.TempDir() + "/prices.yaml"
	if err := catalog.WriteOverlay(path, "# test\n", r.Offers); err != nil {
		t.Fatal(err)
	}
	merged, n, err := catalog.LoadOverlay(path, nil)
	if err != nil || n != len(r.Offers) {
		t.Fatal(n, err)
	}
	if o := find(merged.Offers, "aws-p5.48xlarge"); o == nil || o.OnDemand.Hourly != catalog.Known(51.2) || len(merged.Offers) != len(c.Offers)+2 {
		t.Fatalf("merged: %d offers, p5 %+v", len(merged.Offers), o)
	}
}

// TestRefreshOneSourceFailing: AWS's price list answering 500 leaves
// Azure's and Vast's prices refreshed, and names AWS.
func TestRefreshOneSourceFailing(t *testing.T) {
	r, _ := refresh(t, "aws")
	// The Spot Advisor still answers: p5 gets its bucket, not a price.
	p5 := find(r.Offers, "aws-p5.48xlarge")
	if !strings.Contains(r.Failed["aws"], "HTTP 500") || find(r.Offers, "azure-ND96isr_H100_v5") == nil || find(r.Offers, "vast-h100-sxm-median-2026-12-07") == nil || p5 == nil || p5.OnDemand.Hourly == catalog.Known(51.2) {
		t.Fatalf("failed %v; %d offers", r.Failed, len(r.Offers))
	}
}

func TestCheckRejects(t *testing.T) {
	for _, tc := range []struct {
		read, before float64
		want         string
	}{{0, 2, "a price of 0"}, {-1, 2, "a price of -1"}, {11, 2, "more than 5x"}, {0.3, 2, "more than 5x"}, {2.5, 2, ""}, {9, 0, ""}} {
		if got := check(tc.read, tc.before, tc.before > 0); !strings.Contains(got, tc.want) || (tc.want == "" && got != "") {
			t.Errorf("%v over %v: %q", tc.read, tc.before, got)
		}
	}
}

// TestRefreshRunPodAndLambda: RunPod's price per GPU-hour in the offer's
// cloud (secure or community), times its GPUs; Lambda's cents per hour
// for the whole instance; a zero or absent price rejected with the
// reason; each reading dated today under the offer's own id.
func TestRefreshRunPodAndLambda(t *testing.T) {
	r, _ := refresh(t)
	for id, want := range map[string]float64{
		"runpod-secure-h100-sxm-2026-11": 2.99, "runpod-community-h100-sxm": 2.39, "runpod-secure-h100-pcie": 2.39,
		"runpod-secure-rtx-4090": 0.59, "lambda-gpu_1x_h100_sxm5": 2.99, "lambda-gpu_8x_h100_sxm5": 23.92, "lambda-gpu_1x_a10": 0.75,
	} {
		o := find(r.Offers, id)
		if o == nil || o.OnDemand.Hourly != catalog.Known(want) || o.AsOf != "2026-12-07" || !strings.Contains(o.Source, "(fetched 2026-12-07T09:30:00Z") {
			t.Errorf("%s: want %v dated today, got %+v", id, want, o)
		}
	}
	rejected := map[string]string{}
	for _, x := range r.Rejected {
		rejected[x.Offer] = x.Reason
	}
	for id, want := range map[string]string{
		"runpod-community-rtx-4090":  "on_demand: a price of 0",
		"runpod-community-h100-pcie": "RunPod's catalog lists no community price for NVIDIA H100 PCIe",
		"runpod-secure-l40s":         "RunPod's catalog lists no secure price for NVIDIA L40S",
		"lambda-gpu_1x_a6000":        "Lambda lists no price for gpu_1x_a6000",
	} {
		if rejected[id] != want {
			t.Errorf("%s rejected for %q, want %q", id, rejected[id], want)
		}
	}
	if _, ok := r.Failed["runpod"]; ok {
		t.Errorf("failed: %v", r.Failed)
	}
	// Without their keys, both are named as failed and nothing of theirs is read.
	c, _ := catalog.Default()
	eps, _ := ParseEndpoints(feedtest.Serve(t, "testdata"))
	r = Refresh(context.Background(), c.Offers, Options{Endpoints: eps, Now: day, Only: []string{"runpod", "lambda"}, Getenv: func(string) string { return "" }})
	if !strings.Contains(r.Failed["runpod"], "RUNPOD_API_KEY") || !strings.Contains(r.Failed["lambda"], "LAMBDA_API_KEY") || len(r.Offers) != 0 {
		t.Errorf("without keys: failed %v, %d offers", r.Failed, len(r.Offers))
	}
}

// TestRefreshSpotAdvisor: the Spot Advisor's Linux bucket of the offer's
// type in its region (not Windows', not another region's) becomes its
// spot.interruption_frequency, dated today, in the same reading as the
// price AWS's list gave it; its prices keep their dates. A type the data
// does not list is named; a range label it cannot read fails the source.
func TestRefreshSpotAdvisor(t *testing.T) {
	r, c := refresh(t)
	p5 := find(r.Offers, "aws-p5.48xlarge")
	if p5 == nil || p5.OnDemand.Hourly != catalog.Known(51.2) || p5.Spot == nil || p5.Spot.Frequency == nil {
		t.Fatalf("p5: %+v", p5)
	}
	if f := p5.Spot.Frequency; f.Low != 0.20 || f.High.IsKnown() || f.AsOf != "2026-12-07" || !strings.Contains(f.Source, "/spot-advisor-data.json (fetched 2026-12-07T09:30:00Z") {
		t.Errorf("p5's bucket: %+v", f)
	}
	if n := len(slicesAll(r.Offers, "aws-p5.48xlarge")); n != 1 {
		t.Errorf("p5 is written %d times", n)
	}
	for id, want := range map[string][2]float64{"aws-p4d.24xlarge": {0.10, 0.15}, "aws-p4de.24xlarge": {0, 0.05}, "aws-g6e.xlarge": {0.05, 0.10}} {
		o := find(r.Offers, id)
		if o == nil || o.Spot.Frequency == nil || o.Spot.Frequency.Low != want[0] || o.Spot.Frequency.High != catalog.Known(want[1]) {
			t.Errorf("%s: %+v", id, o)
			continue
		}
		// Only the bucket was read: its prices and their date are the catalog's.
		base := c.Offers[slicesIndex(c.Offers, id)]
		if o.AsOf != base.AsOf || o.Spot.Hourly != base.Spot.Hourly {
			t.Errorf("%s: as_of %s, spot %v; the catalog's %s, %v", id, o.AsOf, o.Spot.Hourly, base.AsOf, base.Spot.Hourly)
		}
	}
	var named bool
	for _, x := range r.Rejected {
		named = named || x.Offer == "aws-g6.xlarge" && strings.Contains(x.Reason, "no Linux bucket for g6.xlarge in us-east-1")
	}
	if !named {
		t.Errorf("a type the data lacks is not named: %+v", r.Rejected)
	}
	if f, ok := bucket("5%-10"); ok {
		t.Errorf("an unreadable label read as %+v", f)
	}
	r, _ = refresh(t, "aws-spot")
	if !strings.Contains(r.Failed["aws-spot"], "HTTP 500") || find(r.Offers, "aws-p5.48xlarge") == nil || find(r.Offers, "aws-p5.48xlarge").Spot.Frequency.AsOf == "2026-12-07" {
		t.Errorf("with the Spot Advisor failing: %v", r.Failed)
	}
}

func slicesAll(offers []catalog.Offer, id string) []catalog.Offer {
	var out []catalog.Offer
	for _, o := range offers {
		if o.ID == id {
			out = append(out, o)
		}
	}
	return out
}

// TestRefreshFeeRejected: a negative or NaN fee read is not written, and
// says why; the price read with it still is.
func TestRefreshFeeRejected(t *testing.T) {
	base := catalog.Offer{ID: "v", Provider: "Vast.ai", GPU: "H100 SXM", GPUs: 1, Currency: "USD", AsOf: "2026-10-01",
		OnDemand: catalog.OnDemand{Hourly: catalog.Known(2)}}
	var r Result
	r.apply(&base, price{offer: "v", onDemand: 2.1, hasOD: true, source: "s", fees: []fee{{"egress_gb", -0.01}, {"storage_gb_month", 0.2}}}, day)
	if len(r.Offers) != 1 || r.Offers[0].EgressGB.IsKnown() || r.Offers[0].Storage.RunningGBMonth != catalog.Known(0.2) ||
		len(r.Rejected) != 1 || r.Rejected[0].Reason != "egress_gb: -0.01" {
		t.Fatalf("offers %+v, rejected %+v", r.Offers, r.Rejected)
	}
}
