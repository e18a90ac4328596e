package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/gpurent/gpurent/internal/xid"
)

// kernelLogPath is the kernel log gpurent reads the NVIDIA driver's Xid
// reports from: /dev/kmsg, or $GPURENT_KMSG, a file of records in the same
// format, for tests.
func kernelLogPath() string {
	if p := os.Getenv("GPURENT_KMSG"); p != "" {
		return p
	}
	return xid.DefaultPath
}

// xidWatch follows the kernel log while gpurent run runs: the NVIDIA
// driver's Xid reports say what a failing command's output often does not
// (a GPU fallen off the bus, an uncorrectable memory error, an NVLink
// fault), and they are there even when NVML no longer answers.
type xidWatch struct {
	mu    sync.Mutex
	r     *xid.Reader
	logf  func(string, ...any)
	event func(kind, text string)
	// unexplained are the reports since the last failure was explained.
	unexplained []xid.Event
	cancel      func()
	done        chan struct{}
}

// startXidWatch reads what the kernel logs from now on, every few seconds.
// Where the log cannot be read it says so only when the NVIDIA driver is
// loaded and only permission stands in the way (a container without
// /dev/kmsg is the rule, not news).
func startXidWatch(ctx context.Context, path string, logf func(string, ...any), event func(kind, text string)) *xidWatch {
	w := &xidWatch{logf: logf, event: event, cancel: func() {}, done: make(chan struct{})}
	r, err := xid.Open(path)
	if err == nil {
		err = r.SeekEnd()
		if err != nil {
			r.Close()
		}
	}
	if err != nil {
		close(w.done)
		if _, drv := os.Stat("/proc/driver/nvidia"); drv == nil && errors.Is(err, fs.ErrPermission) {
			logf("GPU faults (Xid) are not watched: %v", err)
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
			case <-t.C:
				w.mu.Lock()
				w.poll()
				w.mu.Unlock()
			}
		}
	}()
	return w
}

// poll reads what was logged since the last poll; w.mu is held.
func (w *xidWatch) poll() {
	evs, err := w.r.Read()
	if err != nil {
		w.logf("GPU faults (Xid): %v", err)
	}
	for _, e := range evs {
		in := xid.Lookup(e.Code)
		if in.Action == xid.Cleanup {
			continue // the driver tidying up after a killed process or another Xid
		}
		w.unexplained = append(w.unexplained, e)
		if in.Severity == xid.Benign {
			continue // the program's own error: named when it fails
		}
		text := fmt.Sprintf("the NVIDIA driver reported %s: %s", e, in.Words)
		w.logf("warning: %s", text)
		if w.event != nil {
			w.event("gpu_xid", text)
		}
	}
}

// causes are the Xid reports since the last failure, as causes of this
// one (supervise.Config.Explain), the worst first; each code and GPU once.
func (w *xidWatch) causes() []string {
	if w == nil || w.r == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.poll() // the report is logged as the command dies
	evs := w.unexplained
	w.unexplained = nil
	slices.SortStableFunc(evs, func(a, b xid.Event) int {
		return int(xid.Lookup(b.Code).Severity) - int(xid.Lookup(a.Code).Severity)
	})
	var out []string
	seen := map[string]bool{}
	for _, e := range evs {
		key := fmt.Sprint(e.Code, e.Bus)
		if seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, fmt.Sprintf("the NVIDIA driver reported %s (%s)", e, xid.Lookup(e.Code).Words))
	}
	return out
}

// stop ends the watch and lets go of the log.
func (w *xidWatch) stop() {
	w.cancel()
	<-w.done
	if w.r != nil {
		w.r.Close()
	}
}
