// Package units parses the durations users write in catalogs, profiles and
// flags. Go's time.ParseDuration stops at hours, but rental terms are spoken
// in days ("released after 15 days stopped", "a 30-day span"), so a leading
// day count is accepted too: "15d", "1d12h", "90s".
package units

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/gpurent/gpurent/internal/i18n"
)

// Day is 24 hours. Rental platforms count calendar days of 24 hours; no
// daylight-saving day exists in their billing.
const Day = 24 * time.Hour

// ParseDuration parses a Go duration with an optional leading day count
// ("15d", "1.5d", "2d6h30m"). It rejects negative and non-finite values
// and names the offending text in its error.
func ParseDuration(s string) (time.Duration, error) {
	in := strings.TrimSpace(s)
	if in == "" {
		return 0, i18n.Errorf("empty duration")
	}
	if strings.HasPrefix(in, "-") {
		return 0, i18n.Errorf("negative duration %q", s)
	}
	var days time.Duration
	rest := in
	if i := strings.IndexByte(in, 'd'); i >= 0 {
		n, err := strconv.ParseFloat(in[:i], 64)
		if err != nil || math.IsNaN(n) || math.IsInf(n, 0) || n < 0 || strings.ContainsAny(in[:i], "eE+_xXpP") {
			return 0, i18n.Errorf("invalid duration %q: want Go syntax (90s, 30m, 2h) or days (15d)", s)
		}
		if n > float64(math.MaxInt64)/float64(Day) {
			return 0, i18n.Errorf("duration %q is too long", s)
		}
		days = time.Duration(n * float64(Day))
		rest = in[i+1:]
		if rest == "" {
			return days, nil
		}
	}
	d, err := time.ParseDuration(rest)
	if err != nil {
		return 0, i18n.Errorf("invalid duration %q: want Go syntax (90s, 30m, 2h) or days (15d)", s)
	}
	if d < 0 {
		return 0, i18n.Errorf("negative duration %q", s)
	}
	if days > math.MaxInt64-d {
		return 0, i18n.Errorf("duration %q is too long", s)
	}
	return days + d, nil
}

// FormatDuration renders d the way users write it: whole days as "15d",
// anything else in Go syntax without trailing zero units ("30m", "1h30m").
func FormatDuration(d time.Duration) string {
	if d > 0 && d%Day == 0 {
		return strconv.FormatInt(int64(d/Day), 10) + "d"
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// ParseRate reads a transfer rate in bytes a second: "50MB/s", "50MiB/s",
// "400Mbit/s" or "400Mbps" (bits, as links are sold), "2GB" (the "/s" is
// optional). Decimal units are powers of 1000, binary ones of 1024.
func ParseRate(s string) (float64, error) {
	t := strings.TrimSuffix(strings.TrimSpace(s), "/s")
	bits := false
	switch {
	case strings.HasSuffix(t, "bps"):
		t, bits = strings.TrimSuffix(t, "bps"), true
	case strings.HasSuffix(t, "bit"):
		t, bits = strings.TrimSuffix(t, "bit"), true
	case strings.HasSuffix(t, "B"):
		t = strings.TrimSuffix(t, "B")
	}
	mult := 1.0
	for _, u := range []struct {
		suffix string
		m      float64
	}{{"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30}, {"K", 1e3}, {"k", 1e3}, {"M", 1e6}, {"G", 1e9}} {
		if v, ok := strings.CutSuffix(t, u.suffix); ok {
			t, mult = v, u.m
			break
		}
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
	if err != nil || v <= 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, i18n.Errorf("rate %q: want a positive number with a unit, such as 50MB/s, 50MiB/s or 400Mbit/s", s)
	}
	if bits {
		mult /= 8
	}
	// A huge mantissa times its unit overflows to +Inf, and a rate under a
	// byte a second would stall an upload for good: neither is a cap.
	if r := v * mult; r >= 1 && !math.IsInf(r, 0) {
		return r, nil
	}
	return 0, i18n.Errorf("rate %q: want from 1 B/s to a finite rate, such as 50MB/s, 50MiB/s or 400Mbit/s", s)
}

// ParseSize reads an amount of memory or disk in bytes: "120GB" or "120G"
// (powers of 1000, as sizes are sold), "120GiB" (powers of 1024), "2TB",
// "512MB"; a bare number counts in bare units, such as 1e9 for GB.
func ParseSize(s string, bare float64) (float64, error) {
	t := strings.TrimSuffix(strings.TrimSpace(s), "B")
	mult := bare
	for _, u := range []struct {
		suffix string
		m      float64
	}{{"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30}, {"Ti", 1 << 40}, {"K", 1e3}, {"k", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12}} {
		if v, ok := strings.CutSuffix(t, u.suffix); ok {
			t, mult = strings.TrimSpace(v), u.m
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if r := v * mult; err == nil && v > 0 && r >= 1 && !math.IsInf(r, 0) {
		return r, nil
	}
	return 0, i18n.Errorf("size %q: want a positive amount such as 120GB, 120GiB or 2TB", s)
}
