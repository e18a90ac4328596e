package check

import "testing"

func TestVerdict(t *testing.T) {
	for _, c := range []struct {
		statuses []string
		want     string
	}{
		{nil, Pass},
		{[]string{Skip, Skip}, Pass},
		{[]string{Pass, Skip, Warn}, Warn},
		{[]string{Warn, Fail, Pass}, Fail},
		{[]string{Fail, Warn}, Fail},
	} {
		var cs []Check
		for _, s := range c.statuses {
			cs = append(cs, Check{Status: s})
		}
		if got := Verdict(cs); got != c.want {
			t.Errorf("Verdict(%v) = %s, want %s", c.statuses, got, c.want)
		}
	}
}
