// Package runlog keeps the console output of the command gpurent run
// supervises: on the terminal as before, in a local file, and, by a
// Shipper, in the checkpoint store, so that the traceback of a machine
// that died with its disk can be read from the next one.
//
// On a terminal the command writes to a pseudo-terminal whose other end
// gpurent copies to the real one, so the command still sees a terminal:
// Python keeps its line buffering, progress bars and colours stay as they
// were. Elsewhere (under nohup, in a container without a TTY) it writes
// to pipes, as it would have written to a file or pipe anyway.
package runlog

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gpurent/gpurent/internal/i18n"
	"golang.org/x/term"
)

// Options say where output goes besides the log file.
type Options struct {
	// Path is the local log file, appended to (created 0600: training
	// output can hold what other accounts should not read).
	Path string
	// Stdout and Stderr are gpurent's own; when Stdout is a terminal the
	// command is given a pseudo-terminal of its size.
	Stdout, Stderr *os.File
}

// Output is the command's side of the log: the files to give it as its
// stdout and stderr, and the copying from them.
type Output struct {
	// Stdout and Stderr are what the command writes to; the same file
	// when it is given a pseudo-terminal.
	Stdout, Stderr *os.File
	// Start is the log file's size when it was opened: a shipper sends
	// what follows.
	Start int64
	// PTY says the command writes to a pseudo-terminal.
	PTY bool
	// Opened is when the log was opened: when this run's part of it
	// began.
	Opened time.Time

	mu     sync.Mutex // orders writes to log
	log    *os.File
	reads  []*os.File // gpurent's ends, closed last
	copies sync.WaitGroup
	winch  chan os.Signal
	closed bool     // log closed: Note writes nothing
	last   []byte   // the command's last tailKeep bytes, for Tail
	lines  []*lines // each stream's line held back from the log
	stop   chan struct{}
	once   sync.Once
	// lastAt is when the command last wrote (unix nanoseconds; 0: not
	// yet), for LastOutput.
	lastAt atomic.Int64
}

// tailKeep is how much of the command's output Tail looks at.
const tailKeep = 16 << 10

// Open opens the log file and the command's outputs, and starts copying.
func Open(opt Options) (*Output, error) {
	// The directory may be one the command makes later (its output
	// directory): make it now, as the command would.
	if err := os.MkdirAll(filepath.Dir(opt.Path), 0o755); err != nil {
		return nil, i18n.Errorf("log file: %w", err)
	}
	// Never through a symlink (one planted at the path would send the
	// command's output, secrets included, wherever it points), and never
	// waiting on a FIFO for a reader.
	log, err := os.OpenFile(opt.Path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|noFollow|nonBlock, 0o600)
	if err != nil {
		if st, lerr := os.Lstat(opt.Path); lerr == nil && st.Mode()&os.ModeSymlink != 0 {
			return nil, i18n.Errorf("log file %s is a symlink: not followed; name the file itself", opt.Path)
		}
		return nil, i18n.Errorf("log file: %w", err)
	}
	st, err := log.Stat()
	if err != nil {
		log.Close()
		return nil, i18n.Errorf("log file: %w", err)
	}
	if !st.Mode().IsRegular() {
		log.Close()
		return nil, i18n.Errorf("log file %s: not a regular file", opt.Path)
	}
	o := &Output{log: log, Start: st.Size(), Opened: time.Now(), stop: make(chan struct{})}
	if term.IsTerminal(int(opt.Stdout.Fd())) {
		if master, slave, err := openPTY(); err == nil {
			o.PTY = true
			o.Stdout, o.Stderr = slave, slave
			o.reads = []*os.File{master}
			o.fitTo(opt.Stdout)
			o.winch = make(chan os.Signal, 1)
			notifyResize(o.winch)
			go func() {
				for range o.winch {
					o.fitTo(opt.Stdout)
				}
			}()
			o.copy(master, opt.Stdout)
			go o.flushEvery(redrawEvery)
			return o, nil
		}
		// No pseudo-terminal (none left, /dev/pts not mounted): pipes
		// still keep the log, with a pipe's buffering.
	}
	for _, dst := range []*os.File{opt.Stdout, opt.Stderr} {
		r, w, err := os.Pipe()
		if err != nil {
			o.Close(0)
			return nil, i18n.Errorf("log: %w", err)
		}
		o.reads = append(o.reads, r)
		if o.Stdout == nil {
			o.Stdout = w
		} else {
			o.Stderr = w
		}
		o.copy(r, dst)
	}
	go o.flushEvery(redrawEvery)
	return o, nil
}

// fitTo gives the pseudo-terminal the size of tty.
func (o *Output) fitTo(tty *os.File) {
	if cols, rows, err := term.GetSize(int(tty.Fd())); err == nil {
		setSize(o.reads[0], rows, cols)
	}
}

