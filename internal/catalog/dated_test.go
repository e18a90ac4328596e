package catalog

import (
	"strings"
	"testing"
	"time"
)

// TestPriceDate reads the as_of texts the embedded catalog holds: the
// newest date stated, as the last day it can mean, or none.
func TestPriceDate(t *testing.T) {
	for _, c := range []struct{ asOf, want string }{
		{"2026-09-25", "2026-09-25"},
		{"c. 2026-10", "2026-10-31"},
		{"OD feed published 2026-08-06; spot snapshot 2026-08-11", "2026-08-11"},
		{"catalog undated; same per-GPU prices on lambda.ai 2026-09-20/25", "2026-09-25"},
		{"2026-09-20 (H100/H200/B200 on-demand re-read 2026-10-06)", "2026-10-06"},
		{"2026-09-16 / 2026-10-06", "2026-10-06"},
		{"2025-10-29 (doc revision)", "2025-10-29"},
		{"2025-Q4 (per code comment)", "2025-12-31"},
		{"2024-02", "2024-02-29"},
		{"not stated on the page", ""},
		{"catalog undated (older than 2026-09 list)", ""}, // a bound, not a date (issue #37)
		{"page, undated", ""},
		{"2026-13-01", ""},
		{"2026-02-30", ""},
		{"12026-09-01", ""},
		{"", ""},
	} {
		o := Offer{AsOf: c.asOf}
		d, ok := o.PriceDate()
		got := ""
		if ok {
			got = d.Format(time.DateOnly)
		}
		if got != c.want {
			t.Errorf("PriceDate(%q) = %q, want %q", c.asOf, got, c.want)
		}
	}
}

// TestEmbeddedPriceDates: every embedded offer's as_of either states a date
// that is no later than the catalog's newest research (none in the future)
// or says plainly that the source gives none.
func TestEmbeddedPriceDates(t *testing.T) {
	c, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	dated := 0
	for _, o := range c.Offers {
		d, ok := o.PriceDate()
		if !ok {
			continue
		}
		dated++
		if d.Before(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)) || d.After(time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)) {
			t.Errorf("%s: as_of %q reads as %s", o.ID, o.AsOf, d.Format(time.DateOnly))
		}
	}
	if dated < len(c.Offers)*3/4 {
		t.Errorf("only %d of %d offers read as dated", dated, len(c.Offers))
	}
}

// Any as_of text is read without a panic, and a date found in it is a real
// day of a year the text states.
func FuzzStatedDate(f *testing.F) {
	for _, s := range []string{"2026-09-20", "c. 2026-10", "2025-Q4", "2026-09-20/25", "OD feed published 2026-08-06; spot snapshot 2026-08-11",
		"2026-02-30", "2026-13", "9999-Q4", "catalog undated", "2026-00-10"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, ok := statedDate(s)
		if !ok {
			return
		}
		if y := d.Format("2006"); !strings.Contains(s, y+"-") {
			t.Fatalf("%q gave %s, a year it does not state", s, d.Format(time.DateOnly))
		}
		if d.Hour() != 0 || d.Location() != time.UTC {
			t.Fatalf("%q gave %v, not a UTC day", s, d)
		}
	})
}

// Issue #37 item 5: "catalog undated (older than 2026-09 list)" was read
// as dated 2026-09-30, newer than the list it predates.
func TestBoundIsNoDate(t *testing.T) {
	for _, s := range []string{"catalog undated (older than 2026-09 list)", "undated, before 2026-10-01", "earlier than 2025-Q4"} {
		if d, ok := (&Offer{AsOf: s}).PriceDate(); ok {
			t.Errorf("%q dated %v", s, d)
		}
	}
	if d, ok := (&Offer{AsOf: "read 2026-10-06 (older than 2026-11 list)"}).PriceDate(); !ok || d.Format("2006-01-02") != "2026-10-06" {
		t.Errorf("the date read is lost: %v %v", d, ok)
	}
}
