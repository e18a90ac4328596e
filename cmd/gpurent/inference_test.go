package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// plan --inference reads its flags as people write them and refuses, by
// the flag's name, what it cannot price: a utilisation outside (0, 1] and
// input tokens with an output price alone.
func TestPlanInferenceFlags(t *testing.T) {
	base := []string{"plan", "--inference", "--gpu", "H100", "--tokens-per-day", "5e7"}
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"lowercase model", []string{"--model", "70b"}, 0, ""},
		{"model with spaces", []string{"--model", " 70B "}, 0, ""},
		{"utilisation as a percent", []string{"--model", "70B", "--utilisation", "60%"}, 0, ""},
		{"utilisation as a fraction", []string{"--model", "70B", "--utilisation", "0.6"}, 0, ""},
		{"zero utilisation", []string{"--model", "70B", "--utilisation", "0"}, 2, "--utilisation: want a fraction from 0.01 to 1 such as 0.6, or a percent from 1% to 100% such as 60%, got \"0\""},
		{"utilisation above 100%", []string{"--model", "70B", "--utilisation", "150%"}, 2, "--utilisation: want a fraction from 0.01 to 1"},
		{"utilisation not a number", []string{"--model", "70B", "--utilisation", "most"}, 2, "--utilisation: want a fraction from 0.01 to 1"},
		{"input tokens with an output price alone", []string{"--model", "70B", "--input-tokens-per-day", "1e8", "--api-price", "0.5"}, 2, "--api-input-price: needed to price --input-tokens-per-day"},
		{"output price alone without input tokens", []string{"--model", "70B", "--api-price", "0.5"}, 0, ""},
		{"input and output prices", []string{"--model", "70B", "--input-tokens-per-day", "1e8", "--api-price", "0.5", "--api-input-price", "0.1"}, 0, ""},
		{"input price without output price", []string{"--model", "70B", "--api-input-price", "0.1"}, 2, "--api-input-price: needs --api-price"},
		{"negative input tokens", []string{"--model", "70B", "--input-tokens-per-day", "-1"}, 2, "--input-tokens-per-day: want 0 or more"},
		{"unknown model", []string{"--model", "13B"}, 2, `--model: want 8B or 70B, got "13B"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := gpurent(t, append(base, tc.args...)...)
			if code != tc.code || !strings.Contains(stderr, tc.stderr) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, stderr, tc.code, tc.stderr)
			}
		})
	}
	// Inference flags are refused without --inference, as the others are.
	if code, _, stderr := gpurent(t, "plan", "--hours", "1", "--utilisation", "0.5"); code != 2 || !strings.Contains(stderr, "--utilisation: not used without --inference") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

// The JSON lists every sourced API of the model with its prices, and each
// offer says how many of them renting beats; the text prints them in a
// table under the offers and names the utilisation in the header.
func TestPlanInferenceAPIsOutput(t *testing.T) {
	code, out, errOut := gpurent(t, "plan", "--inference", "--model", "70b", "--gpu", "H100", "--tokens-per-day", "5e7",
		"--input-tokens-per-day", "1e8", "--utilisation", "60%", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var res struct {
		Model             string   `json:"model"`
		InputTokensPerDay *float64 `json:"input_tokens_per_day"`
		Utilisation       float64  `json:"utilisation"`
		API               string   `json:"api"`
		APIPerM           *float64 `json:"api_price_per_million"`
		APIs              []struct {
			Provider   string   `json:"provider"`
			InputPerM  *float64 `json:"input_per_million"`
			OutputPerM *float64 `json:"output_per_million"`
			PerDay     *float64 `json:"per_day"`
			Source     string   `json:"source"`
			AsOf       string   `json:"as_of"`
		} `json:"apis"`
		Offers []struct {
			CheaperThanAPIs *int `json:"cheaper_than_apis"`
		} `json:"offers"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if res.Model != "70B" || res.InputTokensPerDay == nil || *res.InputTokensPerDay != 1e8 || res.Utilisation != 0.6 || res.API == "" || res.APIPerM == nil {
		t.Errorf("top level: %s", out)
	}
	if len(res.APIs) != 4 {
		t.Fatalf("apis: %s", out)
	}
	for _, a := range res.APIs {
		if a.Provider == "" || a.InputPerM == nil || a.OutputPerM == nil || a.PerDay == nil || a.Source == "" || a.AsOf == "" {
			t.Errorf("api %+v", a)
		}
	}
	if len(res.Offers) == 0 || res.Offers[0].CheaperThanAPIs == nil {
		t.Errorf("offers: %s", out)
	}

	code, out, errOut = gpurent(t, "plan", "--inference", "--model", "70B", "--gpu", "H100", "--tokens-per-day", "5e7", "--utilisation", "60%")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"RENT/1M (AT 60% LOAD)", "BEATS APIS", "\nAPI ", "DeepInfra (Llama 3.3 70B Turbo)", "AWS Bedrock (Llama 3.3 70B, us-east)", "IN/1M", "OUT/1M"} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
}