// copy copies what the command writes to r to dst and to the log, until
// EOF (a pipe) or EIO (a pseudo-terminal no process holds any more) or
// Close. One goroutine reads, another writes what has gathered since its
// last write: a pseudo-terminal hands out about a kilobyte per read, and
// a write to the terminal for each took twice as long as gathered ones
// (BenchmarkOutput, docs/BENCHMARKS.md).
func (o *Output) copy(r *os.File, dst io.Writer) {
	var (
		mu      sync.Mutex
		cond    = sync.NewCond(&mu)
		pending []byte
		eof     bool
	)
	const most = 1 << 20 // gathered at most: then the command waits, as on a slow terminal
	ln := &lines{}
	o.lines = append(o.lines, ln)
	o.copies.Add(2)
	go func() {
		defer o.copies.Done()
		buf := make([]byte, 32<<10)
		for {
			n, err := r.Read(buf)
			if n > 0 {
				// Stamped as read, not as copied on: a terminal slow
				// to take output is not the command falling silent.
				o.lastAt.Store(time.Now().UnixNano())
			}
			mu.Lock()
			for len(pending) >= most {
				cond.Wait()
			}
			pending = append(pending, buf[:n]...)
			eof = err != nil
			cond.Broadcast()
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	go func() {
		defer o.copies.Done()
		var spare []byte
		for {
			mu.Lock()
			for len(pending) == 0 && !eof {
				cond.Wait()
			}
			chunk, done := pending, eof && len(pending) == 0
			pending = spare[:0]
			cond.Broadcast()
			mu.Unlock()
			if done {
				return
			}
			dst.Write(chunk) // a closed terminal must not stop the log
			o.mu.Lock()
			o.log.Write(ln.add(chunk, time.Now()))
			o.keep(chunk)
			o.mu.Unlock()
			spare = chunk
		}
	}()
}

// flushEvery writes what each stream holds back, every d: the newest state
// of a progress bar, a line a command is slow to end, reach the log (and
// the store) even while the command prints nothing more.
func (o *Output) flushEvery(d time.Duration) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-o.stop:
			return
		case now := <-t.C:
			o.mu.Lock()
			for _, ln := range o.lines {
				o.log.Write(ln.flush(now, false))
			}
			o.mu.Unlock()
		}
	}
}

// LastOutput is when the command last wrote to its stdout or stderr (zero:
// not yet); gpurent's own notes do not count. A trainer that hangs falls
// silent long before its next checkpoint is due.
func (o *Output) LastOutput() time.Time {
	if ns := o.lastAt.Load(); ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}

// keep adds b to the end of o.last, dropping what falls out of tailKeep.
func (o *Output) keep(b []byte) {
	if len(b) >= tailKeep {
		o.last = append(o.last[:0], b[len(b)-tailKeep:]...)
		return
	}
	if drop := len(o.last) + len(b) - tailKeep; drop > 0 {
		o.last = append(o.last[:0], o.last[drop:]...)
	}
	o.last = append(o.last, b...)
}

// ansi matches a terminal's control sequences: colours, cursor moves.
var ansi = regexp.MustCompile(`\x1b(\[[0-9;?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[@-_])`)

// Tail is the command's last n lines as LastLines reads them.
func (o *Output) Tail(n int) string {
	o.mu.Lock()
	raw, cut := string(o.last), len(o.last) == tailKeep
	o.mu.Unlock()
	return LastLines(raw, n, cut)
}

// LastLines is the last n lines of out as a terminal would have shown
// them: colours and cursor moves taken out, of a line redrawn with "\r"
// (a progress bar) its last state, blank lines dropped; cut says out
// begins mid-line, so its first line is dropped. A person reads them in a
// notification or a note, where "\x1b[31m" and forty states of one bar
// are noise.
func LastLines(out string, n int, cut bool) string {
	out = ansi.ReplaceAllString(out, "")
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if i := strings.LastIndex(strings.TrimRight(l, "\r"), "\r"); i >= 0 {
			l = l[i+1:]
		}
		if l = strings.TrimRight(l, "\r \t"); strings.TrimSpace(l) != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) > 0 && cut {
		lines = lines[1:]
	}
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}

// Note writes one of gpurent's own lines to the log (not to the
// terminal: the caller prints it), with the time, so that the log tells
// what gpurent did between the command's lines: a restart, a notice.
func (o *Output) Note(line string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return
	}
	now := time.Now()
	for _, ln := range o.lines {
		o.log.Write(ln.flush(now, true))
	}
	fmt.Fprintf(o.log, "[gpurent %s] %s\n", now.UTC().Format(time.RFC3339), line)
}

// Close stops the copying: it closes the command's ends, waits up to
// drain for what is in flight (a process the command left behind may hold
// them open), then closes gpurent's ends and the log file. Calls after the
// first do nothing.
func (o *Output) Close(drain time.Duration) error {
	var err error
	o.once.Do(func() { err = o.close(drain) })
	return err
}

func (o *Output) close(drain time.Duration) error {
	if o.winch != nil {
		signal.Stop(o.winch)
		close(o.winch)
	}
	if o.Stdout != nil {
		o.Stdout.Close()
	}
	if o.Stderr != nil && o.Stderr != o.Stdout {
		o.Stderr.Close()
	}
	done := make(chan struct{})
	go func() { o.copies.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(drain):
	}
	for _, r := range o.reads {
		r.Close()
	}
	<-done
	close(o.stop)
	o.mu.Lock()
	defer o.mu.Unlock()
	now := time.Now()
	for _, ln := range o.lines {
		o.log.Write(ln.flush(now, true))
	}
	o.closed = true
	return o.log.Close()
}
