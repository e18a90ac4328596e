//go:build unix

// Package kernwatch follows the kernel log while gpurent run runs: the
// NVIDIA driver's Xid reports and the kernel's hardware errors say what a
// failing command's output often does not (a GPU fallen off the bus, an
// uncorrectable memory error, a disk failing writes), and they are there
// even when NVML no longer answers. Where the log cannot be read, as in
// most rented containers, the Xids come from NVML's events instead (the
// host's own hardware errors are then out of sight).
package kernwatch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/kernlog"
	"github.com/gpurent/gpurent/internal/mounts"
	"github.com/gpurent/gpurent/internal/probe"
)

// Watch is one watch of the kernel log, or of NVML's Xid events.
type Watch struct {
	mu sync.Mutex
	r  *kernlog.Reader
	// nvml is set when the Xids come from NVML's events; flush asks its
	// reader to take what NVML holds now and answers once it has.
	nvml  bool
	flush chan chan struct{}
	logf  func(string, ...any)
	event func(kind string, text i18n.Text)
	// unexplained is what was logged since the last failure was explained.
	unexplained kernlog.Log
	// warned is when each fault (kind, level, device) and Xid (code, GPU)
	// was last said: a failing disk logs an error with every write, a
	// failing NVLink an Xid a second.
	warned map[string]time.Time
	// xids and faults count what was logged while gpurent ran, by Xid
	// code and by fault kind and level, for the metrics.
	xids   map[int]int
	faults map[[2]string]int
	// ckptDisk is the device the checkpoint directory's file system is
	// mounted from ("/dev/nvme0n1p1"), to name a failing disk as that one.
	ckptDisk   string
	readFailed bool // a read of the log failed: said once
	cancel     func()
	done       chan struct{}
}

// Options say what to watch and where to tell what is seen.
type Options struct {
	// Path is the kernel log (kernlog.Path()).
	Path string
	// NVMLLibrary is the NVML to load where the log cannot be read, "" for
	// the driver's.
	NVMLLibrary string
	// CkptDir is the checkpoint directory: a failing disk that holds it is
	// named as that one.
	CkptDir string
	// Log says a line; Event, when set, is told of each fault said
	// (kinds host_fault and gpu_xid).
	Log   func(format string, a ...any)
	Event func(kind string, text i18n.Text)
}

// Start reads what the kernel logs from now on, every few seconds; where
// the log cannot be read, the Xids NVML's events deliver. That the log
// cannot be read is said only when neither source works, the NVIDIA
// driver is there and only permission stands in the way (a container
// without /dev/kmsg is the rule, not news).
func Start(ctx context.Context, o Options) *Watch {
	path, nvmlLibrary, ckptDir, logf := o.Path, o.NVMLLibrary, o.CkptDir, o.Log
	w := &Watch{logf: logf, event: o.Event, warned: map[string]time.Time{}, xids: map[int]int{}, faults: map[[2]string]int{},
		cancel: func() {}, done: make(chan struct{}), flush: make(chan chan struct{})}
	if abs, err := filepath.Abs(ckptDir); err == nil && ckptDir != "" {
		if m, ok := mounts.Read("/").Find(abs); ok {
			w.ckptDisk = m.Source
		}
	}
	r, err := kernlog.Open(path)
	if err == nil {
		err = r.SeekEnd()
		if err != nil {
			r.Close()
		}
	}
	if err != nil {
		xw, nvmlErr := probe.OpenXidWatch(nvmlLibrary)
		if xw != nil {
			w.nvml = true
			ctx, w.cancel = context.WithCancel(ctx)
			go w.readNVML(ctx, xw)
			return w
		}
		close(w.done)
		if nvmlErr != nil {
			logf("GPU faults (Xid) are not watched: %v; NVML: %v", err, nvmlErr)
		} else if _, drv := os.Stat("/proc/driver/nvidia"); drv == nil && errors.Is(err, fs.ErrPermission) {
			logf("GPU and hardware faults (Xid, the kernel log) are not watched: %v", err)
		}
		return w
	}
	w.r = r
	ctx, w.cancel = context.WithCancel(ctx)
	go func() {
		defer close(w.done)
		t := time.NewTicker(2 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-t.C:
				w.mu.Lock()
				w.poll(now)
				w.mu.Unlock()
			}
		}
	}()
	return w
}

