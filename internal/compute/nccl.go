package compute

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"
	"unsafe"

	"github.com/gpurent/gpurent/internal/dl"
)

// All-reduce over every GPU with NCCL, loaded at run time like cuBLASLt:
// one process, one communicator of all GPUs (ncclCommInitAll), float32
// sums swept over sizes, bus bandwidth as nccl-tests computes it
// (algbw × 2(n-1)/n). The binding is written from NCCL's nccl.h (2.30.7,
// NVIDIA/nccl src/nccl.h.in): the result codes, ncclFloat32 = 7,
// ncclSum = 0, and prototypes unchanged since NCCL 2.0. An all-reduce
// that never completes (the classic NCCL hang on a broken P2P path) is
// aborted with ncclCommAbort, as NCCL documents, and fails the check.

const (
	ncclFloat32 = 7 // ncclDataType_t
	ncclSum     = 0 // ncclRedOp_t
	ncclCheckN  = 16 << 10
)

// ncclResultName names ncclResult_t.
func ncclResultName(r int32) string {
	names := []string{"ncclSuccess", "ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError", "ncclInvalidArgument",
		"ncclInvalidUsage", "ncclRemoteError", "ncclInProgress", "ncclTimeout"}
	if r >= 0 && int(r) < len(names) {
		return names[r]
	}
	return fmt.Sprintf("ncclResult_t %d", r)
}

// AllReduceOptions size the sweep.
type AllReduceOptions struct {
	// Library is libnccl to load; empty: searched for (ncclCandidates).
	Library string
	// MinBytes to MaxBytes, ×4 a step; each size runs Iters timed times
	// after one untimed.
	MinBytes, MaxBytes int64
	Iters              int
	// Timeout and Grace as PeerOptions'.
	Timeout, Grace time.Duration
}

// DefaultAllReduceOptions sweep 8 MiB to 2 GiB: NVIDIA notes that 256 MB
// is too small to reach an 8×H100's peak (nccl-tests#212).
func DefaultAllReduceOptions() AllReduceOptions {
	return AllReduceOptions{MinBytes: 8 << 20, MaxBytes: 2 << 30, Iters: 5, Timeout: 30 * time.Second, Grace: 30 * time.Second}
}

// AllReduce is the all-reduce sweep over the GPUs CUDA shows this process.
type AllReduce struct {
	Library string `json:"library,omitempty"`
	Version string `json:"version,omitempty"` // "2.28.3"
	Ranks   int    `json:"ranks,omitempty"`
	// Checked: the sum of 16 Ki floats, one per rank, read back right
	// on every rank.
	Checked bool            `json:"checked,omitempty"`
	Sizes   []AllReduceSize `json:"sizes,omitempty"`
	// BusGBs is the best size's bus bandwidth.
	BusGBs float64 `json:"bus_gbs,omitempty"`
	// Hung names what never completed: the communicators were aborted.
	Hung  string `json:"hung,omitempty"`
	Error string `json:"error,omitempty"`
	// Env are the NCCL_ variables set, which change what NCCL does
	// (NCCL_P2P_DISABLE=1 routes around peer-to-peer).
	Env []string `json:"env,omitempty"`
}

// AllReduceSize is one size of the sweep.
type AllReduceSize struct {
	Bytes  int64   `json:"bytes"`
	Ms     float64 `json:"ms"` // one all-reduce, the slowest rank's
	AlgGBs float64 `json:"alg_gbs"`
	BusGBs float64 `json:"bus_gbs"`
}

// ncclDirs are where libnccl lives besides the loader's search path and
// Python wheels (nvidia-nccl-cu12/cu13 put it in nvidia/nccl/lib).
var ncclDirs = []string{"usr/lib/x86_64-linux-gnu", "usr/lib/aarch64-linux-gnu", "usr/local/lib", "usr/local/cuda/lib64", "opt/conda/lib"}

