// Package clock is the time a run's budget, heartbeats and stop are
// judged by: the real one, or a fake a test moves by hand, so that a
// budget of hours or a heartbeat of minutes is tested without waiting for
// it.
package clock

import (
	"sort"
	"sync"
	"time"
)

// Clock tells the time and calls back after a while.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has passed.
	AfterFunc(d time.Duration, f func()) Timer
	// NewTimer sends the time on C once d has passed.
	NewTimer(d time.Duration) Timer
	// NewTicker sends the time on C every d, dropping ticks a slow
	// reader misses, as time.Ticker does.
	NewTicker(d time.Duration) Ticker
}

// Timer is a pending call or send.
type Timer interface {
	C() <-chan time.Time // nil for AfterFunc's
	Stop() bool
}

// Ticker is a repeating send.
type Ticker interface {
	C() <-chan time.Time
	Stop()
}

// Real is the system's clock.
func Real() Clock { return real{} }

type real struct{}

func (real) Now() time.Time { return time.Now() }

func (real) AfterFunc(d time.Duration, f func()) Timer { return realTimer{time.AfterFunc(d, f)} }

func (real) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

func (real) NewTicker(d time.Duration) Ticker { return realTicker{time.NewTicker(d)} }

type realTimer struct{ t *time.Timer }

func (t realTimer) C() <-chan time.Time { return t.t.C }
func (t realTimer) Stop() bool          { return t.t.Stop() }

type realTicker struct{ t *time.Ticker }

func (t realTicker) C() <-chan time.Time { return t.t.C }
func (t realTicker) Stop()               { t.t.Stop() }

// Fake is a clock that moves only when Advance is called. What falls due
// fires in Advance, in the order of its times: an AfterFunc's f in its
// own goroutine, as the real one; a timer's or ticker's send into its
// channel of one, dropped when full, as the real ones.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	pending []*fakeTimer
}

// NewFake is a fake clock reading start.
func NewFake(start time.Time) *Fake { return &Fake{now: start} }

func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// Advance moves the clock d ahead and fires what fell due.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	end := f.now.Add(d)
	var fire []func()
	for {
		sort.SliceStable(f.pending, func(i, j int) bool { return f.pending[i].at.Before(f.pending[j].at) })
		if len(f.pending) == 0 || f.pending[0].at.After(end) {
			break
		}
		t := f.pending[0]
		f.now = t.at
		if t.every > 0 {
			t.at = t.at.Add(t.every)
		} else {
			f.pending = f.pending[1:]
		}
		fire = append(fire, t.fire(f.now))
	}
	f.now = end
	f.mu.Unlock()
	for _, fn := range fire {
		fn()
	}
}

// Pending is how many timers and tickers wait: a test advances once the
// code under it has set its timers.
func (f *Fake) Pending() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.pending)
}

// add sets t due d from now; one due now or before fires at the next
// Advance, Advance(0) included.
func (f *Fake) add(t *fakeTimer, d time.Duration) *fakeTimer {
	f.mu.Lock()
	defer f.mu.Unlock()
	t.clock, t.at = f, f.now.Add(max(d, 0))
	f.pending = append(f.pending, t)
	return t
}

func (f *Fake) AfterFunc(d time.Duration, fn func()) Timer {
	return f.add(&fakeTimer{f: fn}, d)
}

func (f *Fake) NewTimer(d time.Duration) Timer {
	return f.add(&fakeTimer{c: make(chan time.Time, 1)}, d)
}

func (f *Fake) NewTicker(d time.Duration) Ticker {
	if d <= 0 {
		panic("clock: non-positive interval for NewTicker")
	}
	return fakeTicker{f.add(&fakeTimer{every: d, c: make(chan time.Time, 1)}, d)}
}

type fakeTimer struct {
	clock *Fake
	at    time.Time
	every time.Duration // a ticker's
	f     func()        // an AfterFunc's
	c     chan time.Time
}

type fakeTicker struct{ t *fakeTimer }

func (t fakeTicker) C() <-chan time.Time { return t.t.c }
func (t fakeTicker) Stop()               { t.t.Stop() }

// fire is what falling due does, run outside the clock's lock.
func (t *fakeTimer) fire(now time.Time) func() {
	if t.f != nil {
		return func() { go t.f() }
	}
	return func() {
		select {
		case t.c <- now:
		default:
		}
	}
}

func (t *fakeTimer) C() <-chan time.Time { return t.c }

func (t *fakeTimer) Stop() bool {
	f := t.clock
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, p := range f.pending {
		if p == t {
			f.pending = append(f.pending[:i], f.pending[i+1:]...)
			return true
		}
	}
	return false
}
