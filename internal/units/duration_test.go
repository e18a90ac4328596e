package units

import (
	"math"
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
	}{
		{"90s", 90 * time.Second},
		{"30m", 30 * time.Minute},
		{"15d", 15 * Day},
		{"1.5d", 36 * time.Hour},
		{"2d6h30m", 54*time.Hour + 30*time.Minute},
		{"0s", 0},
		{"0d", 0},
		{" 1h ", time.Hour},
	} {
		got, err := ParseDuration(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "15", "-1h", "1x", "d", "1dd", "NaNd", "Infd", "1e3d", "-1d", "1d-1h", "3w", "1e300d"} {
		if d, err := ParseDuration(bad); err == nil {
			t.Errorf("ParseDuration(%q) = %v, want an error", bad, d)
		}
	}
}

func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		15 * Day:         "15d",
		30 * time.Minute: "30m",
		90 * time.Minute: "1h30m",
		2 * time.Hour:    "2h",
		90 * time.Second: "1m30s",
		0:                "0s",
	} {
		if got := FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"15d", "1h30m", "90s", "1.5d", "2d6h", "-1h", "d", "1e3d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration(s)
		if err != nil {
			return
		}
		if d < 0 {
			t.Fatalf("ParseDuration(%q) = %v: negative", s, d)
		}
		// What FormatDuration prints must parse back to the same value.
		back, err := ParseDuration(FormatDuration(d))
		if err != nil || back != d {
			t.Fatalf("round trip of %q: %v -> %q -> %v, %v", s, d, FormatDuration(d), back, err)
		}
	})
}

func TestParseRate(t *testing.T) {
	for in, want := range map[string]float64{
		"50MB/s": 50e6, "50MiB/s": 50 << 20, "400Mbit/s": 50e6, "400Mbps": 50e6, "2GB": 2e9, "1.5GiB/s": 1.5 * (1 << 30),
		"800kB/s": 800e3, "1000": 1000, "50 MB/s": 50e6,
	} {
		if got, err := ParseRate(in); err != nil || got != want {
			t.Errorf("%s: %v %v, want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "fast", "-5MB/s", "0", "MB/s", "5XB/s", "Inf", "1e308GB/s", "0.5B/s", "4bit/s"} {
		if _, err := ParseRate(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// Any text is read without a panic, and an accepted rate is a usable cap:
// finite and at least a byte a second.
func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"50MB/s", "50MiB/s", "400Mbit/s", "400Mbps", "2GB", "1e308GB/s", "0x1p-1074B", "NaN", " 1 /s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRate(s)
		if err == nil && (r < 1 || math.IsInf(r, 0) || math.IsNaN(r)) {
			t.Fatalf("%q gave %v", s, r)
		}
	})
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]float64{
		"120GB": 120e9, "120G": 120e9, "120GiB": 120 << 30, "120": 120e9, "1.5TB": 1.5e12, "512MiB": 512 << 20, "64 GB": 64e9, " 2Ti ": 2 << 40,
	} {
		if got, err := ParseSize(in, 1e9); err != nil || got != want {
			t.Errorf("%s: %v %v, want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "lots", "-5GB", "0", "GB", "5XB", "Inf", "NaN", "1e308TB", "0x1p-1074B"} {
		if _, err := ParseSize(bad, 1e9); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
