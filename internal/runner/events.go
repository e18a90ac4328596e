//go:build unix

package runner

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"time"

	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/notify"
	"github.com/gpurent/gpurent/internal/runlog"
	"github.com/gpurent/gpurent/internal/store"
	"github.com/gpurent/gpurent/internal/tokens"
	"github.com/gpurent/gpurent/internal/usage"
)

// startEvents sends run's events to hook, each naming the run and this
// host; credentials of the formats internal/tokens knows are taken out of
// the command's lines first, since a chat channel is read by more people
// than the machine. end sends the last one, with the exit code (the
// reason is the supervisor's line, or err's when there is one), and waits
// up to 15 s for the queue to empty.
func startEvents(ctx context.Context, hook *notify.Webhook, run string, tr *i18n.Printer, logf func(string, ...any)) (event func(kind string, text i18n.Text, output string), end func(code int, err error, reason i18n.Text, output string)) {
	q := hook.Start(func(format string, a ...any) { logf("notify: %s", i18n.Textf(format, a...)) })
	host, _ := os.Hostname()
	// The text is for the people in the channel: in the user's language,
	// like the lines on the terminal; kind and the rest stay as they are.
	post := func(kind string, text i18n.Text, output string, code *int) {
		q.Post(notify.Event{Kind: kind, Run: run, Host: host, Time: time.Now().UTC(), ExitCode: code,
			Text: tr.Tf("gpurent run %s on %s: %s", run, host, text), Output: tokens.Redact(output)})
	}
	logf("events go to %s (%s)", hook.Where(), hook.Service())
	event = func(kind string, text i18n.Text, output string) { post(kind, text, output, nil) }
	end = func(code int, err error, reason i18n.Text, output string) {
		if err != nil {
			reason = i18n.Textf("%v", err)
		}
		post("end", reason, output, &code)
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
		defer cancel()
		q.Close(ctx)
	}
	return event, end
}

// sameDir reports whether a and b are the same directory, through symlinks.
func sameDir(a, b string) bool {
	ia, err1 := os.Stat(a)
	ib, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(ia, ib)
}

// progressLines is how many of the command's last lines a progress
// notification carries: a progress bar and the lines logged above it.
const progressLines = 3

// tailLines is how many of the command's last lines a notification of a
// restart, a stall or a failed end carries (with --log): a Python
// traceback's last frames and its error.
const tailLines = 12

// logSegment is the most one shipment of the log holds: a store request of
// a size every backend takes in one piece.
const logSegment = 8 << 20

// openOutput opens --log: the command's output is copied there as it is
// shown.
func openOutput(stdoutW, stderrW io.Writer, path string) (*runlog.Output, error) {
	if strings.HasSuffix(path, string(os.PathSeparator)) {
		return nil, usage.Errorf("--log %s: want a file, not a directory", path)
	}
	stdout, ok1 := stdoutW.(*os.File)
	stderr, ok2 := stderrW.(*os.File)
	if !ok1 || !ok2 {
		return nil, i18n.Errorf("--log: gpurent's output is not a file")
	}
	o, err := runlog.Open(runlog.Options{Path: path, Stdout: stdout, Stderr: stderr})
	if err != nil {
		return nil, usage.Errorf("--log: %v", err)
	}
	return o, nil
}

// finishLog stops the copying and ships what is left of the log, for up to
// 20 s: what is left is small, a store that takes longer is failing, and
// the end's notification waits for this (on a preempted machine, seconds
// count).
func finishLog(ctx context.Context, out *runlog.Output, ship *runlog.Shipper, sl *storeLog, logf func(string, ...any)) {
	out.Close(2 * time.Second)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 20*time.Second)
	defer cancel()
	if err := ship.Close(ctx); err != nil {
		logf("log: the end of the output is on this machine only: %v", err)
		return
	}
	if sl.w != nil {
		logf("log: in the store as session %s of run %s (gpurent ckpt log --run %s)", sl.w.Session(), sl.run, sl.run)
	}
}

// storeLog is the run's log in the store: a session begun at the first
// shipment, so that a store that does not answer at the start costs the
// log nothing but time.
type storeLog struct {
	st      *store.Store
	run     string
	started time.Time // when the output began, the session's start
	w       *store.LogWriter
}

func (l *storeLog) Append(ctx context.Context, data []byte) error {
	if l.w == nil {
		w, err := l.st.NewLog(ctx, l.run, l.started)
		if err != nil {
			return err
		}
		l.w = w
	}
	return l.w.Append(ctx, data)
}

// previousLog prints the last lines of the run's newest log session when
// another machine shipped it: on a new machine the first question is why
// the last one stopped, and its own last lines (gpurent's among them)
// usually say. Nothing is printed when there is no such log, or the
// store is slow (it never holds up the start for long).
func previousLog(ctx context.Context, st *store.Store, run string, logf func(string, ...any)) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	ss, err := st.LogSessions(ctx, run)
	if err != nil || len(ss) == 0 {
		return
	}
	last := &ss[len(ss)-1]
	if host, _ := os.Hostname(); last.Host == host || last.Segments == 0 {
		return
	}
	const want = 10
	var text string
	first := last.Segments
	for first > 0 && first > last.Segments-3 && strings.Count(text, "\n") <= want {
		first--
		var buf bytes.Buffer
		if err := st.ReadLogSegment(ctx, last, first, &buf); err != nil {
			if !errors.Is(err, store.ErrNoIdentity) { // a machine that only pushes need not read
				logf("the previous session's log (on %s) could not be read: %v", last.Host, err)
			}
			return
		}
		text = buf.String() + text
	}
	shown := runlog.LastLines(text, want, first > 0)
	if shown == "" {
		return
	}
	logf("the previous session of run %s, on %s (started %s, last shipped %s), ended with:", run, last.Host,
		last.Started.Local().Format("2006-01-02 15:04"), last.Updated.Local().Format("2006-01-02 15:04"))
	for _, l := range strings.Split(shown, "\n") {
		logf("  | %s", l)
	}
}
