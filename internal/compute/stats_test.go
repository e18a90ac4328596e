package compute

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestSummarize(t *testing.T) {
	// 1..9: median 5, quartiles 3 and 7, spread (7-3)/5 = 0.8.
	s := Summarize([]float64{9, 1, 8, 2, 7, 3, 6, 4, 5})
	if s.N != 9 || s.Median != 5 || s.Min != 1 || s.Max != 9 || math.Abs(s.Spread-0.8) > 1e-12 {
		t.Errorf("%+v", s)
	}
	// Population standard deviation of 1..9 is √(60/9) = 2.582; over mean 5.
	if math.Abs(s.CV-math.Sqrt(60.0/9)/5) > 1e-12 {
		t.Errorf("cv %v", s.CV)
	}
	if (Summarize(nil) != Summary{}) {
		t.Error("empty")
	}
}

// synthetic series: a 2 ms kernel with 1% jitter, then the patterns a
// shared or throttling GPU leaves.
func series(n int, seed uint64, f func(i int, base float64) float64) []float64 {
	rng := rand.New(rand.NewPCG(seed, 1))
	out := make([]float64, n)
	for i := range out {
		out[i] = f(i, 2*(1+0.01*rng.NormFloat64()))
	}
	return out
}

func TestAnalyzeLaunches(t *testing.T) {
	lim := DefaultContentionLimits()
	clean := series(1000, 1, func(_ int, b float64) float64 { return b })
	// Time slicing with a co-tenant: every 4th launch waits out a 4 ms slice.
	sliced := series(1000, 2, func(i int, b float64) float64 {
		if i%4 == 3 {
			return b + 4
		}
		return b
	})
	// Throttling: the kernel slows linearly by 25% over the run.
	throttled := series(1000, 3, func(i int, b float64) float64 { return b * (1 + 0.25*float64(i)/1000) })
	// MPS-style sharing: everything about 2x slower half the time, at random.
	rng := rand.New(rand.NewPCG(4, 4))
	shared := series(1000, 4, func(_ int, b float64) float64 {
		if rng.Float64() < 0.3 {
			return 2 * b
		}
		return b
	})
	for _, tc := range []struct {
		name   string
		ms     []float64
		want   string
		period int
	}{
		{"clean", clean, Clean, 0},
		{"time-sliced", sliced, Contended, 4},
		{"throttling", throttled, Throttling, 0},
		{"shared", shared, Contended, -1},
	} {
		c := AnalyzeLaunches(tc.ms, lim)
		if c.Verdict != tc.want || (tc.period >= 0 && c.Period != tc.period) {
			t.Errorf("%s: %+v, want %s period %d", tc.name, c, tc.want, tc.period)
		}
	}
	if c := AnalyzeLaunches(clean[:5], lim); c.Verdict != Noisy {
		t.Errorf("five launches judged %s", c.Verdict)
	}
}

func TestSameBusID(t *testing.T) {
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{"00000000:3B:00.0", "0000:3b:00.0", true},
		{"00000001:3B:00.0", "0000:3b:00.0", false},
		{"00000000:3B:00.0", "0000:3c:00.0", false},
		{"00000000:3B:00.1", "0000:3b:00.0", false},
		{"", "", false},
		{"0000:3b:00", "0000:3b:00", false},
		{"zz:3b:00.0", "zz:3b:00.0", false},
	} {
		if got := SameBusID(c.a, c.b); got != c.same {
			t.Errorf("SameBusID(%q, %q) = %v", c.a, c.b, got)
		}
	}
}
