//go:build unix

package runner

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/term"

	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/report"
	"github.com/gpurent/gpurent/internal/supervise"
)

// statusLine keeps one line at the bottom of the terminal for gpurent run,
// the way apt shows its progress: the lines above scroll (a scroll region),
// the bottom one is redrawn every second. The training command keeps the
// terminal as its own stdout and stderr, so its progress bars and
// buffering are unchanged.
type statusLine struct {
	mu   sync.Mutex
	w    io.Writer
	rows int
	cols int
	text func(cols int) string
	stop chan struct{}
	done chan struct{}
}

// termSize is the terminal's height and width, zero when f is no terminal.
func termSize(f *os.File) (rows, cols int) {
	var ws struct{ Row, Col, X, Y uint16 }
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), uintptr(syscall.TIOCGWINSZ), uintptr(unsafe.Pointer(&ws)))
	if errno != 0 {
		return 0, 0
	}
	return int(ws.Row), int(ws.Col)
}

// startStatus shows text on the bottom line of f when f is a terminal
// that can take it; otherwise it returns nil and nothing is drawn.
func startStatus(f *os.File, text func(cols int) string) *statusLine {
	if t := os.Getenv("TERM"); t == "" || t == "dumb" || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	rows, cols := termSize(f)
	if rows < 5 {
		return nil
	}
	s := &statusLine{w: f, rows: rows, cols: cols, text: text, stop: make(chan struct{}), done: make(chan struct{})}
	s.setup()
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	go func() {
		defer close(s.done)
		defer signal.Stop(winch)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-winch:
				if r, c := termSize(f); r >= 5 {
					s.mu.Lock()
					s.rows, s.cols = r, c
					s.mu.Unlock()
					s.setup()
				}
			case <-t.C:
				s.draw()
			}
		}
	}()
	return s
}

// setup makes room at the bottom and confines scrolling to the rows above.
func (s *statusLine) setup() {
	s.mu.Lock()
	defer s.mu.Unlock()
	io.WriteString(s.w, "\n"+scrollRegion(s.rows)+"\x1b[1A")
	io.WriteString(s.w, statusSeq(s.rows, s.text(s.cols)))
}

func (s *statusLine) draw() {
	s.mu.Lock()
	defer s.mu.Unlock()
	io.WriteString(s.w, statusSeq(s.rows, s.text(s.cols)))
}

// end clears the line and gives the whole terminal back.
func (s *statusLine) end() {
	if s == nil {
		return
	}
	close(s.stop)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintf(s.w, "\x1b7\x1b[%d;1H\x1b[2K\x1b[r\x1b8", s.rows)
}

// scrollRegion saves the cursor, limits scrolling to rows 1..rows-1 and
// restores the cursor.
func scrollRegion(rows int) string { return fmt.Sprintf("\x1b7\x1b[1;%dr\x1b8", rows-1) }

// statusSeq draws text on the bottom row, leaving the cursor where the
// scrolling output needs it. One write, so it does not split another
// process's line more than once.
func statusSeq(rows int, text string) string {
	return fmt.Sprintf("\x1b7\x1b[%d;1H\x1b[2K\x1b[7m%s\x1b[0m\x1b8", rows, text)
}

// statusText is the run's state in one line, cut to cols columns; cost
// is what the machine has cost since gpurent started ("" without
// --price).
func statusText(tr *i18n.Printer, s supervise.Snapshot, gpus, cost string, cols int) string {
	child := tr.T("training up")
	if !s.ChildUp {
		child = tr.T("training down")
	}
	parts := []string{"gpurent: " + child, tr.Tf("restarts %d", s.Restarts)}
	if s.LastCommit.IsZero() {
		parts = append(parts, tr.T("no checkpoint committed yet"))
	} else {
		parts = append(parts, tr.Tf("last commit %s ago", report.Duration(s.AtRisk)))
	}
	parts = append(parts, tr.Tf("at risk %s", report.Duration(s.AtRisk)), tr.Tf("%s uploaded", report.Bytes(s.Bytes)))
	if s.ChildUp && gpus != "" {
		parts = append(parts, gpus)
	}
	if s.ChildUp && s.Silent >= time.Minute {
		// A trainer prints every few steps: a minute without a line is
		// worth a glance (it may hang; see --silence).
		parts = append(parts, tr.Tf("no output for %s", report.Duration(s.Silent)))
	}
	if s.UploadErrors > 0 {
		parts = append(parts, tr.Tf("%d upload errors", s.UploadErrors))
	}
	if cost != "" {
		parts = append(parts, "≈ "+cost)
	}
	if s.Notices > 0 {
		parts = append(parts, tr.T("PREEMPTION NOTICE"))
	}
	line := strings.Join(parts, " · ")
	if cols > 0 && report.Width(line) > cols {
		// Cut by display columns: a CJK character takes two.
		var b strings.Builder
		w := 0
		for _, r := range line {
			if w += report.Width(string(r)); w > cols {
				break
			}
			b.WriteRune(r)
		}
		line = b.String()
	}
	return line
}

// progressText is a progress notification's line: how long the run has
// gone on, whether the command is up, its restarts, the age of the last
// committed checkpoint, what was uploaded, a silence worth a look, and
// with --price what the machine has cost so far.
func progressText(s supervise.Snapshot, ran time.Duration, cost string) i18n.Text {
	first := i18n.Textf("training for %s", report.Duration(ran))
	if !s.ChildUp {
		first = i18n.Textf("%s in, the command is not running (between restarts)", report.Duration(ran))
	}
	parts := []i18n.Text{first, i18n.Plural(int(s.Restarts), "%d restart", "%d restarts")}
	if s.LastCommit.IsZero() {
		parts = append(parts, i18n.Textf("no checkpoint in the store yet"))
	} else {
		parts = append(parts, i18n.Textf("last checkpoint committed %s ago", report.Duration(s.AtRisk)), i18n.Textf("%s uploaded", report.Bytes(s.Bytes)))
	}
	if s.UploadErrors > 0 {
		parts = append(parts, i18n.Plural(int(s.UploadErrors), "%d upload error", "%d upload errors"))
	}
	if s.ChildUp && s.Silent >= time.Minute {
		parts = append(parts, i18n.Textf("no output for %s", report.Duration(s.Silent)))
	}
	if cost != "" {
		parts = append(parts, i18n.Textf("about %s so far", cost))
	}
	return i18n.Join(parts, "; ")
}
