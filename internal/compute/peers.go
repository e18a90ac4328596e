package compute

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"
	"unsafe"
)

// The GPU-to-GPU copy matrix: for each ordered pair, the copy engines'
// bandwidth from one GPU's memory to the other's (cuMemcpyPeerAsync, as
// nvbandwidth's device_to_device_memcpy_write_ce measures it), and both
// directions at once for each pair. A P2P path that never completes (PCIe
// ACS or an IOMMU between the GPUs can make copies hang) must fail the
// pair, not hang the bench: every wait polls its event against a deadline,
// and the caller stops waiting for a driver call that never returns.

const (
	cuErrPeerAlreadyEnabled = 704 // CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED
	cuErrNotReady           = 600 // CUDA_ERROR_NOT_READY
)

// PeerOptions size the copy matrix.
type PeerOptions struct {
	// Bytes is each copy's size (halved down to 16 MiB where memory is
	// short); Copies how many are timed per direction, after one untimed.
	Bytes  int64
	Copies int
	// Timeout is how long one pair may take before it counts as hung;
	// Grace how much longer a driver call may block before the caller
	// stops waiting for it (cuInit and allocation on eight GPUs take
	// seconds: Grace and Timeout twice over cover them).
	Timeout, Grace time.Duration
}

// DefaultPeerOptions: 256 MiB copies, 4 timed, 10 s a pair. A healthy
// pair takes milliseconds (1 GiB at 25 GB/s over PCIe Gen4 is 43 ms).
func DefaultPeerOptions() PeerOptions {
	return PeerOptions{Bytes: 256 << 20, Copies: 4, Timeout: 10 * time.Second, Grace: 15 * time.Second}
}

// Peer is one ordered pair of GPUs, by CUDA ordinal and PCI address.
type Peer struct {
	Src    int    `json:"src"`
	Dst    int    `json:"dst"`
	SrcBus string `json:"src_bus_id"`
	DstBus string `json:"dst_bus_id"`
	// SrcGPU and DstGPU are the GPUs' NVML indexes, which bench's other
	// checks use (the caller sets them, by PCI address).
	SrcGPU int `json:"src_gpu"`
	DstGPU int `json:"dst_gpu"`
	// Access: the driver maps one's memory into the other
	// (cuDeviceCanAccessPeer), so copies go GPU to GPU; without it they
	// are staged through host memory.
	Access bool `json:"access"`
	// GBs is Src to Dst alone; BidirGBs both ways at once, the sum (on
	// the entry whose Src is the lower ordinal).
	GBs      float64 `json:"gbs,omitempty"`
	BidirGBs float64 `json:"bidir_gbs,omitempty"`
	// TimedOut: the copies did not finish within the timeout.
	TimedOut bool   `json:"timed_out,omitempty"`
	Error    string `json:"error,omitempty"`
}

// Peers is the copy matrix of the GPUs CUDA shows this process.
type Peers struct {
	// Devices is how many GPUs CUDA shows this process (fewer than two:
	// nothing was measured).
	Devices int     `json:"devices"`
	Bytes   int64   `json:"bytes,omitempty"`
	Copies  int     `json:"copies,omitempty"`
	Timeout float64 `json:"timeout_s,omitempty"`
	Pairs   []Peer  `json:"pairs,omitempty"`
	// Hung names the pair that hung; the GPUs were left as they were
	// (a hung copy cannot be cancelled, and freeing its memory would wait
	// for it), and no later pair was measured.
	Hung  string `json:"hung,omitempty"`
	Error string `json:"error,omitempty"`
}

// peerDev is one GPU's context and buffers.
type peerDev struct {
	dev      int32
	ctx      uintptr
	bus      string
	src, dst uint64
}

// Peers measures the copy matrix. It returns when done, when ctx ends, or
// when a driver call has not returned for o.Timeout: the measuring thread
// is then left behind, blocked in the driver.
func (cu CUDA) Peers(ctx context.Context, o PeerOptions) Peers {
	out := Peers{Bytes: o.Bytes, Copies: o.Copies, Timeout: o.Timeout.Seconds()}
	progress := make(chan Peer)
	done := make(chan Peers, 1)
	starting := make(chan string, 1)
	quit := make(chan struct{})
	defer close(quit)
	go func() { done <- cu.peers(o, progress, starting, quit) }()
	current := "loading the driver"
	timer := time.NewTimer(2 * (o.Timeout + o.Grace))
	defer timer.Stop()
	for {
		select {
		case p := <-progress:
			out.Pairs = append(out.Pairs, p)
			timer.Reset(o.Timeout + o.Grace)
		case s := <-starting:
			current = s
			timer.Reset(o.Timeout + o.Grace)
		case r := <-done:
			r.Pairs = append(out.Pairs, r.Pairs...)
			r.Devices = max(r.Devices, out.Devices)
			r.Bytes, r.Copies, r.Timeout = out.Bytes, out.Copies, out.Timeout
			return r
		case <-timer.C:
			out.Hung = current
			out.Error = fmt.Sprintf("the CUDA driver did not answer for %s while %s", o.Timeout+o.Grace, current)
			return out
		case <-ctx.Done():
			out.Error = "stopped: " + ctx.Err().Error()
			return out
		}
	}
}

