// Package units parses the durations users write in catalogs, profiles and
// flags. Go's time.ParseDuration stops at hours, but rental terms are spoken
// in days ("released after 15 days stopped", "a 30-day span"), so a leading
// day count is accepted too: "15d", "1d12h", "90s".
package units

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
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
		return 0, fmt.Errorf("empty duration")
	}
	if strings.HasPrefix(in, "-") {
		return 0, fmt.Errorf("negative duration %q", s)
	}
	var days time.Duration
	rest := in
	if i := strings.IndexByte(in, 'd'); i >= 0 {
		n, err := strconv.ParseFloat(in[:i], 64)
		if err != nil || math.IsNaN(n) || math.IsInf(n, 0) || n < 0 || strings.ContainsAny(in[:i], "eE+_xXpP") {
			return 0, fmt.Errorf("invalid duration %q: want Go syntax (90s, 30m, 2h) or days (15d)", s)
		}
		if n > float64(math.MaxInt64)/float64(Day) {
			return 0, fmt.Errorf("duration %q is too long", s)
		}
		days = time.Duration(n * float64(Day))
		rest = in[i+1:]
		if rest == "" {
			return days, nil
		}
	}
	d, err := time.ParseDuration(rest)
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q: want Go syntax (90s, 30m, 2h) or days (15d)", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("negative duration %q", s)
	}
	if days > math.MaxInt64-d {
		return 0, fmt.Errorf("duration %q is too long", s)
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
