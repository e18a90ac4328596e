//go:build unix

package runner

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/release"
	"github.com/gpurent/gpurent/internal/supervise"
)

// idleWindow is how long an idle command is given to write the
// checkpoint it is asked for: a notice's two minutes.
const idleWindow = 2 * time.Minute

// validateRelease checks --when-done, --when-done-on-failure, --idle-stop
// and --endpoint.
func (o *Options) validateRelease() error {
	if o.WhenDone != "" {
		a, err := release.ParseAction(o.WhenDone)
		if err != nil {
			return bad("when-done", "%v", err)
		}
		// Only a store proves the work is off the box.
		if a == release.Destroy && o.StoreURL == "" {
			return bad("when-done", "destroy needs --store: the disks go with the machine, and only the store proves the newest checkpoint is not on them alone")
		}
	}
	if p := o.Release.Provider; p != "" && !slices.Contains(release.Providers(), p) {
		return bad("provider", "want one of %s, got %q", strings.Join(release.Providers(), ", "), p)
	}
	if o.WhenDoneOnFailure && o.WhenDone == "" && o.IdleStop == 0 {
		return bad("when-done-on-failure", "needs --when-done stop or destroy")
	}
	if o.IdleStop < 0 {
		return bad("idle-stop", "want a positive duration such as 30m, or 0 for never, got %v", o.IdleStop)
	}
	if o.IdleStop > 0 && o.IdleStop < 5*time.Second {
		return bad("idle-stop", "want 5s or more, got %v", o.IdleStop)
	}
	if o.IdleStop > 0 && o.Log == "" {
		return bad("idle-stop", "needs --log FILE: gpurent sees whether the command prints only when it keeps its output")
	}
	return nil
}

// releaseAction is what the end of the run does to the machine ("": nothing).
func (o *Options) releaseAction() release.Action {
	switch {
	case o.WhenDone != "":
		return release.Action(o.WhenDone)
	case o.IdleStop > 0:
		return release.Stop
	}
	return ""
}

// findMachine finds, before anything starts, the machine a release
// would stop and the request it would make: a run that cannot be
// released learns it now, not after a week of training.
func (s *session) findMachine(ctx context.Context) error {
	a := s.o.releaseAction()
	if a == "" {
		return nil
	}
	m, err := release.Find(ctx, s.o.Release)
	if err != nil {
		return i18n.Errorf("--when-done: %w; release it yourself, or run without --when-done and --idle-stop (nothing was started)", err)
	}
	if _, err := release.Plan(ctx, s.o.Release, m, a); err != nil {
		return i18n.Errorf("--when-done: %s: %w (nothing was started)", m, err)
	}
	s.machine = m
	s.logf("when the work is done and safe, %s is released (%s)", m, a)
	return nil
}

// releaseDecision says whether the run's end ex releases the machine, and
// why, or why not: only after success (exit 0, or stopped as idle) unless
// failures are asked for too, and never a destroy while the store lacks
// the newest checkpoint. refuse is true when a destroy asked for was
// refused, which fails the run.
func releaseDecision(o *Options, ex supervise.Exit) (a release.Action, why i18n.Text, ok, refuse bool) {
	a = o.releaseAction()
	success := ex.Code == 0 || ex.Idle && ex.Code == supervise.ExitStopped
	switch {
	case !success && !o.WhenDoneOnFailure:
		return a, i18n.Textf("the run ended with exit %d: a failed run's machine is kept for a look (--when-done-on-failure releases it anyway)", ex.Code), false, false
	case a == release.Destroy && !ex.Stored:
		return a, i18n.Textf("not destroyed: the store does not hold the newest checkpoint, so the disks may hold the only copy"), false, true
	case ex.Idle:
		return a, i18n.Textf("the command was idle and is stopped"), true, false
	case success && ex.Stored:
		return a, i18n.Textf("the command finished and its newest checkpoint is in the store"), true, false
	case success:
		return a, i18n.Textf("the command finished"), true, false
	}
	return a, i18n.Textf("the run ended with exit %d (--when-done-on-failure)", ex.Code), true, false
}

// releaseAtEnd releases the machine as the options say, once the run has
// ended as ex, and returns the exit status: ex's, or 1 where a release
// was asked for and did not happen (a refused destroy after a 0, a
// request that failed).
func (s *session) releaseAtEnd(ctx context.Context, ex supervise.Exit) int {
	if s.machine == nil {
		return ex.Code
	}
	fail := func() int {
		if ex.Code == 0 {
			return exitFailure
		}
		return ex.Code
	}
	a, why, ok, refuse := releaseDecision(&s.o, ex)
	if !ok {
		text := i18n.Textf("%s is not released: %s", s.machine, why)
		s.logf("%s", text)
		s.event("release", text, "")
		if refuse {
			return fail()
		}
		return ex.Code
	}
	call, err := release.Plan(ctx, s.o.Release, s.machine, a)
	if err == nil {
		text := i18n.Textf("releasing %s (%s): %s", s.machine, a, why)
		s.logf("%s", text)
		s.event("release", text, "")
		// Said in the store before the request: the machine may not live
		// to ship the answer.
		s.record(ctx, text)
		var answer string
		if answer, err = release.Do(ctx, s.o.Release, call); err == nil {
			text := i18n.Textf("%s asked to %s %s: %s", s.machine.Label, a, s.machine.ID, answer)
			s.logf("%s", text)
			s.record(ctx, text)
			return ex.Code
		}
	}
	text := i18n.Textf("%s was NOT released (%s): %v; %s it in the provider's console, or it goes on billing", s.machine, a, err, a)
	s.logf("%s", text)
	s.event("release", text, "")
	s.record(ctx, text)
	// A release asked for and not made is a failure, whatever the run's
	// end (75 would read as "safe, run again later" while it bills on);
	// but 74 keeps saying the newest checkpoint is only here.
	if ex.Code == supervise.ExitNotStored {
		return ex.Code
	}
	return exitFailure
}

// record writes a line of the release to the run's log in the store, so
// that gpurent ckpt log tells why the machine went away: into --log's
// shipment, or, without --log, a log session of its own.
func (s *session) record(ctx context.Context, text i18n.Text) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 20*time.Second)
	defer cancel()
	switch {
	case s.ship != nil:
		if err := s.ship.Flush(ctx); err != nil {
			s.logf("log: the release is said on this machine only: %v", err)
		}
	case s.cfg.Store != nil:
		if s.relLog == nil {
			s.relLog = &storeLog{st: s.cfg.Store, run: s.o.Run, started: time.Now()}
		}
		line := fmt.Sprintf("[gpurent %s] %s\n", time.Now().UTC().Format(time.RFC3339), s.o.Printer.Tf("%s", text))
		if err := s.relLog.Append(ctx, []byte(line)); err != nil {
			s.logf("log: the release is said on this machine only: %v", err)
		}
	}
}
