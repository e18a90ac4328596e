package render

import (
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/report"
)

// Progress shows bytes moved and throughput on a terminal, every half
// second, on one line; on a pipe or a file it shows nothing, so that a
// log holds no carriage returns.
type Progress struct {
	done  atomic.Int64
	total atomic.Int64 // 0 while unknown
	verb  string
	stop  chan struct{}
	ended chan struct{}
}

// StartProgress starts the line on w, saying verb ("push", already in
// the user's language) before the bytes; total is 0 while unknown. End
// stops it.
func StartProgress(w io.Writer, tr *i18n.Printer, verb string, total int64) *Progress {
	p := &Progress{verb: verb, stop: make(chan struct{}), ended: make(chan struct{})}
	p.total.Store(total)
	f, tty := terminal(w)
	go func() {
		defer close(p.ended)
		if !tty {
			<-p.stop
			return
		}
		start := time.Now()
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				fmt.Fprint(f, "\r\x1b[K")
				return
			case <-t.C:
				fmt.Fprint(f, "\r\x1b[K"+progressLine(tr, p.verb, p.done.Load(), p.total.Load(), time.Since(start)))
			}
		}
	}()
	return p
}

// Add counts n more bytes moved; it is safe from any goroutine.
func (p *Progress) Add(n int64) { p.done.Add(n) }

// SetTotal sets the bytes to move, once they are known.
func (p *Progress) SetTotal(n int64) { p.total.Store(n) }

// Done is the bytes moved so far.
func (p *Progress) Done() int64 { return p.done.Load() }

// End clears the line and returns once it is cleared.
func (p *Progress) End() {
	close(p.stop)
	<-p.ended
}

// progressLine is what the progress line says: bytes moved of the total,
// the share, the rate so far and the time left at that rate (share and
// time left only once the total is known and something has moved).
func progressLine(tr *i18n.Printer, verb string, done, total int64, elapsed time.Duration) string {
	rate := float64(done) / max(elapsed.Seconds(), 1e-3)
	if total <= 0 {
		return fmt.Sprintf("%s %s  %s/s", verb, report.Bytes(done), report.Bytes(int64(rate)))
	}
	line := fmt.Sprintf("%s %s / %s  %d%%  %s/s", verb, report.Bytes(done), report.Bytes(total), min(100, done*100/total), report.Bytes(int64(rate)))
	if done > 0 && done < total {
		left := time.Duration(float64(total-done) / rate * float64(time.Second))
		line += tr.Tf("  %s left", left.Round(time.Second))
	}
	return line
}
