package runlog

import (
	"bytes"
	"time"
)

// redrawEvery is how often the log keeps a state of a line the command
// redraws with "\r": a progress bar redrawn ten times a second would
// otherwise fill the disk and the store with states nobody reads (about
// 100 MB a day for one tqdm bar), and bury the lines around it.
const redrawEvery = 10 * time.Second

// lines is one output stream's way into the log: a line goes in when it
// ends, and of a line redrawn with "\r" one state per redrawEvery, its
// last state at its end. The log then reads on a terminal as the output
// did (each state ends in "\r"), with what a terminal would have shown
// in the end of each line. A chunk that ends mid-line is held until the
// line ends or flush; a line held by two streams is never mixed.
type lines struct {
	pend  []byte    // bytes of the line since the last "\r", or since what was written
	state []byte    // the newest whole state not written; nil when none
	wrote time.Time // when a state of this line was last written
	open  bool      // part of the line is in the log, its end is not
}

// lineMax is the most of one line held back from the log: a command that
// prints megabytes without a newline (a progress dump, a binary blob to
// stdout) would otherwise be held whole in memory (a 400 MB line took 1.9
// GiB). Past it the part held goes to the log and the line stays open.
const lineMax = 1 << 20

// add takes a chunk of the stream at now and returns what goes to the log,
// which may be part of b: write it before b changes.
func (l *lines) add(b []byte, now time.Time) []byte {
	out := l.take(b, now)
	if len(l.pend) > lineMax {
		out = append(append(make([]byte, 0, len(out)+len(l.pend)), out...), l.pend...)
		l.pend, l.open = l.pend[:0], true
	}
	if len(l.state) > lineMax {
		out = append(append(out, l.state...), '\r')
		l.state, l.wrote, l.open = nil, now, true
	}
	return out
}

func (l *lines) take(b []byte, now time.Time) []byte {
	if l.state == nil && bytes.IndexByte(b, '\r') < 0 {
		// Plain lines, most output: up to the last "\n" as it is.
		j := bytes.LastIndexByte(b, '\n')
		if j < 0 {
			l.pend = append(l.pend, b...)
			return nil
		}
		out := b[:j+1]
		if len(l.pend) > 0 {
			out = append(append(make([]byte, 0, len(l.pend)+j+1), l.pend...), out...)
		}
		l.pend = append(l.pend[:0], b[j+1:]...)
		l.wrote, l.open = time.Time{}, false
		return out
	}
	var out []byte
	for len(b) > 0 {
		i := bytes.IndexAny(b, "\r\n")
		if i < 0 {
			l.pend = append(l.pend, b...)
			break
		}
		l.pend = append(l.pend, b[:i]...)
		c := b[i]
		b = b[i+1:]
		if c == '\r' && len(b) > 0 && b[0] == '\n' {
			c, b = '\n', b[1:] // "\r\n" ends the line as "\n" does
		}
		if c == '\n' {
			// The line's last state is what followed the last "\r", or,
			// when nothing did, the state before it.
			last := l.pend
			if len(last) == 0 && l.state != nil {
				last = l.state
			}
			out = append(append(out, last...), '\n')
			l.pend, l.state, l.wrote, l.open = l.pend[:0], nil, time.Time{}, false
			continue
		}
		if len(l.pend) == 0 && l.state != nil {
			// "\r" right after "\r" redraws nothing: the state held
			// stays what the line shows, and the one to keep.
			continue
		}
		l.state = append(l.state[:0:0], l.pend...)
		l.pend = l.pend[:0]
		if now.Sub(l.wrote) >= redrawEvery {
			out = append(append(out, l.state...), '\r')
			l.state, l.wrote, l.open = nil, now, true
		}
	}
	return out
}

// flush returns what is held (the newest state, then the bytes after it),
// ending the line with "\n" when brk is set and part of it is in the log:
// before one of gpurent's own lines, or at the end.
func (l *lines) flush(now time.Time, brk bool) []byte {
	var out []byte
	if l.state != nil {
		out = append(append(out, l.state...), '\r')
		l.state, l.wrote = nil, now
	}
	out = append(out, l.pend...)
	l.pend = l.pend[:0]
	l.open = l.open || len(out) > 0
	if brk && l.open {
		out = append(out, '\n')
		l.wrote, l.open = time.Time{}, false
	}
	return out
}
