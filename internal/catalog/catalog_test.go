package catalog

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/gpurent/gpurent/internal/yamlfile"
)

const good = `version: 1
exchange_rates: {as_of: 2026-11-01, USD: 1, CNY: 7.1}
offers:
  - id: example-rtx4090
    provider: ExampleCloud
    gpu: RTX 4090
    gpus: 1
    region: cn-east
    currency: CNY
    source: https://example.invalid/prices
    as_of: 2026-10-15
    on_demand: {hourly: 1.98, increment: 1s, minimum: 0s}
    subscriptions: [{period: day, price: 45}, {period: week, price: 290}, {period: month, price: 1150}]
    spot: {hourly: 0.9, interruptions_per_day: 1.5, notice: 30s}
    boot_fee: 0
    storage: {included_gb: 50, running_gb_month: 0, stopped_gb_month: 9.0}
    egress_gb: 0.8
    ip_month: unknown
    release_after_stopped: 15d
`

func TestParseGood(t *testing.T) {
	c, err := Parse("good.yaml", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	o := c.Offers[0]
	if v, ok := o.OnDemand.Hourly.Value(); !ok || v != 1.98 {
		t.Errorf("hourly = %v", o.OnDemand.Hourly)
	}
	if o.IPMonth.IsKnown() {
		t.Errorf("ip_month unknown was read as known %v", o.IPMonth)
	}
	if o.GPUMemoryGB.IsKnown() {
		t.Errorf("gpu_memory_gb left out was read as known %v", o.GPUMemoryGB)
	}
	if v, ok := o.BootFee.Value(); !ok || v != 0 {
		t.Errorf("boot_fee 0 must be a known zero, got %v", o.BootFee)
	}
	if d, ok := o.ReleaseAfterStopped.Value(); !ok || d != 15*24*time.Hour {
		t.Errorf("release_after_stopped = %v", o.ReleaseAfterStopped)
	}
	if got, _ := c.Rates.Convert(7.1, "CNY", "USD"); math.Abs(got-1) > 1e-12 {
		t.Errorf("7.1 CNY = %v USD, want 1", got)
	}
	// A fee left out is unknown, not free.
	if o.Spot.Notice.String() != "30s" || c.Offers[0].Storage.IncludedGB.String() != "50" {
		t.Errorf("spot notice %v, included %v", o.Spot.Notice, o.Storage.IncludedGB)
	}
}

func TestParseBad(t *testing.T) {
	for _, tc := range []struct {
		name, old, new string
		want           string // file:line: path: message fragment
	}{
		{"unknown field", "    boot_fee: 0\n", "    boot_fee: 0\n    bootfee: 1\n", "bad.yaml:16: offers[0].bootfee: unknown field \"bootfee\""},
		{"negative price", "hourly: 1.98,", "hourly: -1,", "bad.yaml:12: offers[0].on_demand.hourly: want a non-negative amount"},
		{"NaN price", "egress_gb: 0.8", "egress_gb: .nan", "bad.yaml:17: offers[0].egress_gb: want a non-negative amount"},
		{"word for price", "egress_gb: 0.8", "egress_gb: cheap", "bad.yaml:17: offers[0].egress_gb: want a number or unknown, got \"cheap\""},
		{"unknown unit", "increment: 1s", "increment: 1x", "bad.yaml:12: offers[0].on_demand.increment: invalid duration \"1x\""},
		{"unknown period", "{period: week,", "{period: fortnight,", "bad.yaml:13: offers[0].subscriptions[1].period: unknown period \"fortnight\""},
		{"zero increment", "increment: 1s", "increment: 0s", "bad.yaml:12: offers[0].on_demand.increment: want a positive increment"},
		{"missing source", "    source: https://example.invalid/prices\n", "", "bad.yaml:4: offers[0].source: missing"},
		{"currency without rate", "currency: CNY", "currency: JPY", "bad.yaml:9: offers[0].currency: no exchange rate for JPY"},
		{"bad rate", "CNY: 7.1", "CNY: -7.1", "bad.yaml:2: exchange_rates.CNY: rate for CNY: want a positive number"},
		{"tiny rate", "CNY: 7.1", "CNY: 1e-308", "exchange_rates.CNY: rate for CNY: want units per US dollar from"},
		{"rate map with extra", "CNY: 7.1", "CNY: {rate: 7.1, as_of: \"2026-11-01\", extra: 1}", "rate for CNY: want {rate: NUMBER, as_of: DATE, source: TEXT}"},
		{"huge price", "hourly: 1.98,", "hourly: 1e308,", "offers[0].on_demand.hourly: want at most 1e+09"},
		{"huge increment", "increment: 1s", "increment: 1000000h", "offers[0].on_demand.increment: want at most 31d"},
		{"many gpus", "gpus: 1", "gpus: 1000001", "offers[0].gpus: want 1 to 1024 GPUs"},
		{"zero gpus", "gpus: 1", "gpus: 0", "bad.yaml:7: offers[0].gpus: want 1 to 1024 GPUs per instance, got 0"},
		{"zero memory", "gpus: 1\n", "gpus: 1\n    gpu_memory_gb: 0\n", "bad.yaml:8: offers[0].gpu_memory_gb: want a positive size in GB (at most 10000) or unknown, got 0"},
		{"memory with its unit", "gpus: 1\n", "gpus: 1\n    gpu_memory_gb: 80GB\n", "bad.yaml:8: offers[0].gpu_memory_gb: want a number or unknown, got \"80GB\""},
		{"syntax", "gpus: 1", "gpus: [1", "bad.yaml:"},
		{"version", "version: 1", "version: 2", "bad.yaml:1: version: want version: 1"},
		{"tiers out of order", "egress_gb: 0.8\n", "egress_gb: 0.8\n    egress_month: {tiers: [{above_gb: 100, price: 0.7}, {above_gb: 50, price: 0.6}]}\n",
			"bad.yaml:18: offers[0].egress_month.tiers[1].above_gb: want a size above the previous tier's (100), got 50"},
		{"negative tier price", "egress_gb: 0.8\n", "egress_gb: 0.8\n    egress_month: {tiers: [{above_gb: 100, price: -1}]}\n",
			"bad.yaml:18: offers[0].egress_month.tiers[0].price: want a non-negative price"},
		{"schedule without a price", "egress_gb: 0.8\n", "egress_gb: unknown\n    egress_month: {free_gb: 100}\n",
			"bad.yaml:18: offers[0].egress_month: a monthly schedule needs egress_gb"},
		// Issue #37 item 7: USD: 2 halved every conversion.
		{"USD not 1", "USD: 1,", "USD: 2,", "bad.yaml:2: exchange_rates.USD: rate for USD: rates are units per US dollar, so USD is 1, got 2"},
		{"disk kind", "included_gb: 50,", "included_gb: 50, included_disk: kept,", "bad.yaml:16: offers[0].storage.included_disk: want ephemeral, persistent or unknown, got \"kept\""},
		{"supersedes itself", "    boot_fee: 0\n", "    boot_fee: 0\n    supersedes: [example-rtx4090]\n", "offers[0].supersedes[0]: want the id of an older reading"},
		{"interconnect word", "    boot_fee: 0\n", "    boot_fee: 0\n    interconnect: nvswitch\n    interconnect_source: s\n",
			"bad.yaml:16: offers[0].interconnect: want nvlink or pcie (or leave it out where no source says), got \"nvswitch\""},
		{"interconnect unsourced", "    boot_fee: 0\n", "    boot_fee: 0\n    interconnect: nvlink\n", "offers[0].interconnect_source: missing"},
		{"interconnect of one GPU", "    boot_fee: 0\n", "    boot_fee: 0\n    interconnect: nvlink\n    interconnect_source: s\n",
			"offers[0].interconnect: a 1-GPU instance has no GPUs to join"},
		{"frequency above 1", "notice: 30s}", "notice: 30s, interruption_frequency: {monthly_low: 0.2, monthly_high: 1.5, source: s, as_of: \"2026\"}}",
			"offers[0].spot.interruption_frequency.monthly_high: want a share from monthly_low to below 1"},
		{"frequency unsourced", "notice: 30s}", "notice: 30s, interruption_frequency: {monthly_low: 0.2, monthly_high: unknown}}",
			"offers[0].spot.interruption_frequency: needs its source and as_of"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := strings.Replace(good, tc.old, tc.new, 1)
			if src == good {
				t.Fatalf("test edit %q did not apply", tc.old)
			}
			_, err := Parse("bad.yaml", []byte(src))
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error\n  %v\nwant it to contain\n  %s", err, tc.want)
			}
		})
	}
}

