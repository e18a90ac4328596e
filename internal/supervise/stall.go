package supervise

import (
	"slices"
	"strings"
	"time"

	"github.com/gpurent/gpurent/internal/i18n"
)

// progress is what stall detection knows: the newest complete checkpoint
// seen, when the command last made one (or started), and the intervals
// between its checkpoints.
type progress struct {
	sig     string
	at      time.Time       // the last new checkpoint, or the command's start
	startAt time.Time       // the command's (re)start
	gaps    []time.Duration // the last intervals between new checkpoints of one start
	said    bool            // this stall was reported

	// Output, where Config.Output tells it: the command's last output of
	// this start, how many times it was seen to print (every start), the
	// longest silence between its outputs of one start, and whether the
	// present silence was reported.
	outAt     time.Time
	outs      int
	longest   time.Duration
	quietSaid bool
	idleSaid  bool // the command is being stopped as idle
}

// idleSince is when the command last showed life, a busy GPU counted.
func (p *progress) idleSince(busy time.Time) time.Time {
	if t := p.silentSince(); t.After(busy) {
		return t
	}
	return busy
}

// started resets progress for a new start of the command.
func (p *progress) started(now time.Time) {
	p.at, p.startAt, p.said = now, now, false
	p.outAt, p.quietSaid = time.Time{}, false
}

// heard records the time of the command's last output, as Config.Output
// tells it when asked (every Poll, so a silence is known to the poll).
// Output from before this start is the previous command's.
func (p *progress) heard(last time.Time) {
	if !last.After(p.outAt) || last.Before(p.startAt) {
		return
	}
	if !p.outAt.IsZero() {
		p.longest = max(p.longest, last.Sub(p.outAt))
	}
	p.outAt, p.outs, p.quietSaid = last, p.outs+1, false
}

// silentSince is when the command last showed life: its last output, its
// last new checkpoint, or its start.
func (p *progress) silentSince() time.Time {
	if p.outAt.After(p.at) {
		return p.outAt
	}
	return p.at
}

// silenceLimit is how long without output (or a new checkpoint) makes a
// stall: --silence when given, else, once the command has printed ten
// times, three times its longest silence so far and at least 30 min (a
// first evaluation may print nothing for longer than any step did), else
// none: a command that prints a few lines and then trains quietly is not
// hanging.
func (p *progress) silenceLimit(silence time.Duration) time.Duration {
	if silence > 0 {
		return silence
	}
	if p.outs >= 10 {
		return max(3*p.longest, 30*time.Minute)
	}
	return 0
}

// saw records the newest complete checkpoint; a new signature is
// progress, and reported.
func (p *progress) saw(c Candidate, now time.Time) bool {
	sig := c.Signature()
	if sig == p.sig {
		return false
	}
	p.sig = sig
	if !p.startAt.IsZero() && p.at.After(p.startAt) {
		p.gaps = append(p.gaps, now.Sub(p.at))
		if len(p.gaps) > 16 {
			p.gaps = p.gaps[1:]
		}
	}
	p.at, p.said = now, false
	return true
}

// usual is the median interval between checkpoints, once three are known.
func (p *progress) usual() time.Duration {
	if len(p.gaps) < 3 {
		return 0
	}
	g := slices.Clone(p.gaps)
	slices.Sort(g)
	return g[len(g)/2]
}

// limit is how long without a new checkpoint makes a stall: --stall when
// given, else three times the usual interval and at least 30 min (a
// checkpoint every 5 min says nothing about a 20 min evaluation), else
// none until the usual interval is known.
func (p *progress) limit(stall time.Duration) time.Duration {
	if stall > 0 {
		return stall
	}
	if u := p.usual(); u > 0 {
		return max(3*u, 30*time.Minute)
	}
	return 0
}

