package supervise

import (
	"context"
	"syscall"
	"time"

	"github.com/gpurent/gpurent/internal/i18n"

	"github.com/gpurent/gpurent/internal/preempt"
)

// signal sends sig to the child's process group.
func (s *Supervisor) signal(sig syscall.Signal) {
	if pid := s.child.Load(); pid > 0 {
		kill(-int(pid), sig)
	}
}

// stopChild forwards sig, waits the grace period, then kills the group.
func (s *Supervisor) stopChild(done <-chan error, sig syscall.Signal) {
	pid := s.child.Load()
	s.signal(sig)
	grace := s.cfg.Grace
	if !s.stopBy.IsZero() {
		// A budget's stop keeps the grace inside the budget: SIGKILL
		// when it is spent, not --stop-grace after SIGTERM.
		grace = min(grace, max(s.stopBy.Sub(s.cfg.Clock.Now()), 0))
	}
	select {
	case <-done:
	case <-wallAfter(grace): // a process exiting takes real time
		s.signal(syscall.SIGKILL)
		<-done
	}
	s.child.Store(0)
	s.Metrics.childUp.Store(0)
	if pid > 0 {
		s.endStrays(int(pid))
	}
}

// preempted handles a notice: ask for a checkpoint now, wait for it within
// the notice, upload it, stop the command.
func (s *Supervisor) preempted(ctx context.Context, n preempt.Notice, done <-chan error) Exit {
	s.Metrics.notices.Add(1)
	what := i18n.Textf("preemption notice")
	if n.Event != "" {
		what = i18n.Textf("%s notice", n.Event)
	}
	s.cfg.Log("%s from %s (%s): asking the command for a checkpoint", what, n.Cloud, n.Detail)
	s.cfg.Event("notice", i18n.Textf("%s from %s (%s): saving a checkpoint and stopping the command", what, n.Cloud, n.Detail))
	f := s.checkpointAndStop(ctx, n.Left, done)
	safe := f.committed
	// Only a machine whose newest checkpoint is in the store may be let go
	// early; otherwise the time to NotBefore is left for nothing but the
	// chance that a disk kept by a deallocation holds it.
	if n.Approve != nil && safe {
		if err := n.Approve(ctx); err != nil {
			s.cfg.Log("could not let %s start the event early (it starts at its time): %v", n.Cloud, err)
		} else {
			s.cfg.Log("told %s the machine may go now", n.Cloud)
		}
	}
	if n.Event != "" {
		return Exit{Code: s.endCode(ExitStopped, f), Stored: s.stored(f), Reason: i18n.Textf("%s scheduled (%s): %s, command stopped; run the same gpurent run again once the machine is back, or on another", n.Event, n.Cloud, s.finalWords(f))}
	}
	return Exit{Code: s.endCode(ExitStopped, f), Stored: s.stored(f), Reason: i18n.Textf("preempted (%s): %s, command stopped; run the same gpurent run again to resume, here once the machine is back or on another", n.Cloud, s.finalWords(f))}
}

// untilCame stops the command at Config.Until, as a notice of
// UntilWindow would.
func (s *Supervisor) untilCame(ctx context.Context, done <-chan error) Exit {
	s.stopBy = s.cfg.Until.Add(s.cfg.UntilWindow)
	s.cfg.Log("%s: asking the command for a checkpoint, then stopping it", s.cfg.UntilWhy)
	s.cfg.Event("budget", i18n.Textf("%s: saving a checkpoint and stopping the command", s.cfg.UntilWhy))
	f := s.checkpointAndStop(ctx, s.cfg.UntilWindow, done)
	return Exit{Code: s.endCode(ExitStopped, f), Stored: s.stored(f), Reason: i18n.Textf("%s: %s, command stopped; run the same gpurent run again to go on", s.cfg.UntilWhy, s.finalWords(f))}
}

// idleCame stops an idle command as a notice of IdleWindow would.
func (s *Supervisor) idleCame(ctx context.Context, why i18n.Text, done <-chan error) Exit {
	s.cfg.Log("%s: asking the command for a checkpoint, then stopping it", why)
	s.cfg.Event("idle", i18n.Textf("%s: saving a checkpoint and stopping the command", why))
	f := s.checkpointAndStop(ctx, s.cfg.IdleWindow, done)
	return Exit{Code: s.endCode(ExitStopped, f), Idle: true, Stored: s.stored(f),
		Reason: i18n.Textf("%s: %s, command stopped", why, s.finalWords(f))}
}