func TestDuplicateIDs(t *testing.T) {
	offer := good[strings.Index(good, "  - id:"):]
	_, err := Parse("dup.yaml", []byte(good+offer))
	var es yamlfile.Errors
	if !errors.As(err, &es) || len(es) != 1 {
		t.Fatalf("want one error, got %v", err)
	}
	if es[0].Line != 20 || es[0].Path != "offers[1].id" || !strings.Contains(es[0].Msg, `duplicate id "example-rtx4090"`) {
		t.Errorf("got %+v", es[0])
	}
}

func TestDefaultCatalog(t *testing.T) {
	c, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	providers := map[string]bool{}
	for _, o := range c.Offers {
		providers[o.Provider] = true
		if o.Source == "" || o.AsOf == "" {
			t.Errorf("%s: missing source or as_of", o.ID)
		}
	}
	if err := CheckReadings(c.Offers); err != nil {
		t.Error(err)
	}
	if len(c.Offers) < 40 || len(providers) < 10 {
		t.Errorf("embedded catalog has %d offers from %d providers; want at least 40 from 10", len(c.Offers), len(providers))
	}
	// Every interconnect the generator lists landed on an offer (a
	// mistyped id would drop it silently), each with its page.
	joined := 0
	for _, o := range c.Offers {
		if o.Interconnect != "" {
			joined++
		}
	}
	if joined < 5 {
		t.Errorf("%d offers state their interconnect; the research gives 5", joined)
	}
	for _, want := range []string{"AutoDL", "AWS", "Google Cloud", "Azure", "Lambda", "RunPod", "Vast.ai", "CoreWeave"} {
		if !providers[want] {
			t.Errorf("provider %s missing from the embedded catalog", want)
		}
	}
}

