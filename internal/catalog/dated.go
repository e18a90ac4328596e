package catalog

import (
	"regexp"
	"strconv"
	"time"
)

// datePattern finds the dates an as_of text states: 2026-09-20, a second
// day after a slash (2026-09-20/25), a month (2026-10) or a quarter
// (2025-Q4). The research notes write as_of as prose ("OD feed published
// 2026-08-06; spot snapshot 2026-08-11"), so the dates are picked out of it.
var datePattern = regexp.MustCompile(`(?:^|[^0-9])([12][0-9]{3})-(Q[1-4]|[01][0-9])(?:-([0-3][0-9])(?:/([0-3][0-9]))?)?(?:$|[^0-9])`)

// PriceDate is the newest date the offer's as_of states, and false when it
// states none ("not stated on the page", "catalog undated"). A month or a
// quarter stands for its last day, and "2026-09-20/25" for the 25th, so an
// age computed from it is the least the prices can be: a quote that calls
// a price old is never wrong about it.
func (o *Offer) PriceDate() (time.Time, bool) {
	return statedDate(o.AsOf)
}

// boundPattern finds a date given as a bound ("undated (older than
// 2026-09 list)"): it says when the prices were at the latest, not when
// they were read, so it dates nothing.
var boundPattern = regexp.MustCompile(`(?i)(older than|earlier than|before)\s+[0-9Q/-]+`)

func statedDate(s string) (time.Time, bool) {
	s = boundPattern.ReplaceAllString(s, "")
	var newest time.Time
	for _, m := range datePattern.FindAllStringSubmatch(s, -1) {
		d, ok := parseStated(m[1], m[2], m[3], m[4])
		if ok && d.After(newest) {
			newest = d
		}
	}
	return newest, !newest.IsZero()
}

// parseStated turns one match into the last day it can mean.
func parseStated(year, monthOrQuarter, day, day2 string) (time.Time, bool) {
	y, _ := strconv.Atoi(year)
	if monthOrQuarter[0] == 'Q' {
		q := int(monthOrQuarter[1] - '0')
		return time.Date(y, time.Month(3*q+1), 0, 0, 0, 0, 0, time.UTC), true
	}
	m, _ := strconv.Atoi(monthOrQuarter)
	if m < 1 || m > 12 {
		return time.Time{}, false
	}
	if day == "" {
		return time.Date(y, time.Month(m+1), 0, 0, 0, 0, 0, time.UTC), true
	}
	if day2 != "" {
		day = day2
	}
	d, _ := strconv.Atoi(day)
	t := time.Date(y, time.Month(m), d, 0, 0, 0, 0, time.UTC)
	if t.Day() != d || t.Month() != time.Month(m) {
		return time.Time{}, false // 2026-02-30 is no date
	}
	return t, true
}
