// Package logread reads a run's log back from the store: the sessions
// asked for, printed whole, from where the last read ended (--follow), or
// their last lines, reading from the end only as far as needed.
package logread

import (
	"bytes"
	"context"
	"io"

	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/report"
	"github.com/gpurent/gpurent/internal/store"
	"github.com/gpurent/gpurent/internal/usage"
)

// Pick lists the run's sessions and keeps the one asked for ("":
// all, "latest": the newest).
func Pick(ctx context.Context, st *store.Store, run, want, where string) ([]store.LogSession, error) {
	all, err := st.LogSessions(ctx, run)
	if err != nil {
		return nil, err
	}
	if len(all) == 0 {
		return nil, usage.Errorf("run %s has no log in %s: gpurent run ships one with --log FILE (%s)", run, where, st.DescribeRuns(ctx))
	}
	switch want {
	case "":
		return all, nil
	case "latest":
		return all[len(all)-1:], nil
	}
	for _, ls := range all {
		if ls.Session == want {
			return []store.LogSession{ls}, nil
		}
	}
	return nil, usage.Errorf("run %s has no log session %s (gpurent ckpt log --list names them)", run, want)
}

// NewPrinter prints st's log sessions to out, its notes to errw in tr's
// language; many names each session before its lines.
func NewPrinter(st *store.Store, out, errw io.Writer, tr *i18n.Printer, many bool) *Printer {
	return &Printer{st: st, out: out, errw: errw, tr: tr, read: map[string]int{}, warned: map[string]bool{}, many: many}
}

// Printer prints sessions' segments, remembering how many of each it
// has printed, so that --follow prints only what is new.
type Printer struct {
	st        *store.Store
	out, errw io.Writer
	tr        *i18n.Printer
	read      map[string]int  // session: segments printed
	warned    map[string]bool // session: its missing segment was named
	many      bool            // name each session on stderr
}

// gap says, once per session, that its log stops short of a missing
// segment: the lines after it are in the store but cannot be read in
// order.
func (p *Printer) gap(ls *store.LogSession) {
	if ls.Missing > 0 && !p.warned[ls.Session] {
		p.warned[ls.Session] = true
		p.tr.Fprintf(p.errw, "gpurent: session %s: segment %d is missing from the store; its log stops before it\n", ls.Session, ls.Missing)
	}
}

// head names a session on stderr before its first line.
func (p *Printer) head(ls *store.LogSession) {
	if p.many {
		p.tr.Fprintf(p.errw, "== session %s on %s, started %s ==\n", ls.Session, report.Safe(ls.Host), ls.Started.Local().Format("2006-01-02 15:04:05"))
	}
}

// From prints each session's segments after those printed already.
func (p *Printer) From(ctx context.Context, sessions []store.LogSession) error {
	for i := range sessions {
		ls := &sessions[i]
		n := p.read[ls.Session]
		if n >= ls.Segments {
			p.gap(ls)
			continue
		}
		if n == 0 {
			p.head(ls)
		}
		for ; n < ls.Segments; n++ {
			if err := p.st.ReadLogSegment(ctx, ls, n, p.out); err != nil {
				return err
			}
			p.read[ls.Session] = n + 1
		}
		p.gap(ls)
	}
	return nil
}

// Tail prints the last lines of the sessions, reading segments from the
// end back only until it has them: the tail of a three-week log costs a
// segment or two, not the whole log.
func (p *Printer) Tail(ctx context.Context, sessions []store.LogSession, lines int) error {
	type part struct {
		ls   *store.LogSession
		data []byte
	}
	var parts []part // newest first
	for _, ls := range sessions {
		// What comes before the tail counts as printed: --follow goes on
		// from the end, not from older sessions' beginnings.
		p.read[ls.Session] = ls.Segments
	}
	have := 0
	for i := len(sessions) - 1; i >= 0 && have <= lines; i-- {
		ls := &sessions[i]
		p.gap(ls)
		for n := ls.Segments - 1; n >= 0 && have <= lines; n-- {
			var buf bytes.Buffer
			if err := p.st.ReadLogSegment(ctx, ls, n, &buf); err != nil {
				return err
			}
			parts = append(parts, part{ls, buf.Bytes()})
			have += bytes.Count(buf.Bytes(), []byte{'\n'})
		}
	}
	// Lines to drop from the oldest part read: it may hold more than
	// asked. A last line without its "\n" yet counts as a line.
	var all []byte
	for i := len(parts) - 1; i >= 0; i-- {
		all = append(all, parts[i].data...)
	}
	total := bytes.Count(all, []byte{'\n'})
	if len(all) > 0 && all[len(all)-1] != '\n' {
		total++
	}
	skip := max(total-lines, 0)
	off := 0
	for ; skip > 0; skip-- {
		off += bytes.IndexByte(all[off:], '\n') + 1
	}
	// Print by part, so that each session is named where its lines begin.
	pos := 0
	var named *store.LogSession
	for i := len(parts) - 1; i >= 0; i-- {
		d := parts[i].data
		lo := max(off-pos, 0)
		pos += len(d)
		if lo >= len(d) {
			continue
		}
		if parts[i].ls != named {
			named = parts[i].ls
			p.head(named)
		}
		if _, err := p.out.Write(d[lo:]); err != nil {
			return err
		}
	}
	return nil
}
