package probe

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unsafe"

	"github.com/gpurent/gpurent/internal/kernlog"
)

// NVML's event API, for the Xids a container cannot read in the kernel
// log. Most GPU marketplaces (RunPod, Vast.ai, AutoDL) rent a container
// without /dev/kmsg, where the NVIDIA driver's Xid reports are out of
// sight; NVML delivers the same reports to any process that may use the
// GPU, as NVIDIA's Kubernetes device plugin reads them for its health
// checks. Events are recorded only from registration on, so this tells
// what happens while gpurent watches, never what happened before.
//
// The prototypes, the nvmlEventData_t layout and the event type bits are
// those of NVIDIA's nvml.h (12.4, Debian's libnvidia-ml-dev), which
// nvmlheader_test.go compiles and compares; abi_reference.md does not
// cover this part of NVML.

const (
	nvmlErrTimeout            = 10  // NVML_ERROR_TIMEOUT: no event within the wait
	nvmlEventTypeXidCritical  = 0x8 // nvmlEventTypeXidCriticalError
	nvmlEventNoInstance       = 0xFFFFFFFF
	nvmlEventWaitMaxTimeoutMS = 1 << 30
)

// nvmlEventData is nvmlEventData_t, 32 bytes.
type nvmlEventData struct {
	Device            uintptr
	EventType         uint64
	EventData         uint64 // the Xid, for nvmlEventTypeXidCriticalError
	GPUInstanceID     uint32 // 0xFFFFFFFF: not a MIG instance's
	ComputeInstanceID uint32
}

// XidWatch is an NVML event set recording Xid critical errors on every
// GPU that reports them. Its methods must not be called concurrently
// (NVML's operations on a set are not thread safe).
type XidWatch struct {
	n     *NVML
	owned bool // n was opened for this watch, and Close closes it
	set   uintptr
	buses map[uintptr]string // device handle → PCI address
	wait  string             // nvmlEventSetWait_v2, or the name before it
	// GPUs is how many GPUs the set records; Skipped says, per GPU that
	// it does not, why ("GPU 1: NOT_SUPPORTED").
	GPUs    int
	Skipped []string
}

// WatchXids registers for Xid events on every GPU that supports them.
// It fails, saying why, when no GPU does: NVML's event API is Linux only
// and some platforms (vGPU guests, some consumer cards) refuse it.
func (n *NVML) WatchXids() (*XidWatch, error) {
	wait := "nvmlEventSetWait_v2"
	if !n.lib.Has(wait) {
		wait = "nvmlEventSetWait" // drivers whose header had no _v2
	}
	var count uint32
	if r, err := n.call("nvmlDeviceGetCount_v2", uintptr(unsafe.Pointer(&count))); err != nil || r != nvmlSuccess {
		return nil, fmt.Errorf("NVML could not count GPUs: %s", errText(r, err))
	}
	set := new(uintptr)
	if r, err := n.call("nvmlEventSetCreate", uintptr(unsafe.Pointer(set))); err != nil || r != nvmlSuccess {
		return nil, fmt.Errorf("NVML could not create an event set: %s", errText(r, err))
	}
	w := &XidWatch{n: n, set: *set, buses: map[uintptr]string{}, wait: wait}
	for i := range int(count) {
		if why := w.register(i); why != "" {
			w.Skipped = append(w.Skipped, fmt.Sprintf("GPU %d: %s", i, why))
			continue
		}
		w.GPUs++
	}
	if w.GPUs == 0 {
		w.Close()
		if count == 0 {
			return nil, errors.New("NVML lists no GPU")
		}
		return nil, fmt.Errorf("no GPU reports Xid events through NVML (%s)", strings.Join(w.Skipped, "; "))
	}
	return w, nil
}

// register adds GPU i's Xid events to the set; it returns why not, or "".
func (w *XidWatch) register(i int) string {
	h := new(uintptr)
	if r, err := w.n.call("nvmlDeviceGetHandleByIndex_v2", uintptr(i), uintptr(unsafe.Pointer(h))); err != nil || r != nvmlSuccess {
		return errText(r, err)
	}
	types := new(uint64)
	if r, err := w.n.call("nvmlDeviceGetSupportedEventTypes", *h, uintptr(unsafe.Pointer(types))); err != nil || r != nvmlSuccess {
		return errText(r, err)
	}
	if *types&nvmlEventTypeXidCritical == 0 {
		return fmt.Sprintf("no Xid events (supported event types 0x%x)", *types)
	}
	pci := new(nvmlPciInfo)
	if r, err := w.n.call("nvmlDeviceGetPciInfo_v3", *h, uintptr(unsafe.Pointer(pci))); err != nil || r != nvmlSuccess {
		return "PCI address: " + errText(r, err)
	}
	// NOT_SUPPORTED leaves the set usable, with none of the types added.
	if r, err := w.n.call("nvmlDeviceRegisterEvents", *h, nvmlEventTypeXidCritical, w.set); err != nil || r != nvmlSuccess {
		return errText(r, err)
	}
	w.buses[*h] = fmt.Sprintf("%04x:%02x:%02x", pci.Domain, pci.Bus, pci.Device)
	return ""
}