func TestMerge(t *testing.T) {
	base, err := Parse("base.yaml", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	over, err := Parse("over.yaml", []byte(strings.Replace(strings.Replace(good, "hourly: 1.98", "hourly: 2.5", 1), "CNY: 7.1", "CNY: 7.2", 1)+
		strings.Replace(good[strings.Index(good, "  - id:"):], "example-rtx4090", "second", 1)))
	if err != nil {
		t.Fatal(err)
	}
	m := Merge(base, over)
	if len(m.Offers) != 2 || m.Offers[0].ID != "example-rtx4090" || m.Offers[1].ID != "second" {
		t.Fatalf("merged offers: %+v", m.Offers)
	}
	if v, _ := m.Offers[0].OnDemand.Hourly.Value(); v != 2.5 {
		t.Errorf("equal id did not replace: hourly %v", v)
	}
	if m.Rates.PerUSD["CNY"] != 7.2 || base.Rates.PerUSD["CNY"] != 7.1 {
		t.Errorf("rates: merged %v, base %v", m.Rates.PerUSD, base.Rates.PerUSD)
	}
	if v, _ := base.Offers[0].OnDemand.Hourly.Value(); v != 1.98 {
		t.Errorf("merge modified its base")
	}
}

func TestLoadUserFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "mine.yaml")
	if err := os.WriteFile(p, []byte(good), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load([]string{p})
	if err != nil {
		t.Fatal(err)
	}
	def, _ := Default()
	if len(c.Offers) != len(def.Offers)+1 {
		t.Errorf("loaded %d offers, want %d", len(c.Offers), len(def.Offers)+1)
	}
	if _, err := Load([]string{filepath.Join(dir, "missing.yaml")}); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("missing file: %v", err)
	}
}

func TestMatchGPU(t *testing.T) {
	for _, tc := range []struct {
		model, want string
		ok          bool
	}{
		{"RTX 4090", "RTX 4090", true},
		{"GeForce RTX 4090", "rtx4090", true}, // the words run together, as people type them
		{"RTX 4090D", "rtx4090", false},       // still whole words
		{"RTX 4090D", "rtx4090d", true},
		{"H100 NVL", "h100nvl", true},
		{"A100", "a10", false},
		{"H200", "h20", false},
		{"GeForce RTX 4090", "rtx 4090", true},
		{"RTX 4090D", "RTX 4090", false},
		{"GeForce RTX 4090 D", "RTX 4090D", true},
		{"H100 SXM", "H100", true},
		{"H100 (Mega)", "h100", true},
		{"A100 80GB SXM", "A100 80GB", true},
		{"A100 40GB", "A100 80GB", false},
		{"A800 / A100 80GB", "A100", true},
		{"H200", "H20", false},
		{"L40S", "", true},
	} {
		if got := MatchGPU(tc.model, tc.want); got != tc.ok {
			t.Errorf("MatchGPU(%q, %q) = %v, want %v", tc.model, tc.want, got, tc.ok)
		}
	}
}

