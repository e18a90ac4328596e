package clock

import (
	"sync/atomic"
	"testing"
	"time"
)

// The fake fires what falls due in Advance, in time order, and nothing
// before: a timer, a stopped one, an AfterFunc and a ticker that drops
// what its reader missed.
func TestFake(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)
	c := NewFake(t0)
	timer := c.NewTimer(time.Minute)
	stopped := c.NewTimer(time.Minute)
	var called atomic.Int32
	done := make(chan struct{})
	c.AfterFunc(90*time.Second, func() { called.Add(1); close(done) })
	tick := c.NewTicker(time.Minute)
	if !stopped.Stop() || stopped.Stop() {
		t.Fatal("Stop: want true once, then false")
	}
	c.Advance(59 * time.Second)
	select {
	case <-timer.C():
		t.Fatal("the timer fired early")
	case <-tick.C():
		t.Fatal("the ticker fired early")
	default:
	}
	c.Advance(time.Second)
	if at := <-timer.C(); !at.Equal(t0.Add(time.Minute)) {
		t.Errorf("timer at %v", at)
	}
	if at := <-tick.C(); !at.Equal(t0.Add(time.Minute)) {
		t.Errorf("tick at %v", at)
	}
	if len(stopped.C()) != 0 {
		t.Error("a stopped timer fired")
	}
	c.Advance(5 * time.Minute) // four ticks due; the reader took none: one waits
	<-done
	if called.Load() != 1 {
		t.Errorf("AfterFunc called %d times", called.Load())
	}
	if at := <-tick.C(); !at.Equal(t0.Add(2 * time.Minute)) {
		t.Errorf("the kept tick is at %v, want the first missed one", at)
	}
	if len(tick.C()) != 0 {
		t.Error("missed ticks were kept")
	}
	tick.Stop()
	if c.Pending() != 0 || !c.Now().Equal(t0.Add(6*time.Minute)) {
		t.Errorf("pending %d, now %v", c.Pending(), c.Now())
	}
}
