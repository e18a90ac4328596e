package supervise

import "time"

// Two clocks. The run's own schedule (the budget, the restart backoff,
// when a failing store is tried again, stalls, the lease) reads
// Config.Clock, which a test moves by hand. What is measured against the
// world reads the wall clock, here and only here (TestClockReads): files
// (their ages are on the kernel's clock, and the polls and events that
// look at them), a process given time to exit or to save within a notice,
// a store given time to answer at the end, and the metrics and lock file
// that people read. A fake clock there would wait forever for what
// happens in real time.

func wallNow() time.Time                         { return time.Now() }
func fileAge(mod time.Time) time.Duration        { return time.Since(mod) }
func wallAfter(d time.Duration) <-chan time.Time { return time.After(d) }
func wallSleep(d time.Duration)                  { time.Sleep(d) }
func wallTicker(d time.Duration) *time.Ticker    { return time.NewTicker(d) }

// now is the time on the run's clock.
func (s *Supervisor) now() time.Time { return s.cfg.Clock.Now() }

// since is the time on the run's clock since t.
func (s *Supervisor) since(t time.Time) time.Duration { return s.now().Sub(t) }

// after is time.After on the run's clock.
func (s *Supervisor) after(d time.Duration) <-chan time.Time { return s.cfg.Clock.NewTimer(d).C() }
