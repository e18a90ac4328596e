package ledger

import (
	"context"
	"time"
)

// Recorder is where a session's record goes beside the ledger file: the
// store, so that a budget follows the run to another machine.
type Recorder interface {
	PutSpend(ctx context.Context, run, session string, record []byte) error
}

// KeepOptions are what Keep records and how often.
type KeepOptions struct {
	// Hourly is the machine's price: the session costs Hourly times the
	// hours since Begun.
	Hourly float64
	Begun  time.Time
	// Now is the clock the spending is read by; nil: time.Now.
	Now func() time.Time
	// Every is how often the file is written; StoreEvery how often the
	// record goes to Store (nil: nowhere but the file).
	Every, StoreEvery time.Duration
	Store             Recorder
	Run               string
	// Log says a record that cannot be written, once, and once more when
	// it can again.
	Log func(format string, a ...any)
}

// Keep records what this session spends as it spends it: at once, every
// o.Every, and once more when the returned func is called at the end; with
// a store, the session's record goes there too, every o.StoreEvery and at
// the end. So a gpurent killed, or a machine that lost power, loses at most
// one interval's cost. A ledger or a store that cannot be written is said
// once; the run goes on, since only a later session's count depends on it.
func (l *Ledger) Keep(ctx context.Context, o KeepOptions) (stop func()) {
	ctx = context.WithoutCancel(ctx) // the end's record is written after a signal too
	var failing [2]bool              // the file, the store
	say := func(i int, err error, what string) {
		switch {
		case err != nil && !failing[i]:
			o.Log("warning: %v: %s", err, what)
		case err == nil && failing[i]:
			o.Log("the record of what this session costs is written again")
		}
		failing[i] = err != nil
	}
	var stored time.Time
	record := func(now time.Time, last bool) {
		rec, err := l.Record(o.Hourly*now.Sub(o.Begun).Hours(), now)
		say(0, err, "a gpurent started again here would not count this session's cost")
		if o.Store == nil || rec == nil || !last && now.Sub(stored) < o.StoreEvery {
			return
		}
		pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		err = o.Store.PutSpend(pctx, o.Run, l.Session(), rec)
		say(1, err, "the store would not know this session's cost (a budget on another machine, ckpt runs)")
		if err == nil {
			stored = now
		}
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	record(now(), true)
	tick := time.NewTicker(o.Every)
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				record(now(), false)
			}
		}
	}()
	return func() {
		tick.Stop()
		close(done)
		<-finished
		record(now(), true)
	}
}