// maxUnexplained is how many Xid reports wait for a failure to name them
// in, the newest.
const maxUnexplained = 100

// faultRepeat is how long a fault or Xid already said stays unsaid.
const faultRepeat = 10 * time.Minute

// nvmlWait is how long one wait for NVML's events lasts: how soon the
// reader sees a stop or a flush.
const nvmlWait = 500 * time.Millisecond

// readNVML takes NVML's Xid events as they come until ctx ends or NVML
// fails to wait (a GPU fallen off the bus among the reasons: the GPU watch
// says that one).
func (w *Watch) readNVML(ctx context.Context, xw *probe.XidWatch) {
	defer close(w.done)
	defer xw.Close()
	take := func(e kernlog.Xid) {
		w.mu.Lock()
		w.xid(e, time.Now())
		w.mu.Unlock()
	}
	for {
		wait := nvmlWait
		var reply chan struct{}
		select {
		case <-ctx.Done():
			return
		case reply = <-w.flush:
			wait = 0 // only what NVML holds already
		default:
		}
		err := xw.Take(wait, take)
		if reply != nil {
			close(reply)
		}
		if err != nil {
			w.logf("GPU faults (Xid) are no longer watched: %v", err)
			break
		}
	}
	// What came is still named and counted; nothing more will.
	for {
		select {
		case <-ctx.Done():
			return
		case reply := <-w.flush:
			close(reply)
		}
	}
}

// poll reads what was logged since the last poll; w.mu is held.
func (w *Watch) poll(now time.Time) {
	got, err := w.r.Read()
	if err != nil && !w.readFailed {
		w.readFailed = true // said once, not every poll
		w.logf("the kernel log: %v", err)
	}
	for _, e := range got.Xids {
		w.xid(e, now)
	}
	for _, f := range got.Faults {
		w.faults[[2]string{f.Kind, f.Level}] += f.Count
		if f.Severity() == kernlog.Benign {
			continue // corrected PCIe errors: a count, not news
		}
		w.unexplained.Faults = kernlog.AddFault(w.unexplained.Faults, f)
		if w.said(f.Kind+" "+f.Level+" "+f.Device, now) {
			continue
		}
		w.say("host_fault", i18n.Textf("the kernel reported %s%s (%q): %s", f.Text(), w.where(f), f.Message, f.Words()))
	}
}

// xid takes one Xid report, from the log or NVML; w.mu is held.
func (w *Watch) xid(e kernlog.Xid, now time.Time) {
	w.xids[e.Code]++
	in := kernlog.LookupXid(e.Code)
	if in.Action == kernlog.Cleanup {
		return // the driver tidying up after a killed process or another Xid
	}
	if len(w.unexplained.Xids) == maxUnexplained {
		// Days of a program's Xids with no failure to name them in.
		w.unexplained.Xids = w.unexplained.Xids[1:]
	}
	w.unexplained.Xids = append(w.unexplained.Xids, e)
	// A program's own error is named when the program fails; a fault
	// already said is said again after faultRepeat.
	if in.Severity == kernlog.Benign || w.said(fmt.Sprint("xid ", e.Code, " ", e.Bus), now) {
		return
	}
	w.say("gpu_xid", i18n.Textf("the NVIDIA driver reported %s: %s", e, in.Words))
}

// flushNVML has the NVML reader take the events NVML holds now, waiting
// for it at most a few seconds: the Xid that kills a command is
// reported as it dies.
func (w *Watch) flushNVML() {
	reply := make(chan struct{})
	timeout := time.After(2 * time.Second)
	select {
	case w.flush <- reply:
	case <-w.done:
		return
	case <-timeout:
		return
	}
	select {
	case <-reply:
	case <-timeout:
	}
}

