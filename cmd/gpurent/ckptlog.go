package main

import (
	"context"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpurent/gpurent/internal/cliflag"
	"github.com/gpurent/gpurent/internal/logread"
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
	cliflag.DurationVar(f, &o.every, "every", 10*time.Second, "with --follow, how often the store is asked")
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
	sessions, err := logread.Pick(ctx, st, s.Run, want, name)
	if err != nil {
		return err
	}
	if o.list {
		return listSessions(g, sessions, s.Run, name)
	}
	p := logread.NewPrinter(st, g.stdout, g.stderr, g.tr, want == "")
	if o.tail > 0 {
		err = p.Tail(ctx, sessions, o.tail)
	} else {
		err = p.From(ctx, sessions)
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
		sessions, err = logread.Pick(ctx, st, s.Run, want, name)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if err := p.From(ctx, sessions); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
}

func listSessions(g *globals, sessions []store.LogSession, run, where string) error {
	if g.output == report.JSON {
		return report.WriteJSON(g.stdout, ckptLogJSON{Store: where, Run: run, Sessions: nonNil(sessions)})
	}
	return render.LogSessions(g.stdout, g.tr, sessions)
}
