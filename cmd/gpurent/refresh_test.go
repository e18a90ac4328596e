package main

import (
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/catalog/refresh/feedtest"
)

// TestCatalogRefresh: refresh against recorded AWS, Azure and Vast.ai
// answers writes an overlay that catalog check passes; quote then prices
// with the refreshed price (Azure's, whose prices were all read: dated
// today), and says so; --offline leaves it
// out; catalog diff shows the change; a source answering 500 leaves the
// others refreshed and is named; a zero price is rejected with the reason.
func TestCatalogRefresh(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Setenv("VAST_API_KEY", "vastkey")
	var args []string
	for _, e := range feedtest.Serve(t, "../../internal/catalog/refresh/testdata", "vast") {
		args = append(args, "--endpoint", e)
	}
	code, _, stderr := gpurent(t, append([]string{"catalog", "refresh"}, args...)...)
	if code != 0 || !strings.Contains(stderr, "aws-p5.48xlarge on_demand: 55.04 -> 51.2") || !strings.Contains(stderr, "rejected: aws-g5.xlarge: on_demand: a price of 0") ||
		!strings.Contains(stderr, "failed: vast: ") || !strings.Contains(stderr, "HTTP 500") {
		t.Fatalf("refresh: exit %d:\n%s", code, stderr)
	}
	overlay := filepath.Join(cache, "gpurent", "prices.yaml")
	if code, out, stderr := gpurent(t, "catalog", "check", overlay); code != 0 {
		t.Fatalf("catalog check: exit %d\n%s%s", code, out, stderr)
	}
	today := time.Now().UTC().Format("2006-01-02")
	price := func(args ...string) (float64, string, string) {
		code, out, stderr := gpurent(t, append([]string{"quote", "--gpu", "H100", "--gpus", "8", "--hours", "10", "--provider", "azure", "-o", "json"}, args...)...)
		var q struct {
			Bills []struct {
				Offer, Plan string
				AsOf        string `json:"as_of"`
				Items       []struct{ Amount float64 }
			} `json:"bills"`
			Notes []string `json:"notes"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &q) != nil {
			t.Fatalf("quote: exit %d\n%s", code, stderr)
		}
		for _, b := range q.Bills {
			if b.Offer == "azure-ND96isr_H100_v5" && b.Plan == "on_demand" {
				return b.Items[0].Amount, b.AsOf, strings.Join(q.Notes, "\n")
			}
		}
		t.Fatalf("no ND96isr_H100_v5 bill: %s", out)
		return 0, "", ""
	}
	if compute, asOf, notes := price(); compute != 895 || asOf != today || !strings.Contains(notes, "come from gpurent catalog refresh") {
		t.Fatalf("refreshed: compute %v, as_of %q, notes %s", compute, asOf, notes)
	}
	if compute, _, _ := price("--offline"); math.Abs(compute-983.2) > 1e-6 {
		t.Fatalf("--offline: compute %v", compute)
	}
	if code, out, _ := gpurent(t, "catalog", "diff"); code != 0 || !strings.Contains(out, "azure-ND96isr_H100_v5: 98.32 (2026-09-16 / 2026-10-06) -> 89.5 ("+today+")") || !strings.Contains(out, "aws-p5.48xlarge: 55.04") {
		t.Fatalf("diff: exit %d\n%s", code, out)
	}
	// Vast.ai's hosts' disk and bandwidth rates, which the embedded
	// catalog does not know, come with its prices.
	var vast []string
	for _, e := range feedtest.Serve(t, "../../internal/catalog/refresh/testdata") {
		vast = append(vast, "--endpoint", e)
	}
	if code, _, stderr := gpurent(t, append([]string{"catalog", "refresh", "--only", "vast"}, vast...)...); code != 0 ||
		!strings.Contains(stderr, "vast-h100-sxm-median-"+today+" storage_gb_month: unknown -> 0.15") || !strings.Contains(stderr, "vast-h100-sxm-median-"+today+" egress_gb: unknown -> 0.005") {
		t.Fatalf("vast: exit %d\n%s", code, stderr)
	}
	// Every source failing: exit 1, and the overlay stays as it was.
	var failing []string
	for _, e := range feedtest.Serve(t, "../../internal/catalog/refresh/testdata", "aws", "aws-spot", "azure", "vast") {
		failing = append(failing, "--endpoint", e)
	}
	if code, _, stderr := gpurent(t, append([]string{"catalog", "refresh"}, failing...)...); code != 1 || !strings.Contains(stderr, "every source failed") {
		t.Fatalf("all failing: exit %d\n%s", code, stderr)
	}
	if compute, _, _ := price(); compute != 895 {
		t.Fatalf("after a failed refresh: compute %v", compute)
	}
}