// A GPU asked for with its memory finds the offers whose model name leaves
// the memory out, by the datasheet, where the datasheet leaves no doubt:
// an unqualified "H100" may be the 94 GB NVL, an "H200" of either form has
// 141 GB.
func TestWithGPUByMemory(t *testing.T) {
	var offers []Offer
	// check: the ids WithGPU finds among offers, in their order.
	check := func(offers []Offer, want, exp string) {
		t.Helper()
		got, err := WithGPU(offers, want)
		var ids []string
		for _, o := range got {
			ids = append(ids, o.ID)
		}
		if err != nil || strings.Join(ids, ", ") != exp {
			t.Errorf("WithGPU(%q) = %q, %v; want %q", want, ids, err, exp)
		}
	}
	for _, m := range []string{"H100 SXM", "H100 PCIe", "H100", "H100 NVL", "H200", "RTX 4090", "RTX 4090D", "A100 80GB SXM", "A100 40GB"} {
		offers = append(offers, Offer{ID: m, GPU: m})
	}
	for want, exp := range map[string]string{
		"H100 80GB":      "H100 SXM, H100 PCIe",
		"h100 80gb hbm3": "H100 SXM",
		"H100 94GB":      "H100 NVL",
		"H200 141GB":     "H200",
		"RTX 4090 24GB":  "RTX 4090",
		"A100 80GB":      "A100 80GB SXM",
		"H100":           "H100 SXM, H100 PCIe, H100, H100 NVL",
	} {
		check(offers, want, exp)
	}
	if _, err := WithGPU(offers, "H100 40GB"); err == nil || !strings.Contains(err.Error(), `no offer has GPU "H100 40GB"`) {
		t.Errorf("H100 40GB: %v", err)
	}

	// The memory an offer states picks among its model's rows: an "H100"
	// of 80 GB is the PCIe or the SXM card (not the NVL), so "H100 80GB"
	// finds it and "H100 80GB HBM3" does not (the PCIe card is HBM2e); a
	// "GH200" of 96 GB is the HBM3 one, which its driver calls "GH200
	// 480GB" after the CPU's memory; one of unknown memory is neither.
	stated := []Offer{
		{ID: "h100-80", GPU: "H100", GPUMemoryGB: Known(80)},
		{ID: "h100-94", GPU: "H100", GPUMemoryGB: Known(94)},
		{ID: "gh200-96", GPU: "GH200", GPUMemoryGB: Known(96)},
		{ID: "gh200-144", GPU: "GH200", GPUMemoryGB: Known(144)},
		{ID: "gh200", GPU: "GH200"},
		{ID: "h20-96", GPU: "H20", GPUMemoryGB: Known(96)},
		{ID: "p100-16", GPU: "P100", GPUMemoryGB: Known(16)},     // no datasheet row
		{ID: "4090-48", GPU: "RTX 4090", GPUMemoryGB: Known(48)}, // rebuilt: no row of 48 GB
		{ID: "4090-24", GPU: "RTX 4090", GPUMemoryGB: Known(24)},
	}
	for want, exp := range map[string]string{
		"H100 80GB":          "h100-80",
		"H100 94GB":          "h100-94",
		"H100 94GB HBM3":     "h100-94",
		"GH200 96GB":         "gh200-96",
		"GH200 480GB":        "gh200-96",
		"NVIDIA GH200 480GB": "gh200-96",
		"gh200 144gb hbm3e":  "gh200-144",
		"GH200":              "gh200-96, gh200-144, gh200",
		"H20 96GB":           "h20-96",
		"P100 16GB":          "p100-16",
		"RTX 4090 48GB":      "4090-48",
		"RTX 4090 24GB":      "4090-24",
	} {
		check(stated, want, exp)
	}
	// The stated size alone says no memory type.
	for _, want := range []string{"H100 80GB HBM3", "GH200 144GB HBM3", "H100 96GB", "P100 16GB HBM2", "P100 12GB", "RTX 4090 48GB GDDR6X"} {
		if got, err := WithGPU(stated, want); err == nil {
			t.Errorf("WithGPU(%q) = %d offers, want none", want, len(got))
		}
	}
}