// ncclCandidates lists what to dlopen, best first: GPURENT_NCCL, the
// soname on the loader's path, then files found under root.
func ncclCandidates(root fs.FS, env func(string) string, sitePackages []string) []string {
	var out []string
	if p := env("GPURENT_NCCL"); p != "" {
		out = append(out, p)
	}
	out = append(out, "libnccl.so.2")
	for _, d := range append(slices.Clone(ncclDirs), wheelDirs(env, sitePackages, "nvidia/nccl/lib")...) {
		matches, _ := fs.Glob(root, d+"/libnccl.so.2*")
		for _, m := range matches {
			if !slices.Contains(out, "/"+m) {
				out = append(out, "/"+m)
			}
		}
	}
	return out
}

// openNCCL loads the first candidate that opens and answers
// ncclGetVersion.
func openNCCL(o AllReduceOptions) (*dl.Lib, string, string, error) {
	cands := []string{o.Library}
	if o.Library == "" {
		cands = ncclCandidates(os.DirFS("/"), os.Getenv, pythonSitePackages(context.Background()))
	}
	var errs []error
	for _, c := range cands {
		lib, err := dl.Open(c)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var v int32
		r, err := lib.Call("ncclGetVersion", uintptr(unsafe.Pointer(&v)))
		if err != nil || r != 0 {
			lib.Close()
			errs = append(errs, fmt.Errorf("%s: ncclGetVersion%s", c, ncclErr(lib, r, err)))
			continue
		}
		return lib, c, ncclVersion(v), nil
	}
	return nil, "", "", fmt.Errorf("NCCL (libnccl.so.2) is not on this machine: install it (the nvidia-nccl-cu12 or -cu13 wheel PyTorch brings, or the libnccl2 package), or set GPURENT_NCCL to its path: %w", errors.Join(errs...))
}

// ncclVersion decodes NCCL_VERSION_CODE: X*1000+Y*100+Z up to 2.8,
// X*10000+Y*100+Z after.
func ncclVersion(v int32) string {
	if v < 10000 {
		return fmt.Sprintf("%d.%d.%d", v/1000, v%1000/100, v%100)
	}
	return fmt.Sprintf("%d.%d.%d", v/10000, v%10000/100, v%100)
}

// ncclRank is one GPU's communicator, context, stream and buffers.
type ncclRank struct {
	dev       int32
	ctx       uintptr
	stream    uintptr
	comm      uintptr
	send, rcv uint64
	a, b      event
}

// AllReduce measures the sweep. It returns when done, when ctx ends, or
// when a call has not returned for o.Timeout and o.Grace.
func (cu CUDA) AllReduce(ctx context.Context, o AllReduceOptions) AllReduce {
	done := make(chan AllReduce, 1)
	starting := make(chan string, 1)
	quit := make(chan struct{})
	defer close(quit)
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "NCCL_") {
			env = append(env, kv)
		}
	}
	slices.Sort(env)
	go func() {
		r := cu.allReduce(o, starting, quit)
		r.Env = env
		done <- r
	}()
	current := "loading NCCL"
	timer := time.NewTimer(2*(o.Timeout+o.Grace) + o.Grace) // communicator setup on eight GPUs takes seconds
	defer timer.Stop()
	for {
		select {
		case s := <-starting:
			current = s
			timer.Reset(o.Timeout + o.Grace)
		case r := <-done:
			return r
		case <-timer.C:
			return AllReduce{Hung: current, Env: env, Error: fmt.Sprintf("no answer from NCCL or the CUDA driver for %s while %s", o.Timeout+o.Grace, current)}
		case <-ctx.Done():
			return AllReduce{Error: "stopped: " + ctx.Err().Error()}
		}
	}
}