// where names a failing disk as the checkpoints' one, when it is.
func (w *Watch) where(f kernlog.Fault) i18n.Text {
	if (f.Kind == kernlog.Disk || f.Kind == kernlog.Filesystem) && kernlog.SameDisk(f.Device, w.ckptDisk) {
		return i18n.Textf(", the disk of --ckpt-dir")
	}
	return i18n.Text{}
}

// said tells whether what key names was said less than faultRepeat ago,
// and if not, that it is said now.
func (w *Watch) said(key string, now time.Time) bool {
	if last, ok := w.warned[key]; ok && now.Sub(last) < faultRepeat {
		return true
	}
	w.warned[key] = now
	return false
}

func (w *Watch) say(kind string, text i18n.Text) {
	w.logf("warning: %s", text)
	if w.event != nil {
		w.event(kind, text)
	}
}

// Causes are the Xid reports and hardware faults since the last failure,
// as causes of this one (supervise.Config.Explain), the worst first; each
// Xid code and GPU once.
func (w *Watch) Causes() []i18n.Text {
	if w == nil || (w.r == nil && !w.nvml) {
		return nil
	}
	if w.nvml {
		w.flushNVML() // before the lock, which the reader takes
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.r != nil {
		w.poll(time.Now()) // the report is logged as the command dies
	}
	got := w.unexplained
	w.unexplained = kernlog.Log{}
	type cause struct {
		sev  kernlog.Severity
		text i18n.Text
	}
	var cs []cause
	seen := map[string]bool{}
	for _, e := range got.Xids {
		key := fmt.Sprint(e.Code, e.Bus)
		if seen[key] {
			continue
		}
		seen[key] = true
		in := kernlog.LookupXid(e.Code)
		cs = append(cs, cause{in.Severity, i18n.Textf("the NVIDIA driver reported %s (%s)", e, in.Words)})
	}
	for _, f := range got.Faults {
		cs = append(cs, cause{f.Severity(), i18n.Textf("the kernel reported %s%s (%q: %s)", f.Text(), w.where(f), f.Message, f.Words())})
	}
	slices.SortStableFunc(cs, func(a, b cause) int { return int(b.sev) - int(a.sev) })
	out := make([]i18n.Text, len(cs))
	for i, c := range cs {
		out[i] = c.text
	}
	return out
}

// WriteTo writes the counts in the Prometheus text format: nothing that
// is not watched (a count of 0 there would claim a clean machine): the
// Xids where neither the log nor NVML's events are read, the hardware
// errors where the log is not.
func (w *Watch) WriteTo(out io.Writer) (int64, error) {
	if w == nil || (w.r == nil && !w.nvml) {
		return 0, nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var b strings.Builder
	b.WriteString("# HELP gpurent_kernel_xids_total The NVIDIA driver's Xid reports since gpurent started, by code (from the kernel log, or NVML's events where the log cannot be read).\n# TYPE gpurent_kernel_xids_total counter\n")
	for _, code := range slices.Sorted(maps.Keys(w.xids)) {
		fmt.Fprintf(&b, "gpurent_kernel_xids_total{code=\"%d\"} %d\n", code, w.xids[code])
	}
	if w.r != nil { // only the log has the hardware errors
		b.WriteString("# HELP gpurent_kernel_faults_total Hardware errors the kernel reported since gpurent started (disk I/O, memory, PCIe, machine checks, ext4), by kind and level.\n# TYPE gpurent_kernel_faults_total counter\n")
		for _, k := range slices.SortedFunc(maps.Keys(w.faults), func(a, b [2]string) int { return strings.Compare(a[0]+" "+a[1], b[0]+" "+b[1]) }) {
			fmt.Fprintf(&b, "gpurent_kernel_faults_total{kind=%q,level=%q} %d\n", k[0], k[1], w.faults[k])
		}
	}
	n, err := io.WriteString(out, b.String())
	return int64(n), err
}

// Stop ends the watch and lets go of the log.
func (w *Watch) Stop() {
	w.cancel()
	<-w.done
	if w.r != nil {
		w.r.Close()
	}
}