// checkStall reports a command that has made no new checkpoint, or
// printed nothing, for long: with --stall or --silence it is stopped and
// restarted; without, it is said once.
func (s *Supervisor) checkStall(now time.Time) {
	if s.child.Load() == 0 {
		return
	}
	var lastOut time.Time
	if s.cfg.Output != nil {
		lastOut = s.cfg.Output()
	}
	s.mu.Lock()
	p := &s.progress
	p.heard(lastOut)
	if !p.outAt.IsZero() {
		s.Metrics.lastOutput.Store(p.outAt.Unix())
	}
	// A stall is said once per silence: the checkpoint rule and the output
	// rule see the same hang, and the first to see it speaks. --stall and
	// --silence act even after a warning.
	var why, warn i18n.Text
	if idle, limit := now.Sub(p.at), p.limit(s.cfg.Stall); limit > 0 && idle >= limit && !p.said {
		switch {
		case s.cfg.Stall > 0:
			why = i18n.Textf("no new checkpoint for %v (--stall %v)", idle.Round(time.Second), s.cfg.Stall)
		case !p.quietSaid:
			warn = i18n.Textf("no new checkpoint for %v, while they came every %v until now: the command may hang (an NCCL collective waiting on a dead rank, a stuck DataLoader) while the GPUs are billed; --stall DURATION restarts it then",
				idle.Round(time.Second), p.usual().Round(time.Second))
		}
		p.said = !why.IsZero() || !warn.IsZero()
	}
	if idle, limit := now.Sub(p.silentSince()), p.silenceLimit(s.cfg.Silence); s.cfg.Output != nil && why.IsZero() && limit > 0 && idle >= limit && !p.quietSaid {
		switch {
		case s.cfg.Silence > 0:
			why = i18n.Textf("no output and no new checkpoint for %v (--silence %v)", idle.Round(time.Second), s.cfg.Silence)
		case !p.said:
			warn = i18n.Textf("no output and no new checkpoint for %v, while it never went %v without printing until now: the command may hang (an NCCL collective waiting on a dead rank, a stuck DataLoader) while the GPUs are billed; --silence DURATION restarts it then",
				idle.Round(time.Second), p.longest.Round(time.Second))
		}
		p.quietSaid = !why.IsZero() || !warn.IsZero()
	}
	if !why.IsZero() {
		p.said, p.quietSaid = true, true // the command is being stopped: once is enough
	}
	var idle i18n.Text
	if s.cfg.IdleStop > 0 && s.cfg.Output != nil && why.IsZero() && !p.idleSaid {
		var busy time.Time
		if s.cfg.Busy != nil {
			busy = s.cfg.Busy()
		}
		if since := p.idleSince(busy); now.Sub(since) >= s.cfg.IdleStop {
			p.idleSaid = true
			idle = i18n.Textf("idle for %v: no output, no new checkpoint and no busy GPU (--idle-stop %v)", now.Sub(since).Round(time.Second), s.cfg.IdleStop)
		}
	}
	s.mu.Unlock()
	if !idle.IsZero() {
		select {
		case s.idle <- idle:
		default:
		}
		return
	}
	switch {
	case !why.IsZero():
		s.Metrics.stalls.Add(1)
		s.cfg.Event("stall", i18n.Textf("%s: restarting the command from its newest checkpoint", why))
		select {
		case s.stalled <- why:
		default:
		}
	case !warn.IsZero():
		s.Metrics.stalls.Add(1)
		s.cfg.Log("warning: %s", warn)
		s.cfg.Event("stall", warn)
	}
}

// lookDeeper warns, once, when --ckpt-dir itself holds no checkpoint but
// one sits further down (Lightning's lightning_logs/version_N/checkpoints/):
// otherwise a run believed protected uploads nothing for weeks. Until a
// checkpoint counts or it has warned, it looks every 5 s, and always when
// force is set (the command has ended).
func (s *Supervisor) lookDeeper(force bool) {
	if s.commitCount() > 0 {
		return
	}
	s.mu.Lock()
	if s.deeperSaid || !force && s.since(s.deeperAt) < 5*time.Second {
		s.mu.Unlock()
		return
	}
	s.deeperAt = s.now()
	s.mu.Unlock()
	s.uploading.Lock() // the detector's settings are the uploader's
	cs, err := s.det.Scan()
	p := ""
	if err == nil && len(cs) == 0 {
		// File systems stamp times from a coarser clock than time.Now
		// (Linux's lags by up to a jiffy, ext3 keeps seconds, FAT two,
		// NFS the server's): a file the command wrote at once could
		// otherwise look older than the run.
		p = s.det.Deeper(20000, time.Unix(0, s.Metrics.started.Load()).Add(-2*time.Second))
	}
	s.uploading.Unlock()
	if p == "" {
		return
	}
	s.mu.Lock()
	said := s.deeperSaid
	s.deeperSaid = true
	s.mu.Unlock()
	if said {
		return
	}
	what := i18n.Textf("entries")
	if s.det.Glob != "" {
		what = i18n.Textf("names matching --glob %q", s.det.Glob)
	}
	var hint i18n.Text
	if strings.Contains(p, "lightning_logs") {
		hint = i18n.Textf(" (for Lightning, ModelCheckpoint(dirpath=...): its default, lightning_logs/version_N/checkpoints, moves with every start)")
	}
	s.cfg.Log("warning: nothing in %s is a checkpoint, so nothing is uploaded: gpurent looks only at the %s directly in --ckpt-dir, and %s is further down. Point --ckpt-dir at the directory the checkpoints are saved in%s", s.cfg.CkptDir, what, p, hint)
}