func (cu CUDA) allReduce(o AllReduceOptions, starting chan string, quit <-chan struct{}) (out AllReduce) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	say := latest(starting)
	nccl, name, version, err := openNCCL(o)
	if err != nil {
		return AllReduce{Error: err.Error()}
	}
	out.Library, out.Version = name, version
	c, n, err := loadCUDA(cu.Library)
	if err != nil {
		nccl.Close()
		out.Error = err.Error()
		return out
	}
	out.Ranks = n
	if n < 1 {
		nccl.Close()
		c.lib.Close()
		out.Error = "no CUDA device"
		return out
	}
	ranks := make([]ncclRank, n)
	hung := false // tainted: something failed once the communicators existed
	defer func() {
		if !hung {
			ncclCleanup(c, nccl, ranks)
			nccl.Close()
			c.lib.Close()
		}
	}()
	bytes, err := ncclSetup(c, ranks, o.MaxBytes, say)
	if err != nil {
		out.Error = err.Error()
		return out
	}
	say("creating the NCCL communicators")
	comms := make([]uintptr, n)
	devs := make([]int32, n)
	for i := range devs {
		devs[i] = int32(i)
	}
	if r, err := nccl.Call("ncclCommInitAll", uintptr(unsafe.Pointer(&comms[0])), uintptr(n), uintptr(unsafe.Pointer(&devs[0]))); err != nil || r != 0 {
		out.Error = fmt.Sprintf("ncclCommInitAll over %d GPUs%s", n, ncclErr(nccl, r, err))
		return out
	}
	for i := range ranks {
		ranks[i].comm = comms[i]
	}
	run := func(rs []ncclRank, count uint64, iters int) ([]float64, error) {
		return ncclTimed(c, nccl, rs, count, iters, o.Timeout)
	}
	say("checking an all-reduce's sum")
	if err := ncclCheck(c, ranks, run); err != nil {
		return ncclFailed(out, err, nccl, ranks, &hung, "the first all-reduce")
	}
	out.Checked = true
	for size := o.MinBytes; size <= bytes; size *= 4 {
		select {
		case <-quit:
			return out
		default:
		}
		say(fmt.Sprintf("all-reduce of %d MiB", size>>20))
		what := fmt.Sprintf("the all-reduce of %s", sizeWord(size))
		if _, err := run(ranks, uint64(size/4), 1); err != nil { // untimed
			return ncclFailed(out, err, nccl, ranks, &hung, what)
		}
		ms, err := run(ranks, uint64(size/4), o.Iters)
		if err == nil && !(slices.Min(ms) > 0) {
			err = fmt.Errorf("the GPUs' events say it took %g ms", slices.Min(ms))
		}
		if err != nil {
			return ncclFailed(out, err, nccl, ranks, &hung, what)
		}
		t := slices.Max(ms) / float64(o.Iters)
		s := AllReduceSize{Bytes: size, Ms: t, AlgGBs: float64(size) / (t / 1000) / 1e9}
		s.BusGBs = s.AlgGBs * 2 * float64(n-1) / float64(n)
		out.Sizes = append(out.Sizes, s)
		out.BusGBs = math.Max(out.BusGBs, s.BusGBs)
	}
	return out
}

// ncclFailed records what failed. Any failure once the communicators
// exist may leave ranks waiting for each other, so they are aborted (as
// NCCL documents for an operation that never completes), and nothing is
// freed or synchronised afterwards: that would wait on them too.
func ncclFailed(out AllReduce, err error, nccl *dl.Lib, ranks []ncclRank, tainted *bool, what string) AllReduce {
	*tainted = true
	ncclAbort(nccl, ranks)
	if hungErr(err) {
		out.Hung = what
	}
	out.Error = fmt.Sprintf("%s: %v", what, err)
	return out
}

// sizeWord is a size in MiB or GiB.
func sizeWord(b int64) string {
	if b >= 1<<30 {
		return fmt.Sprintf("%d GiB", b>>30)
	}
	return fmt.Sprintf("%d MiB", b>>20)
}

// ncclErr is ": " and a call's failure: the symbol's absence, or the
// result's name and NCCL's own words for it.
func ncclErr(nccl *dl.Lib, r int32, err error) string {
	if err != nil {
		return ": " + err.Error()
	}
	s := ": " + ncclResultName(r)
	if p, err := nccl.CallWord("ncclGetErrorString", uintptr(r)); err == nil && p != 0 {
		s += " (" + dl.CString(p, 256) + ")"
	}
	return s
}