// peers runs on its own locked thread; each pair goes to progress as it
// is measured, and what it is about to do to starting (a buffered channel
// of one: the latest word wins). It stops, cleaning up, once quit closes.
func (cu CUDA) peers(o PeerOptions, progress chan<- Peer, starting chan string, quit <-chan struct{}) (r Peers) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	say := latest(starting)
	c, n, err := loadCUDA(cu.Library)
	if err != nil {
		return Peers{Error: err.Error()}
	}
	if n < 2 {
		c.lib.Close()
		return Peers{Devices: n}
	}
	defer func() { r.Devices = n }()
	devs := make([]peerDev, 0, n)
	enabled := make([][]bool, n) // peer access this turned on, to turn off
	for i := range enabled {
		enabled[i] = make([]bool, n)
	}
	hung := false
	defer func() {
		if !hung {
			peerCleanup(c, devs, enabled)
			c.lib.Close()
		}
	}()
	bytes := o.Bytes
	for i := range n {
		say(fmt.Sprintf("opening CUDA device %d", i))
		d := peerDev{}
		if err := c.check("cuDeviceGet", uintptr(unsafe.Pointer(&d.dev)), uintptr(i)); err != nil {
			return Peers{Error: err.Error()}
		}
		c.dev = d.dev
		d.bus = c.busID()
		if err := c.check("cuDevicePrimaryCtxRetain", uintptr(unsafe.Pointer(&d.ctx)), uintptr(d.dev)); err != nil {
			return Peers{Error: fmt.Sprintf("CUDA device %d (%s): %v", i, d.bus, err)}
		}
		devs = append(devs, d)
		if err := c.check("cuCtxSetCurrent", d.ctx); err != nil {
			return Peers{Error: err.Error()}
		}
		for {
			src, err := c.alloc(uint64(bytes))
			if err == nil {
				dst, err2 := c.alloc(uint64(bytes))
				if err2 == nil {
					devs[i].src, devs[i].dst = src, dst
					break
				}
				c.free(src)
				err = err2
			}
			if bytes <= 16<<20 {
				return Peers{Error: fmt.Sprintf("CUDA device %d (%s): two buffers of %d MiB: %v", i, d.bus, bytes>>20, err)}
			}
			bytes /= 2
		}
	}
	o.Bytes = bytes
	access := make([][]bool, n)
	for i := range n {
		access[i] = make([]bool, n)
		for k := range n {
			if i == k {
				continue
			}
			var can int32
			if err := c.check("cuDeviceCanAccessPeer", uintptr(unsafe.Pointer(&can)), uintptr(devs[i].dev), uintptr(devs[k].dev)); err != nil {
				return Peers{Error: err.Error()}
			}
			access[i][k] = can == 1
		}
	}
	say("enabling peer access")
	for i := range n {
		for k := range n {
			if !access[i][k] {
				continue
			}
			c.check("cuCtxSetCurrent", devs[i].ctx)
			r, err := c.call("cuCtxEnablePeerAccess", devs[k].ctx, 0)
			switch {
			case err == nil && r == 0:
				enabled[i][k] = true
			case err == nil && r == cuErrPeerAlreadyEnabled:
			default:
				access[i][k] = false // copies are staged instead; the matrix says so
			}
		}
	}
	for i := range n {
		for k := range n {
			if i == k {
				continue
			}
			say(fmt.Sprintf("copying from CUDA device %d to %d", i, k))
			p := Peer{Src: i, Dst: k, SrcBus: devs[i].bus, DstBus: devs[k].bus, Access: access[i][k]}
			ms, err := c.peerCopies(o, []peerDev{devs[i], devs[k]})
			if err == nil && k > i {
				say(fmt.Sprintf("copying both ways between CUDA devices %d and %d", i, k))
				var both []float64
				if both, err = c.peerCopies(o, []peerDev{devs[i], devs[k]}, []peerDev{devs[k], devs[i]}); err != nil {
					err = fmt.Errorf("both ways: %w", err)
				} else {
					p.BidirGBs = 2 * float64(o.Bytes) * float64(o.Copies) / (max(both[0], both[1]) / 1000) / 1e9
				}
			}
			if err != nil {
				// Whatever failed may have left copies queued on these GPUs:
				// later pairs would wait behind them, and freeing or
				// synchronising would wait too. The matrix stops here, and
				// nothing is cleaned up (the process ends soon after).
				p.Error, p.TimedOut, hung = err.Error(), hungErr(err), true
				r := Peers{Pairs: []Peer{p}, Error: fmt.Sprintf("copies from CUDA device %d to %d failed; later pairs were not measured", i, k)}
				if p.TimedOut {
					r.Hung, r.Error = fmt.Sprintf("CUDA device %d to %d", i, k), ""
				}
				return r
			}
			p.GBs = float64(o.Bytes) * float64(o.Copies) / (ms[0] / 1000) / 1e9
			select {
			case progress <- p:
			case <-quit:
				return Peers{}
			}
		}
	}
	return Peers{}
}