// stored says whether f leaves the newest complete checkpoint in the store.
func (s *Supervisor) stored(f final) bool { return s.cfg.Store != nil && f.found && f.committed }

// checkpointAndStop asks the command for a checkpoint, waits for it within
// left (the time a notice gives), stops the command and uploads the newest
// checkpoint.
func (s *Supervisor) checkpointAndStop(ctx context.Context, left time.Duration, done <-chan error) final {
	// The command was asked for a checkpoint and the notice is short (30 s
	// on GCP and Azure): a plain file no process holds open for writing
	// needs only a second of quiet now, not --quiet.
	s.uploading.Lock()
	s.det.Quiet = min(s.det.Quiet, time.Second)
	s.uploading.Unlock()
	before, _, _ := s.det.Newest()
	deadline := wallNow().Add(max(left-5*time.Second, left/2)) // the notice is the world's
	if asked := s.askForCheckpoint(); asked == 0 {
		// Nothing can checkpoint on demand: a checkpoint being written
		// may still finish, so the command runs on for half the notice,
		// and the other half is left to stop it and upload.
		deadline = wallNow().Add(left / 2)
		s.cfg.Log("the command runs on for %v, so that a checkpoint it is writing can finish", (left / 2).Round(time.Second))
	}
	exited := false
	for wallNow().Before(deadline) && !exited {
		c, ok, _ := s.det.Newest()
		if ok && c.Signature() != before.Signature() {
			break
		}
		select {
		case <-wallAfter(s.cfg.Poll / 4):
		case <-done:
			// Saved and exited, as SLURM-style handlers do: done is
			// drained, so stopChild must not wait on it again.
			exited = true
		}
	}
	if exited {
		pid := s.child.Load()
		s.signal(syscall.SIGTERM) // what the command started and left behind
		s.child.Store(0)
		s.Metrics.childUp.Store(0)
		if pid > 0 {
			s.endStrays(int(pid))
		}
	} else {
		s.stopChild(done, syscall.SIGTERM)
	}
	return s.finalUpload(ctx)
}

// finalWords says what the last upload achieved, for an exit reason: a
// message that said "uploaded" after a failed upload, or with no store,
// would send someone to release a machine that holds the only copy.
func (s *Supervisor) finalWords(f final) i18n.Text {
	switch {
	case !f.found:
		return i18n.Textf("no complete checkpoint was written")
	case s.cfg.Store == nil:
		return i18n.Textf("no store given: checkpoints are only in %s", s.cfg.CkptDir)
	case f.committed && f.id != "":
		// Named, so that the end's notification says what to pull.
		return i18n.Textf("newest complete checkpoint uploaded (%s, as %s)", f.name, f.id)
	case f.committed:
		return i18n.Textf("newest complete checkpoint uploaded")
	default:
		return i18n.Textf("the newest checkpoint is NOT in the store (its upload failed, see above): it is only in %s", s.cfg.CkptDir)
	}
}

// endCode is the status of a run that ended as it should (the command
// finished, or stopped on a notice): code, unless a store was given and
// the newest complete checkpoint is not in it.
func (s *Supervisor) endCode(code int, f final) int {
	if s.cfg.Store != nil && f.found && !f.committed {
		return ExitNotStored
	}
	return code
}

// askForCheckpoint sends the checkpoint signal to each process of the
// command's group that catches it, and returns how many got it. Where /proc
// cannot tell, the whole group gets it, as before there was a /proc to ask.
func (s *Supervisor) askForCheckpoint() int {
	pid := int(s.child.Load())
	if pid <= 0 {
		return 0
	}
	sig := s.cfg.CheckpointSignal
	pids, members, err := groupCatching("/proc", pid, sig)
	if err != nil {
		s.cfg.Log("cannot tell which processes handle %v (%v): sending it to all of them", sig, err)
		s.signal(sig)
		return 1
	}
	if members == 0 {
		return 0 // gone already
	}
	if len(pids) == 0 {
		s.cfg.Log("the command does not handle %v, so it cannot checkpoint on demand (docs/run.md shows the few lines that let it); it is not sent, since it would kill the command", sig)
		return 0
	}
	for _, p := range pids {
		kill(p, sig)
	}
	if len(pids) < members {
		s.cfg.Log("sent %v to the %d of %d processes that handle it", sig, len(pids), members)
	}
	return len(pids)
}