// ncclSetup opens each GPU's primary context, a stream, two events and
// two buffers of up to max bytes (halved down to 64 MiB where memory is
// short, the same on every GPU); it returns the buffers' size.
func ncclSetup(c *cudaLib, ranks []ncclRank, max int64, say func(string)) (int64, error) {
	bytes := max
	for i := range ranks {
		say(fmt.Sprintf("opening CUDA device %d", i))
		r := &ranks[i]
		if err := c.check("cuDeviceGet", uintptr(unsafe.Pointer(&r.dev)), uintptr(i)); err != nil {
			return 0, err
		}
		if err := c.check("cuDevicePrimaryCtxRetain", uintptr(unsafe.Pointer(&r.ctx)), uintptr(r.dev)); err != nil {
			return 0, fmt.Errorf("CUDA device %d: %v", i, err)
		}
		if err := c.check("cuCtxSetCurrent", r.ctx); err != nil {
			return 0, err
		}
		if err := c.check("cuStreamCreate", uintptr(unsafe.Pointer(&r.stream)), 1); err != nil { // CU_STREAM_NON_BLOCKING
			return 0, err
		}
		var err error
		if r.a, err = c.newEvent(); err != nil {
			return 0, err
		}
		if r.b, err = c.newEvent(); err != nil {
			return 0, err
		}
	}
	for {
		ok := true
		for i := range ranks {
			r := &ranks[i]
			c.check("cuCtxSetCurrent", r.ctx)
			var err error
			if r.send, err = c.alloc(uint64(bytes)); err == nil {
				if r.rcv, err = c.alloc(uint64(bytes)); err != nil {
					c.free(r.send)
					r.send = 0
				}
			}
			if err != nil {
				ok = false
				break
			}
		}
		if ok {
			return bytes, nil
		}
		for i := range ranks {
			r := &ranks[i]
			c.check("cuCtxSetCurrent", r.ctx)
			if r.send != 0 {
				c.free(r.send)
				c.free(r.rcv)
			}
			r.send, r.rcv = 0, 0
		}
		if bytes <= 64<<20 {
			return 0, fmt.Errorf("two buffers of %d MiB on every GPU: out of memory", bytes>>20)
		}
		bytes /= 2
	}
}

// ncclTimed runs iters all-reduces of count floats on every rank, one
// group each, between each rank's events, and returns each rank's ms.
func ncclTimed(c *cudaLib, nccl *dl.Lib, ranks []ncclRank, count uint64, iters int, timeout time.Duration) ([]float64, error) {
	for i := range ranks {
		c.check("cuCtxSetCurrent", ranks[i].ctx)
		if err := c.check("cuEventRecord", uintptr(ranks[i].a), ranks[i].stream); err != nil {
			return nil, err
		}
	}
	for range iters {
		if r, err := nccl.Call("ncclGroupStart"); err != nil || r != 0 {
			return nil, fmt.Errorf("ncclGroupStart%s", ncclErr(nccl, r, err))
		}
		for i := range ranks {
			r := &ranks[i]
			if res, err := nccl.Call("ncclAllReduce", uintptr(r.send), uintptr(r.rcv), uintptr(count), ncclFloat32, ncclSum, r.comm, r.stream); err != nil || res != 0 {
				nccl.Call("ncclGroupEnd")
				return nil, fmt.Errorf("ncclAllReduce on rank %d%s", i, ncclErr(nccl, res, err))
			}
		}
		if r, err := nccl.Call("ncclGroupEnd"); err != nil || r != 0 {
			return nil, fmt.Errorf("ncclGroupEnd%s", ncclErr(nccl, r, err))
		}
	}
	deadline := time.Now().Add(timeout)
	ms := make([]float64, len(ranks))
	for i := range ranks {
		r := &ranks[i]
		c.check("cuCtxSetCurrent", r.ctx)
		if err := c.check("cuEventRecord", uintptr(r.b), r.stream); err != nil {
			return nil, err
		}
	}
	for i := range ranks {
		r := &ranks[i]
		c.check("cuCtxSetCurrent", r.ctx)
		if err := c.await(r.b, deadline, errHung{"the all-reduce", timeout}); err != nil {
			return nil, err
		}
		var err error
		if ms[i], err = c.elapsed(r.a, r.b); err != nil {
			return nil, err
		}
	}
	return ms, nil
}

