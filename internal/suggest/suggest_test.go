package suggest

import "testing"

func TestEditDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		d    int
	}{{"keep", "keep", 0}, {"kep", "keep", 1}, {"kepe", "keep", 1}, {"", "abc", 3}, {"span_day", "span_days", 1}, {"abc", "xyz", 3}} {
		if got := editDistance(c.a, c.b); got != c.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", c.a, c.b, got, c.d)
		}
	}
}

func TestClosest(t *testing.T) {
	names := []string{"hours", "days", "disk", "egress", "gpus", "gpu", "starts", "keep"}
	for typed, want := range map[string]string{
		"hourz": "hours", "dayz": "days", "egres": "egress", "strats": "starts", "KEP": "keep",
		"gpux":    "", // "gpus" and "gpu" are both one edit away: no guess
		"x":       "", // too short to guess
		"storage": "", // near nothing
	} {
		if got := Closest(typed, names); got != want {
			t.Errorf("Closest(%q) = %q, want %q", typed, got, want)
		}
	}
}
