package compute

import (
	"math"
	"slices"
)

// Summary describes repeated timings of one operation.
type Summary struct {
	N      int     `json:"n"`
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	P99    float64 `json:"p99"`
	// Spread is the interquartile range over the median: how much the
	// middle half of the repetitions disagree.
	Spread float64 `json:"spread"`
	CV     float64 `json:"cv"` // standard deviation over the mean
}

// Summarize computes a Summary; xs is not modified.
func Summarize(xs []float64) Summary {
	if len(xs) == 0 {
		return Summary{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	var sum, sq float64
	for _, x := range s {
		sum += x
	}
	mean := sum / float64(len(s))
	for _, x := range s {
		sq += (x - mean) * (x - mean)
	}
	out := Summary{N: len(s), Median: quantile(s, 0.5), Min: s[0], Max: s[len(s)-1], P99: quantile(s, 0.99)}
	if out.Median > 0 {
		out.Spread = (quantile(s, 0.75) - quantile(s, 0.25)) / out.Median
	}
	if mean > 0 {
		out.CV = math.Sqrt(sq/float64(len(s))) / mean
	}
	return out
}

func quantile(sorted []float64, q float64) float64 {
	pos := q * float64(len(sorted)-1)
	i := int(pos)
	if i+1 >= len(sorted) {
		return sorted[len(sorted)-1]
	}
	f := pos - float64(i)
	return sorted[i]*(1-f) + sorted[i+1]*f
}

// Contention verdicts of a sustained launch series.
const (
	Clean      = "clean"
	Contended  = "contended"  // time slicing or MPS: a share of launches waits for someone else
	Throttling = "throttling" // launches slow down over the run: power or thermal limits
	Noisy      = "noisy"      // spread without a clear pattern
)

// ContentionLimits are the thresholds of the sustained-launch judgement.
// They are gpurent's own, to be calibrated on a real card with
// scripts/gpu-check.sh (a clean idle GPU and one with a GEMM co-tenant).
type ContentionLimits struct {
	// SlowFactor: a launch is slow when it takes this many times the
	// median. A time-slice stall adds a whole slice to a short kernel, far
	// more than jitter does.
	SlowFactor float64
	// SlowShare: share of slow launches from which the GPU is contended.
	SlowShare float64
	// Sag: median of the last fifth of launches over the first fifth from
	// which the card is throttling.
	Sag float64
	// NoisyCV: coefficient of variation above which the series is noisy.
	NoisyCV float64
}

// DefaultContentionLimits are the limits bench uses.
func DefaultContentionLimits() ContentionLimits {
	return ContentionLimits{SlowFactor: 1.5, SlowShare: 0.02, Sag: 1.10, NoisyCV: 0.10}
}

// Contention is the analysis of one fixed kernel launched back to back.
type Contention struct {
	Verdict   string  `json:"verdict"`
	Launches  int     `json:"launches"`
	P50Ms     float64 `json:"p50_ms"`
	P99Ms     float64 `json:"p99_ms"`
	CV        float64 `json:"cv"`
	SlowShare float64 `json:"slow_share"` // share of launches over SlowFactor × median
	// Sag is the median of the last fifth of launches over the first fifth:
	// above 1 the kernel got slower as the run went on.
	Sag float64 `json:"sag"`
	// Period is the most common spacing, in launches, between slow launches
	// (0 when there is none): time slicing recurs at a fixed rhythm.
	Period int `json:"period"`
}

// AnalyzeLaunches judges a series of kernel durations in milliseconds, in
// launch order.
func AnalyzeLaunches(ms []float64, lim ContentionLimits) Contention {
	c := Contention{Verdict: Clean, Launches: len(ms)}
	if len(ms) < 10 {
		c.Verdict = Noisy
		return c
	}
	s := Summarize(ms)
	c.P50Ms, c.P99Ms, c.CV = s.Median, s.P99, s.CV
	var slow []int
	for i, x := range ms {
		if x > lim.SlowFactor*s.Median {
			slow = append(slow, i)
		}
	}
	c.SlowShare = float64(len(slow)) / float64(len(ms))
	fifth := len(ms) / 5
	first, last := Summarize(ms[:fifth]).Median, Summarize(ms[len(ms)-fifth:]).Median
	if first > 0 {
		c.Sag = last / first
	}
	if len(slow) >= 3 {
		gaps := map[int]int{}
		for i := 1; i < len(slow); i++ {
			gaps[slow[i]-slow[i-1]]++
		}
		best := 0
		for g, n := range gaps {
			if n > best || (n == best && g < c.Period) {
				c.Period, best = g, n
			}
		}
	}
	switch {
	case c.SlowShare >= lim.SlowShare:
		c.Verdict = Contended
	case c.Sag >= lim.Sag:
		c.Verdict = Throttling
	case c.CV >= lim.NoisyCV:
		c.Verdict = Noisy
	}
	return c
}