// OpenXidWatch loads NVML (library, "" for the driver's) and registers
// for its Xid events; Close lets go of both. Both results are nil where
// NVML's library is not on this machine (no NVIDIA driver: no Xid to
// watch); the error says why NVML, found, cannot deliver them.
func OpenXidWatch(library string) (*XidWatch, error) {
	n, err := OpenNVML(library)
	if err != nil {
		if IsNoLibrary(err) {
			return nil, nil
		}
		return nil, err
	}
	w, err := n.WatchXids()
	if err != nil {
		n.Close()
		return nil, err
	}
	w.owned = true
	return w, nil
}

// Next waits up to timeout for the next Xid and returns it, in the form
// the kernel log's reader gives (no pid, process or message: NVML gives
// the code, the GPU and its MIG instance; code 999 is an Xid the driver
// could not name); ok is false when none came. An error is NVML's
// failure to wait, GPU_IS_LOST among them (a GPU fell off the bus): the
// set delivers nothing more then.
func (w *XidWatch) Next(timeout time.Duration) (e kernlog.Xid, ok bool, err error) {
	ms := min(max(timeout.Milliseconds(), 0), nvmlEventWaitMaxTimeoutMS)
	data := new(nvmlEventData)
	r, err := w.n.call(w.wait, w.set, uintptr(unsafe.Pointer(data)), uintptr(ms))
	switch {
	case err != nil:
		return e, false, err
	case r == nvmlErrTimeout:
		return e, false, nil
	case r != nvmlSuccess:
		return e, false, fmt.Errorf("NVML's event wait: %s", nvmlErrorName(r))
	case data.EventType&nvmlEventTypeXidCritical == 0:
		return e, false, nil // only Xids are registered; anything else is not ours
	}
	e = kernlog.Xid{Code: int(data.EventData), Bus: w.buses[data.Device], At: time.Now().UTC()}
	if e.Bus == "" {
		e.Bus = "unknown"
	}
	if data.GPUInstanceID != nvmlEventNoInstance {
		e.MIG = fmt.Sprintf("GPU-I:%02d", data.GPUInstanceID)
		if data.ComputeInstanceID != nvmlEventNoInstance {
			e.MIG += fmt.Sprintf(" GPU-CI:%02d", data.ComputeInstanceID)
		}
	}
	return e, true, nil
}

// Take waits up to timeout for an Xid, then hands each one that came, and
// every one already queued behind it, to f; the error is Next's.
func (w *XidWatch) Take(timeout time.Duration, f func(kernlog.Xid)) error {
	for {
		e, ok, err := w.Next(timeout)
		if err != nil || !ok {
			return err
		}
		f(e)
		timeout = 0
	}
}

// Close frees the event set, and NVML where OpenXidWatch opened it.
func (w *XidWatch) Close() {
	if w.set == 0 {
		return
	}
	w.n.call("nvmlEventSetFree", w.set)
	w.set = 0
	if w.owned {
		w.n.Close()
	}
}

// RecordXids starts taking the Xids NVML's events deliver (library: the
// NVML to load, "" for the driver's) and returns the function that stops
// and returns them: nil where NVML's library is not on this machine, the
// reason where the events cannot be had. bench runs it while it measures.
func RecordXids(library string) (stop func() *XidEvents) {
	w, err := OpenXidWatch(library)
	if w == nil {
		var got *XidEvents
		if err != nil {
			got = &XidEvents{Error: err.Error()}
		}
		return func() *XidEvents { return got }
	}
	start := time.Now()
	quit := make(chan struct{})
	done := make(chan *XidEvents)
	go func() {
		defer w.Close()
		got := &XidEvents{Xids: []kernlog.Xid{}}
		add := func(e kernlog.Xid) { got.Xids = append(got.Xids, e) }
		var err error
		for stopping := false; err == nil && !stopping; {
			select {
			case <-quit:
				stopping = true
				err = w.Take(0, add) // what NVML holds already
			default:
				err = w.Take(200*time.Millisecond, add)
			}
		}
		if err != nil {
			got.Error = err.Error()
		}
		<-quit // a wait that failed still waits to be stopped
		got.Seconds = time.Since(start).Seconds()
		done <- got
	}()
	return func() *XidEvents {
		close(quit)
		return <-done
	}
}