// ncclCheck sums ncclCheckN floats of 1.0 from every rank, in buffers of
// its own, and reads the result back from each: all n, or the all-reduce
// computes wrong.
func ncclCheck(c *cudaLib, ranks []ncclRank, run func([]ncclRank, uint64, int) ([]float64, error)) (err error) {
	small := slices.Clone(ranks)
	for i := range small {
		small[i].send, small[i].rcv = 0, 0
	}
	ran := false // once the all-reduce was launched, a failure leaves the buffers to the process's end
	defer func() {
		for _, r := range small {
			if r.send == 0 || (ran && err != nil) {
				continue
			}
			c.check("cuCtxSetCurrent", r.ctx)
			c.free(r.send)
			if r.rcv != 0 {
				c.free(r.rcv)
			}
		}
	}()
	one := math.Float32bits(1)
	for i := range small {
		r := &small[i]
		c.check("cuCtxSetCurrent", r.ctx)
		if r.send, err = c.alloc(ncclCheckN * 4); err != nil {
			return err
		}
		if r.rcv, err = c.alloc(ncclCheckN * 4); err != nil {
			return err
		}
		if err := c.check("cuMemsetD32_v2", uintptr(r.send), uintptr(one), ncclCheckN); err != nil {
			return err
		}
		if err := c.check("cuMemsetD32_v2", uintptr(r.rcv), 0, ncclCheckN); err != nil {
			return err
		}
	}
	ran = true
	if _, err := run(small, ncclCheckN, 1); err != nil {
		return err
	}
	got := make([]float32, ncclCheckN)
	want := float32(len(small))
	for i, r := range small {
		c.check("cuCtxSetCurrent", r.ctx)
		if err := c.check("cuMemcpyDtoH_v2", uintptr(unsafe.Pointer(&got[0])), uintptr(r.rcv), ncclCheckN*4); err != nil {
			return err
		}
		for k, v := range got {
			if v != want {
				return fmt.Errorf("the all-reduce computed wrong: rank %d's element %d is %g, not %g (the sum of one from each of %d GPUs)", i, k, v, want, len(small))
			}
		}
	}
	return nil
}

// ncclAbort aborts every communicator: NCCL's way out of an operation
// that never completes.
func ncclAbort(nccl *dl.Lib, ranks []ncclRank) {
	for i := range ranks {
		if ranks[i].comm != 0 {
			nccl.Call("ncclCommAbort", ranks[i].comm)
			ranks[i].comm = 0
		}
	}
}

// ncclCleanup destroys the communicators, then each GPU's stream, events
// and buffers, and releases its context.
func ncclCleanup(c *cudaLib, nccl *dl.Lib, ranks []ncclRank) {
	for i := range ranks {
		if ranks[i].comm != 0 {
			nccl.Call("ncclCommDestroy", ranks[i].comm)
		}
	}
	for _, r := range ranks {
		if r.ctx == 0 || c.check("cuCtxSetCurrent", r.ctx) != nil {
			continue
		}
		if r.send != 0 {
			c.free(r.send)
			c.free(r.rcv)
		}
		if r.a != 0 {
			c.destroy(r.a)
		}
		if r.b != 0 {
			c.destroy(r.b)
		}
		if r.stream != 0 {
			c.call("cuStreamDestroy_v2", r.stream) // returns at once; the stream is released when its work is done
		}
		c.call("cuDevicePrimaryCtxRelease_v2", uintptr(r.dev))
	}
}
