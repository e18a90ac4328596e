package main

import (
	"bytes"
	"context"
	"io"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/render"
	"github.com/gpurent/gpurent/internal/report"
	"github.com/gpurent/gpurent/internal/store"
)

// ckptLogOptions are ckpt log's flags.
type ckptLogOptions struct {
	list   bool          // --list: the sessions, not the log
	follow bool          // --follow
	tail   int           // --tail: the last N lines only
	every  time.Duration // --every: how often --follow asks the store
}

// newCkptLog is `gpurent ckpt log`: the output gpurent run --log shipped,
// read from any machine. Its first user is the person on a new machine
// asking why the old one's run died.
func newCkptLog(g *globals, s *storeFlags) *cobra.Command {
	var o ckptLogOptions
	cmd := &cobra.Command{
		Use:   "log [SESSION]",
		Short: "Print the output gpurent run --log shipped: every session of the run, or one",
		Long: `log prints the command's output that gpurent run --log shipped to the store, decrypted:
each session (one gpurent run, with its restarts) in order, or the one named (an id
from --list, or "latest"). What a machine printed after its last shipment (every
--log-every, at each restart and notice, and at the end) died with it.
A line naming each session goes to stderr, so that stdout is the log alone.`,
		Example: `  gpurent ckpt log --store s3://bucket/runs --run llama --list
  gpurent ckpt log --store s3://bucket/runs --run llama --tail 50
  gpurent ckpt log --store s3://bucket/runs --run llama latest --follow`,
		Args: args(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			return runCkptLog(cmd.Context(), g, s, o, a)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.list, "list", false, "list the run's sessions: where and when each ran, how much it shipped")
	f.IntVarP(&o.tail, "tail", "n", 0, "print only the last N lines")
	f.BoolVarP(&o.follow, "follow", "f", false, "keep printing what is shipped, until interrupted")
	durationVar(f, &o.every, "every", 10*time.Second, "with --follow, how often the store is asked")
	return cmd
}

// runCkptLog prints the run's shipped log, every session or the one
// named, and with --follow what is shipped next.
func runCkptLog(ctx context.Context, g *globals, s *storeFlags, o ckptLogOptions, named []string) error {
	if o.tail < 0 {
		return usagef("--tail: want a number of lines, got %d", o.tail)
	}
	if o.every < time.Second {
		return usagef("--every: want 1s or more, got %v", o.every)
	}
	want := ""
	if len(named) == 1 {
		want = named[0]
		if want != "latest" {
			if err := store.ValidID(want); err != nil {
				return usagef("session %q: want an id from gpurent ckpt log --list, or latest", want)
			}
		}
	}
	if g.output == report.JSON && !o.list {
		return usagef("-o json goes with --list; the log itself is text")
	}
	c, err := s.Crypto(false)
	if err != nil {
		return err
	}
	st, name, closeFn, err := s.OpenExisting(ctx, c, nil)
	if err != nil {
		return err
	}
	defer closeFn()
	sessions, err := pickSessions(ctx, st, s.Run, want, name)
	if err != nil {
		return err
	}
	if o.list {
		return listSessions(g, sessions, s.Run, name)
	}
	p := &logPrinter{st: st, out: g.stdout, errw: g.stderr, tr: g.tr, read: map[string]int{}, warned: map[string]bool{}, many: want == ""}
	if o.tail > 0 {
		err = p.tail(ctx, sessions, o.tail)
	} else {
		err = p.from(ctx, sessions)
	}
	if err != nil || !o.follow {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(o.every):
		}
		sessions, err = pickSessions(ctx, st, s.Run, want, name)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if err := p.from(ctx, sessions); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
}

// pickSessions lists the run's sessions and keeps the one asked for ("":
// all, "latest": the newest).
func pickSessions(ctx context.Context, st *store.Store, run, want, where string) ([]store.LogSession, error) {
	all, err := st.LogSessions(ctx, run)
	if err != nil {
		return nil, err
	}
	if len(all) == 0 {
		return nil, usagef("run %s has no log in %s: gpurent run ships one with --log FILE (%s)", run, where, st.DescribeRuns(ctx))
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
	return nil, usagef("run %s has no log session %s (gpurent ckpt log --list names them)", run, want)
}

func listSessions(g *globals, sessions []store.LogSession, run, where string) error {
	if g.output == report.JSON {
		return report.WriteJSON(g.stdout, ckptLogJSON{Store: where, Run: run, Sessions: nonNil(sessions)})
	}
	return render.LogSessions(g.stdout, g.tr, sessions)
}

// logPrinter prints sessions' segments, remembering how many of each it
// has printed, so that --follow prints only what is new.
type logPrinter struct {
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
func (p *logPrinter) gap(ls *store.LogSession) {
	if ls.Missing > 0 && !p.warned[ls.Session] {
		p.warned[ls.Session] = true
		p.tr.Fprintf(p.errw, "gpurent: session %s: segment %d is missing from the store; its log stops before it\n", ls.Session, ls.Missing)
	}
}

// head names a session on stderr before its first line.
func (p *logPrinter) head(ls *store.LogSession) {
	if p.many {
		p.tr.Fprintf(p.errw, "== session %s on %s, started %s ==\n", ls.Session, report.Safe(ls.Host), ls.Started.Local().Format("2006-01-02 15:04:05"))
	}
}

// from prints each session's segments after those printed already.
func (p *logPrinter) from(ctx context.Context, sessions []store.LogSession) error {
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

// tail prints the last lines of the sessions, reading segments from the
// end back only until it has them: the tail of a three-week log costs a
// segment or two, not the whole log.
func (p *logPrinter) tail(ctx context.Context, sessions []store.LogSession, lines int) error {
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