// errHung is work between GPUs that did not finish in time.
type errHung struct {
	what  string
	after time.Duration
}

func (e errHung) Error() string {
	return fmt.Sprintf("%s did not finish in %s: the path between these GPUs hangs", e.what, e.after)
}

// await polls event e (of the current context) until it completes, or
// returns hung once deadline passes: cuEventSynchronize would wait for
// ever on a stream that never completes.
func (c *cudaLib) await(e event, deadline time.Time, hung errHung) error {
	for {
		r, err := c.call("cuEventQuery", uintptr(e))
		switch {
		case err != nil:
			return err
		case r == 0:
			return nil
		case r != cuErrNotReady:
			return fmt.Errorf("cuEventQuery: %s", cuResultName(r))
		case time.Now().After(deadline):
			return hung
		}
		time.Sleep(time.Millisecond)
	}
}

// latest returns a function that leaves s in ch, a channel of one,
// replacing what was there: the caller reads the newest word of what a
// worker is doing, and the worker never blocks on it.
func latest(ch chan string) func(string) {
	return func(s string) {
		select {
		case <-ch:
		default:
		}
		ch <- s
	}
}

func hungErr(err error) bool {
	var h errHung
	return errors.As(err, &h)
}

// peerCopies times o.Copies copies along each route (a source GPU and a
// destination), all routes at once, each on its source's stream, after
// one untimed copy each; it returns each route's milliseconds.
func (c *cudaLib) peerCopies(o PeerOptions, routes ...[]peerDev) ([]float64, error) {
	type timing struct{ a, b event }
	ts := make([]timing, len(routes))
	defer func() {
		for i, rt := range routes {
			if ts[i].a != 0 || ts[i].b != 0 {
				c.check("cuCtxSetCurrent", rt[0].ctx)
				if ts[i].a != 0 {
					c.destroy(ts[i].a)
				}
				if ts[i].b != 0 {
					c.destroy(ts[i].b)
				}
			}
		}
	}()
	copyOnce := func(rt []peerDev) error {
		return c.check("cuMemcpyPeerAsync", uintptr(rt[1].dst), rt[1].ctx, uintptr(rt[0].src), rt[0].ctx, uintptr(o.Bytes), 0)
	}
	for i, rt := range routes {
		if err := c.check("cuCtxSetCurrent", rt[0].ctx); err != nil {
			return nil, err
		}
		var err error
		if ts[i].a, err = c.newEvent(); err != nil {
			return nil, err
		}
		if ts[i].b, err = c.newEvent(); err != nil {
			return nil, err
		}
		if err := copyOnce(rt); err != nil {
			return nil, err
		}
		if err := c.record(ts[i].a); err != nil {
			return nil, err
		}
		for range o.Copies {
			if err := copyOnce(rt); err != nil {
				return nil, err
			}
		}
		if err := c.record(ts[i].b); err != nil {
			return nil, err
		}
	}
	deadline := time.Now().Add(o.Timeout)
	ms := make([]float64, len(routes))
	for i, rt := range routes {
		c.check("cuCtxSetCurrent", rt[0].ctx)
		if err := c.await(ts[i].b, deadline, errHung{"the copies", o.Timeout}); err != nil {
			if hungErr(err) {
				ts[i] = timing{} // destroying an event of a hung stream may wait for it
			}
			return nil, err
		}
		var err error
		if ms[i], err = c.elapsed(ts[i].a, ts[i].b); err != nil {
			return nil, err
		}
		if ms[i] <= 0 {
			return nil, fmt.Errorf("the copies took %g ms by the GPU's events", ms[i])
		}
	}
	return ms, nil
}

// peerCleanup disables the peer access peers enabled, frees the buffers
// and releases the contexts.
func peerCleanup(c *cudaLib, devs []peerDev, enabled [][]bool) {
	for i, d := range devs {
		if c.check("cuCtxSetCurrent", d.ctx) != nil {
			continue
		}
		for k, p := range devs {
			if enabled[i][k] {
				c.call("cuCtxDisablePeerAccess", p.ctx)
			}
		}
		if d.src != 0 {
			c.free(d.src)
		}
		if d.dst != 0 {
			c.free(d.dst)
		}
		c.call("cuCtxSynchronize")
		c.call("cuDevicePrimaryCtxRelease_v2", uintptr(d.dev))
	}
}
