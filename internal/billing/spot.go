package billing

import (
	"math"
	"math/rand/v2"
	"slices"
)

// Run is a job that checkpoints while it may be interrupted. Times are in
// hours; Rate is interruptions per hour of the whole job (an interruption of
// any of its instances stops all of them).
//
// The model: work is done in segments of Every hours, each followed by a
// Write-hour checkpoint. Interruptions arrive as a Poisson process at Rate
// during work and checkpoint writes. An interruption loses the segment in
// progress and costs Restart hours, during which no interruption strikes;
// the job resumes after the last completed checkpoint. The last segment is
// shorter when Work is not a multiple of Every and still ends in a checkpoint.
type Run struct {
	Work, Every, Write, Restart, Rate float64
}

// segments is the number of full segments and the length of the last,
// partial one (checkpoint included; 0 when there is none).
func (r Run) segments() (full int, seg, last float64) {
	n := math.Floor(r.Work/r.Every + 1e-9)
	rem := r.Work - n*r.Every
	if rem < 1e-9*r.Every {
		rem = 0
	}
	seg = r.Every + r.Write
	if rem > 0 {
		last = rem + r.Write
	}
	return int(n), seg, last
}

// Expected is the closed-form expected wall-clock hours and number of
// interruptions. A segment of length T succeeds after a geometric number of
// failures, e^(λT) − 1 on average, each costing the time to the failure plus
// Restart; summing gives E[T] = (e^(λT) − 1)(1/λ + Restart) per segment.
func (r Run) Expected() (hours, interruptions float64) {
	full, seg, last := r.segments()
	if r.Rate <= 0 {
		return float64(full)*seg + last, 0
	}
	fails := float64(full) * math.Expm1(r.Rate*seg)
	if last > 0 {
		fails += math.Expm1(r.Rate * last)
	}
	return fails * (1/r.Rate + r.Restart), fails
}

// LostFraction is the expected share of paid hours that do not advance the
// work: checkpoint writes, work redone after interruptions and restarts.
func (r Run) LostFraction() float64 {
	h, _ := r.Expected()
	if h <= 0 {
		return 0
	}
	return 1 - r.Work/h
}

// Trial is one simulated run.
type Trial struct {
	Hours         float64
	Interruptions int
}

// Simulate draws one run. It steps from interruption to interruption, not
// segment to segment: with a memoryless arrival process both are the same
// model, and a 300-hour job then costs a few draws instead of hundreds.
func (r Run) Simulate(rng *rand.Rand) Trial {
	full, seg, last := r.segments()
	if r.Rate <= 0 {
		return Trial{Hours: float64(full)*seg + last}
	}
	var t float64
	done := 0 // completed full segments
	k := 0
	for {
		need := float64(full-done)*seg + last
		x := rng.ExpFloat64() / r.Rate
		if x >= need {
			return Trial{Hours: t + need, Interruptions: k}
		}
		// Segments completed before the interruption; the partial last
		// segment never completes here, since x < need.
		c := int(x / seg)
		if done+c > full {
			c = full - done
		}
		done += c
		t += x + r.Restart
		k++
	}
}

// Risk is the spread of a spot run over many trials.
type Risk struct {
	P50Hours, P90Hours, MeanHours float64
	P50Cost, P90Cost, MeanCost    float64
	// DeadlineProb is the share of trials that finished within the deadline
	// (NaN when no deadline was given).
	DeadlineProb float64
}

// Cost prices one trial: a fixed part, an hourly part, and a part per
// interruption (boot fees of the restarts).
type Cost struct {
	Fixed, PerHour, PerInterruption float64
}

// MonteCarlo runs trials runs of r from a generator seeded with seed, and
// summarises hours and cost. The same seed gives the same Risk.
func MonteCarlo(r Run, c Cost, trials int, seed uint64, deadlineHours float64) Risk {
	if trials < 1 {
		trials = 1
	}
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	hours := make([]float64, trials)
	costs := make([]float64, trials)
	var sumH, sumC float64
	met := 0
	for i := range hours {
		tr := r.Simulate(rng)
		hours[i] = tr.Hours
		costs[i] = c.Fixed + c.PerHour*tr.Hours + c.PerInterruption*float64(tr.Interruptions)
		sumH += hours[i]
		sumC += costs[i]
		if tr.Hours <= deadlineHours {
			met++
		}
	}
	slices.Sort(hours)
	slices.Sort(costs)
	risk := Risk{
		P50Hours: quantile(hours, 0.5), P90Hours: quantile(hours, 0.9), MeanHours: sumH / float64(trials),
		P50Cost: quantile(costs, 0.5), P90Cost: quantile(costs, 0.9), MeanCost: sumC / float64(trials),
		DeadlineProb: math.NaN(),
	}
	if deadlineHours > 0 {
		risk.DeadlineProb = float64(met) / float64(trials)
	}
	return risk
}

// quantile of sorted xs by linear interpolation between closest ranks.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	pos := q * float64(len(xs)-1)
	i := int(pos)
	if i+1 >= len(xs) {
		return xs[len(xs)-1]
	}
	f := pos - float64(i)
	return xs[i]*(1-f) + xs[i+1]*f
}

// Interval is the optimal checkpoint interval for a mean time between
// interruptions of mtbf hours and a checkpoint write of write hours.
type Interval struct {
	Young, Daly float64 // hours
}

// OptimalInterval applies Young (1974), τ = √(2δM), and Daly's higher-order
// estimate (2006), τ = √(2δM)·[1 + ⅓√(δ/2M) + (δ/2M)/9] − δ for δ < 2M and
// τ = M otherwise.
func OptimalInterval(write, mtbf float64) Interval {
	y := math.Sqrt(2 * write * mtbf)
	if write >= 2*mtbf {
		return Interval{Young: y, Daly: mtbf}
	}
	x := write / (2 * mtbf)
	return Interval{Young: y, Daly: y*(1+math.Sqrt(x)/3+x/9) - write}
}