func TestWithProvider(t *testing.T) {
	offers := []Offer{{ID: "a", Provider: "Alibaba Cloud (阿里云)"}, {ID: "r", Provider: "RunPod"}, {ID: "r2", Provider: "RunPod"}, {ID: "l", Provider: "Lambda"}}
	ids := func(os []Offer) string {
		var s []string
		for _, o := range os {
			s = append(s, o.ID)
		}
		return strings.Join(s, " ")
	}
	for _, tc := range []struct {
		want []string
		ids  string
	}{
		{nil, "a r r2 l"},
		{[]string{"runpod"}, "r r2"},
		{[]string{"alibaba cloud", "Lambda"}, "a l"},
		{[]string{"Alibaba Cloud (阿里云)"}, "a"},
		{[]string{"阿里云"}, "a"},
	} {
		got, err := WithProvider(offers, tc.want)
		if err != nil || ids(got) != tc.ids {
			t.Errorf("WithProvider(%q) = %q, %v; want %q", tc.want, ids(got), err, tc.ids)
		}
	}
	// One name that matches nothing is an error, even beside good ones.
	if _, err := WithProvider(offers, []string{"runpod", "vast"}); err == nil ||
		!strings.Contains(err.Error(), `no offer from "vast"; providers: Alibaba Cloud (阿里云), Lambda, RunPod`) {
		t.Errorf("unknown provider: %v", err)
	}
	if _, err := WithProvider(offers, []string{"cloud"}); err == nil {
		t.Error("a part of a name is not a name")
	}
	// Issue #37: the names users write.
	for _, w := range []string{"alibaba", "aliyun", "ALIBABA CLOUD", " lambdalabs", "Lambda Labs"} {
		if got, err := WithProvider(offers, []string{w}); err != nil || len(got) != 1 {
			t.Errorf("WithProvider(%q) = %q, %v", w, ids(got), err)
		}
	}
	for _, pair := range [][2]string{{"Vast.ai", "vast"}, {"Google Cloud", "gcp"}, {"Google Cloud", "google"}, {"AWS", "amazon"}, {"AWS", "aws"}, {"Vast.ai", "vast.ai"}} {
		if !MatchProvider(pair[0], pair[1]) {
			t.Errorf("%q does not name %s", pair[1], pair[0])
		}
	}
	// A near miss is named, by its English name.
	if _, err := WithProvider(offers, []string{"runpd"}); err == nil || !strings.Contains(err.Error(), `no offer from "runpd" (did you mean "RunPod"?); providers:`) {
		t.Errorf("near miss: %v", err)
	}
	if _, err := WithProvider(offers, []string{"alibaba clud"}); err == nil || !strings.Contains(err.Error(), `(did you mean "Alibaba Cloud"?)`) {
		t.Errorf("near miss of a name with a parenthesis: %v", err)
	}
	gpus := []Offer{{GPU: "RTX 4090"}, {GPU: "RTX 4090D"}, {GPU: "H100 SXM"}}
	if _, err := WithGPU(gpus, "RTX 4900"); err == nil || !strings.Contains(err.Error(), `no offer has GPU "RTX 4900" (did you mean "RTX 4090"?); the catalog has:`) {
		t.Errorf("near-miss GPU: %v", err)
	}
	if _, err := WithGPU(gpus, "TPU v9"); err == nil || strings.Contains(err.Error(), "did you mean") {
		t.Errorf("a GPU near nothing got a guess: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(good))
	f.Add(DefaultYAML()[:2000])
	f.Add([]byte("version: 1\noffers: []\n"))
	f.Add([]byte("version: 1\nexchange_rates: {USD: .nan}\n"))
	f.Add([]byte(strings.Replace(good, "egress_gb: 0.8\n", "egress_gb: 0.8\n    egress_month: {free_gb: 100, tiers: [{above_gb: 1024, price: 0.7}]}\n", 1)))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse("fuzz.yaml", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.yaml") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		// Whatever parses is valid: every known fee finite and non-negative.
		for _, o := range c.Offers {
			for _, fee := range []Fee{o.OnDemand.Hourly, o.BootFee, o.EgressGB, o.IPMonth, o.Storage.RunningGBMonth, o.Storage.StoppedGBMonth, o.Storage.IncludedGB} {
				if v, ok := fee.Value(); ok && (v < 0 || math.IsNaN(v) || math.IsInf(v, 0)) {
					t.Fatalf("accepted fee %v in offer %s", v, o.ID)
				}
			}
			// A month's egress costs something finite, never less for more.
			prev := 0.0
			for _, gb := range []float64{0, 50, 1000, 1e5, 1e7} {
				c := o.EgressMonth.MonthCost(gb, o.EgressGB.Or(0))
				if c < prev || math.IsNaN(c) || math.IsInf(c, 0) {
					t.Fatalf("offer %s: %v GB of egress costs %v (less, or not finite, after %v)", o.ID, gb, c, prev)
				}
				prev = c
			}
		}
	})
}

// A month's egress under AWS's schedule (internal/catalog/research/pricing.md:
// 100 GB free, 0.09 to 10 TB, 0.085 to 50 TB, 0.07 to 150 TB, 0.05 above)
// and Google Cloud's (0.12 to 1 TB, 0.11 to 10 TB, 0.08 above), by hand.
func TestEgressMonthCost(t *testing.T) {
	aws := &EgressMonth{FreeGB: 100, Tiers: []EgressTier{{10240, 0.085}, {51200, 0.07}, {153600, 0.05}}}
	gcp := &EgressMonth{Tiers: []EgressTier{{1024, 0.11}, {10240, 0.08}}}
	for _, c := range []struct {
		name  string
		m     *EgressMonth
		gb    float64
		first float64
		want  float64
	}{
		{"no schedule", nil, 2000, 0.09, 180},
		{"within the free allowance", aws, 80, 0.09, 0},
		{"past the allowance", aws, 2000, 0.09, 1900 * 0.09},
		{"into the second tier", aws, 20480, 0.09, 10140*0.09 + 10240*0.085},
		{"every tier", aws, 204800, 0.09, 10140*0.09 + 40960*0.085 + 102400*0.07 + 51200*0.05},
		{"gcp second tier", gcp, 2000, 0.12, 1024*0.12 + 976*0.11},
		{"gcp third tier", gcp, 20000, 0.12, 1024*0.12 + 9216*0.11 + 9760*0.08},
		{"nothing", aws, 0, 0.09, 0},
	} {
		if got := c.m.MonthCost(c.gb, c.first); math.Abs(got-c.want) > 1e-9*math.Max(1, c.want) {
			t.Errorf("%s: %v GB cost %v, want %v", c.name, c.gb, got, c.want)
		}
	}
}

func TestByIDAndOrderedGPU(t *testing.T) {
	offers := []Offer{
		{ID: "aws-p5.4xlarge", GPU: "H100", GPUMemoryGB: Known(80)},
		{ID: "lambda-gpu_1x_h100_sxm5", GPU: "H100 SXM", GPUMemoryGB: Known(80)},
		{ID: "a100", GPU: "A100 40GB", GPUMemoryGB: Known(40)},
		{ID: "mine", GPU: "H100"},
	}
	for id, want := range map[string]string{
		"aws-p5.4xlarge":          "H100 80GB",
		"LAMBDA-gpu_1x_h100_sxm5": "H100 SXM 80GB",
		" a100 ":                  "A100 40GB", // its name says the size already
		"mine":                    "H100",      // no memory stated: the model alone
	} {
		o, err := ByID(offers, id)
		if err != nil {
			t.Errorf("ByID(%q): %v", id, err)
		} else if got := o.OrderedGPU(); got != want {
			t.Errorf("ByID(%q).OrderedGPU() = %q, want %q", id, got, want)
		}
	}
	if _, err := ByID(offers, "lambda-gpu_1x_h100_sxm"); err == nil ||
		err.Error() != `no offer has id "lambda-gpu_1x_h100_sxm" (did you mean "lambda-gpu_1x_h100_sxm5"?); gpurent catalog ls lists them` {
		t.Errorf("near miss: %v", err)
	}
}

// The same file gives the same errors in the same order every time: the
// missing fields are named in the order the message lists them.
func TestMissingFieldsInAFixedOrder(t *testing.T) {
	data := []byte("version: 1\noffers:\n  - id: mine\n    gpus: 1\n    on_demand: {hourly: 1.5}\n")
	want := ""
	for i := range 50 {
		_, err := Parse("c.yaml", data)
		if err == nil {
			t.Fatal("an offer without provider, gpu, currency, source and as_of parsed")
		}
		if i == 0 {
			want = err.Error()
			for _, f := range []string{"provider", "gpu", "currency", "source", "as_of"} {
				if !strings.Contains(want, "offers[0]."+f+": missing") {
					t.Fatalf("%s not named: %v", f, err)
				}
			}
			if a, b := strings.Index(want, ".provider:"), strings.Index(want, ".as_of:"); a > b {
				t.Fatalf("as_of named before provider: %v", err)
			}
		} else if err.Error() != want {
			t.Fatalf("parse %d said\n%v\nparse 1 said\n%v", i+1, err, want)
		}
	}
}

// Issue #37 item 5: two readings of one offer (RunPod Secure H100 SXM at
// 3.49, then 3.99) both ranked, the older and cheaper first. The newest
// reading is the offer; the older are history.
func TestCurrentDropsSupersededReadings(t *testing.T) {
	offers := []Offer{{ID: "a-2026-09"}, {ID: "a-2026-10", Supersedes: []string{"a-2026-09"}}, {ID: "a-2026-11", Supersedes: []string{"a-2026-10"}}, {ID: "b"}}
	cur, by := Current(offers)
	if len(cur) != 2 || cur[0].ID != "a-2026-11" || cur[1].ID != "b" {
		t.Fatalf("current %v", cur)
	}
	if by["a-2026-09"] != "a-2026-11" || by["a-2026-10"] != "a-2026-11" {
		t.Errorf("superseded by %v", by)
	}
	c, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	cur, _ = Current(c.Offers)
	for _, o := range cur {
		if o.ID == "runpod-secure-h100-sxm" || o.ID == "nebius-h100-2026-09" {
			t.Errorf("the embedded catalog's older reading %s is current", o.ID)
		}
	}
}

// An open bucket (">20%") is judged at its lower end and said to be a
// least rate; a closed one at its upper end: 10-15% a month is
// −ln(0.85)/30 a day.
func TestFrequencyPerDay(t *testing.T) {
	f := Frequency{Low: 0.10, High: Known(0.15)}
	if d, least := f.PerDay(); least || math.Abs(d+math.Log(0.85)/30) > 1e-12 {
		t.Errorf("10-15%%: %v %v", d, least)
	}
	f = Frequency{Low: 0.20}
	if d, least := f.PerDay(); !least || math.Abs(d+math.Log(0.8)/30) > 1e-12 {
		t.Errorf(">20%%: %v %v", d, least)
	}
	var d Duration
	if err := yaml.Unmarshal([]byte("never"), &d); err != nil || !d.IsNever() || d.String() != "never" {
		t.Errorf("never: %v %v", d, err)
	}
}

// Issue #37: --gpu 4090 should hear of the 4090D, which it does not match.
func TestVariants(t *testing.T) {
	offers := []Offer{{ID: "a", GPU: "RTX 4090"}, {ID: "d", GPU: "RTX 4090D"}, {ID: "h", GPU: "H100 SXM"}, {ID: "x", GPU: "RTX 40900"}}
	for want, ids := range map[string]string{"4090": "d", "RTX 4090": "d", "4090D": "", "H100": "", "": ""} {
		var got []string
		for _, o := range Variants(offers, want) {
			got = append(got, o.ID)
		}
		if strings.Join(got, " ") != ids {
			t.Errorf("Variants(%q) = %q, want %q", want, got, ids)
		}
	}
}

// What supersedes may say, found by a careless catalog: a cycle (every
// reading left out), another provider's offer, a newer reading, an id no
// offer has.
func TestCheckReadings(t *testing.T) {
	o := func(id, provider, asOf string, sup ...string) Offer {
		return Offer{ID: id, Provider: provider, GPU: "H100", GPUs: 1, AsOf: asOf, Supersedes: sup}
	}
	for _, tc := range []struct {
		offers []Offer
		want   string
	}{
		{[]Offer{o("a", "P", "2026-10-01", "b"), o("b", "P", "2026-10-01", "a")}, "in a cycle"},
		{[]Offer{o("a", "P", "2026-10-01", "b"), o("b", "Q", "2026-09-01")}, "a reading of another offer"},
		{[]Offer{o("a", "P", "2026-10-01", "b"), o("b", "P", "2026-11-01")}, "a newer reading"},
		{[]Offer{o("a", "P", "2026-10-01", "zz")}, "which no offer is"},
		{[]Offer{o("a", "P", "2026-10-01", "b"), o("b", "P", "undated")}, ""},
	} {
		err := CheckReadings(tc.offers)
		if (tc.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.offers, err, tc.want)
		}
	}
}
