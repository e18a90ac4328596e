package compute

import (
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"unsafe"

	"github.com/gpurent/gpurent/internal/dl"
)

// The CUDA driver binding is written from NVIDIA's cuda.h
// (exported symbol names, prototypes, CUresult values): `_v2` names for
// everything that has them (the bare names are 32-bit legacy), the primary
// context rather than cuCtxCreate (whose ABI changed in CUDA 12.5 and 13),
// and cuEventElapsedTime_v2 with a fallback to the v1 name for drivers
// before 12.8. A missing symbol is an error, never a panic.

// errNoCUDA wraps every failure to load or initialise the driver or to
// open a device.
var errNoCUDA = errors.New("CUDA unavailable")

// cuResultName names CUresult codes (abi_reference.md §2.4).
func cuResultName(r int32) string {
	names := map[int32]string{1: "INVALID_VALUE", 2: "OUT_OF_MEMORY", 3: "NOT_INITIALIZED", 4: "DEINITIALIZED",
		34: "STUB_LIBRARY", 36: "CALL_REQUIRES_NEWER_DRIVER", 46: "DEVICE_UNAVAILABLE", 100: "NO_DEVICE", 101: "INVALID_DEVICE",
		200: "INVALID_IMAGE", 201: "INVALID_CONTEXT", 217: "PEER_ACCESS_UNSUPPORTED", 209: "NO_BINARY_FOR_GPU", 218: "INVALID_PTX", 221: "JIT_COMPILER_NOT_FOUND",
		222: "UNSUPPORTED_PTX_VERSION", 223: "JIT_COMPILATION_DISABLED", 300: "INVALID_SOURCE", 301: "FILE_NOT_FOUND",
		303: "SHARED_OBJECT_INIT_FAILED", 304: "OPERATING_SYSTEM", 400: "INVALID_HANDLE", 500: "NOT_FOUND", 600: "NOT_READY",
		700: "ILLEGAL_ADDRESS", 701: "LAUNCH_OUT_OF_RESOURCES", 702: "LAUNCH_TIMEOUT", 704: "PEER_ACCESS_ALREADY_ENABLED", 705: "PEER_ACCESS_NOT_ENABLED", 719: "LAUNCH_FAILED", 800: "NOT_PERMITTED",
		801: "NOT_SUPPORTED", 802: "SYSTEM_NOT_READY", 803: "SYSTEM_DRIVER_MISMATCH", 804: "COMPAT_NOT_SUPPORTED_ON_DEVICE", 999: "UNKNOWN"}
	if n, ok := names[r]; ok {
		return "CUDA_ERROR_" + n
	}
	return fmt.Sprintf("CUresult %d", r)
}

// Device attributes used (abi_reference.md §2.5).
const (
	cuAttrClockRate       = 13
	cuAttrSMCount         = 16
	cuAttrMemClockRate    = 36
	cuAttrBusWidth        = 37
	cuAttrCCMajor         = 75
	cuAttrCCMinor         = 76
	cuAttrMPSEnabled      = 133
	cuJitErrorLogBuffer   = 5
	cuJitErrorLogBufBytes = 6
)

// cudaLib is an open libcuda. Every call must come from the OS thread that
// made the context current: Open locks it, Close unlocks it.
type cudaLib struct {
	lib     *dl.Lib
	dev     int32
	ctx     uintptr
	version int32
}

// openCUDA loads the driver (path, or libcuda.so.1 from the loader's search
// path when empty), initialises it and makes device's primary context
// current on this (locked) OS thread.
func openCUDA(path string, device int) (*cudaLib, error) {
	runtime.LockOSThread()
	c, count, err := loadCUDA(path)
	if err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	fail := func(err error) (*cudaLib, error) {
		c.lib.Close()
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("%w: %v", errNoCUDA, err)
	}
	if device < 0 || device >= count {
		return fail(fmt.Errorf("device %d does not exist (%d CUDA devices%s)", device, count, visibleNote()))
	}
	if err := c.check("cuDeviceGet", uintptr(unsafe.Pointer(&c.dev)), uintptr(device)); err != nil {
		return fail(err)
	}
	if err := c.check("cuDevicePrimaryCtxRetain", uintptr(unsafe.Pointer(&c.ctx)), uintptr(c.dev)); err != nil {
		return fail(err)
	}
	if err := c.check("cuCtxSetCurrent", c.ctx); err != nil {
		c.call("cuDevicePrimaryCtxRelease_v2", uintptr(c.dev))
		return fail(err)
	}
	return c, nil
}

// loadCUDA loads and initialises the driver and counts the devices it
// shows this process. The caller closes c.lib.
func loadCUDA(path string) (c *cudaLib, count int, err error) {
	names := []string{"libcuda.so.1", "libcuda.so"}
	if path != "" {
		names = []string{path}
	}
	lib, err := dl.Open(names...)
	if errors.Is(err, dl.ErrNoLoader) {
		return nil, 0, fmt.Errorf("%w: %v", errNoCUDA, err)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("%w: libcuda.so.1 is not on this machine (no NVIDIA driver, or a container without GPU access): %v", errNoCUDA, err)
	}
	c = &cudaLib{lib: lib}
	fail := func(err error) (*cudaLib, int, error) {
		lib.Close()
		return nil, 0, fmt.Errorf("%w: %v", errNoCUDA, err)
	}
	if r, err := c.call("cuInit", 0); err != nil {
		return fail(err)
	} else if r != 0 {
		return fail(fmt.Errorf("cuInit: %s%s", cuResultName(r), initHint(r)))
	}
	if err := c.check("cuDriverGetVersion", uintptr(unsafe.Pointer(&c.version))); err != nil {
		return fail(err)
	}
	var n int32
	if err := c.check("cuDeviceGetCount", uintptr(unsafe.Pointer(&n))); err != nil {
		return fail(err)
	}
	return c, int(n), nil
}

// initHint explains the cuInit failures a rented machine's image causes,
// from the meanings NVIDIA's CUresult documentation gives them.
func initHint(r int32) string {
	switch r {
	case 100: // CUDA_ERROR_NO_DEVICE
		return ": the driver shows this process no GPU" + visibleNote()
	case 34: // CUDA_ERROR_STUB_LIBRARY
		return ": the libcuda.so loaded is the CUDA toolkit's stub, not the driver's (is a .../lib64/stubs directory on LD_LIBRARY_PATH?)"
	case 803: // CUDA_ERROR_SYSTEM_DRIVER_MISMATCH
		return ": the CUDA driver library and the kernel driver are different versions (a driver updated without a reboot, or a CUDA compatibility package the kernel driver does not match)"
	case 802: // CUDA_ERROR_SYSTEM_NOT_READY
		return ": the system is not ready; on an NVSwitch board (HGX, DGX) this means nvidia-fabricmanager is not running or has not finished, and only the provider can start it"
	case 804: // CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE
		return ": a CUDA forward-compatibility package is in use and this GPU does not support it"
	}
	return ""
}

// visibleNote names CUDA_VISIBLE_DEVICES where it is set: it decides which
// GPUs the driver shows, and an empty or wrong one hides them all.
func visibleNote() string {
	if v, ok := os.LookupEnv("CUDA_VISIBLE_DEVICES"); ok {
		return fmt.Sprintf("; CUDA_VISIBLE_DEVICES=%q", v)
	}
	return ""
}

// Devices lists the PCI addresses of the GPUs the CUDA driver shows this
// process, in CUDA's numbering (after CUDA_DEVICE_ORDER and
// CUDA_VISIBLE_DEVICES): bench measures each and matches it to NVML's
// device by address, since NVML sees every GPU in the machine.
func (cu CUDA) Devices() ([]string, error) {
	c, n, err := loadCUDA(cu.Library)
	if err != nil {
		return nil, err
	}
	defer c.lib.Close()
	out := make([]string, 0, n)
	for i := range n {
		if err := c.check("cuDeviceGet", uintptr(unsafe.Pointer(&c.dev)), uintptr(i)); err != nil {
			return nil, fmt.Errorf("%w: %v", errNoCUDA, err)
		}
		out = append(out, c.busID())
	}
	return out, nil
}

func (c *cudaLib) close() {
	c.call("cuCtxSynchronize")
	c.call("cuDevicePrimaryCtxRelease_v2", uintptr(c.dev))
	c.lib.Close()
	runtime.UnlockOSThread()
}

// call invokes a driver function returning CUresult.
//
//go:uintptrescapes
func (c *cudaLib) call(name string, args ...uintptr) (int32, error) { return c.lib.Call(name, args...) }

// check is call with a non-success CUresult turned into an error.
//
//go:uintptrescapes
func (c *cudaLib) check(name string, args ...uintptr) error {
	r, err := c.call(name, args...)
	if err != nil {
		return err
	}
	if r != 0 {
		return fmt.Errorf("%s: %s", name, cuResultName(r))
	}
	return nil
}

func (c *cudaLib) attr(a int32) (int, error) {
	var v int32
	err := c.check("cuDeviceGetAttribute", uintptr(unsafe.Pointer(&v)), uintptr(a), uintptr(c.dev))
	return int(v), err
}

func (c *cudaLib) name() string {
	buf := make([]byte, 256)
	if c.check("cuDeviceGetName", uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), uintptr(c.dev)) != nil {
		return ""
	}
	return string(buf[:clen(buf)])
}

// busID is the device's PCI address, "" where the driver cannot say.
func (c *cudaLib) busID() string {
	buf := make([]byte, 64)
	if c.check("cuDeviceGetPCIBusId", uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), uintptr(c.dev)) != nil {
		return ""
	}
	return string(buf[:clen(buf)])
}

// module is a loaded PTX module.
type module uintptr

// load JIT-compiles PTX for this card; the JIT's error log is in the error.
func (c *cudaLib) load(ptx string) (module, error) {
	src := append([]byte(ptx), 0)
	logBuf := make([]byte, 4096)
	// The driver finds logBuf through vals, where Go sees only a number:
	// pinning puts it on the heap, where it stays put and alive (on the
	// stack it would move when the stack grows during the call).
	var pin runtime.Pinner
	defer pin.Unpin()
	pin.Pin(&logBuf[0])
	opts := []int32{cuJitErrorLogBuffer, cuJitErrorLogBufBytes}
	vals := []uintptr{uintptr(unsafe.Pointer(&logBuf[0])), uintptr(len(logBuf))}
	var m uintptr
	r, err := c.call("cuModuleLoadDataEx", uintptr(unsafe.Pointer(&m)), uintptr(unsafe.Pointer(&src[0])), uintptr(len(opts)),
		uintptr(unsafe.Pointer(&opts[0])), uintptr(unsafe.Pointer(&vals[0])))
	if err != nil {
		return 0, err
	}
	if r != 0 {
		msg := string(logBuf[:clen(logBuf)])
		return 0, fmt.Errorf("cuModuleLoadDataEx: %s %s", cuResultName(r), msg)
	}
	return module(m), nil
}

func clen(b []byte) int {
	for i, x := range b {
		if x == 0 {
			return i
		}
	}
	return len(b)
}

func (c *cudaLib) unload(m module) { c.call("cuModuleUnload", uintptr(m)) }

func (c *cudaLib) function(m module, name string) (uintptr, error) {
	cname := append([]byte(name), 0)
	var f uintptr
	err := c.check("cuModuleGetFunction", uintptr(unsafe.Pointer(&f)), uintptr(m), uintptr(unsafe.Pointer(&cname[0])))
	return f, err
}

// launch runs f on the legacy default stream. args are the kernel's
// parameters, each an 8-byte slot (pointers and 64-bit integers) or a
// 4-byte value in the low half (int, float) as the PTX declares them;
// cuLaunchKernel reads each through the pointer in kernelParams.
func (c *cudaLib) launch(f uintptr, grid, block uint32, args ...uint64) error {
	slots := make([]uint64, len(args))
	copy(slots, args)
	// The driver reads slots through ptrs, where Go sees only numbers:
	// pinned, slots is on the heap and stays put and alive through the
	// call (a small slice may otherwise live on the stack, which moves
	// when it grows).
	var pin runtime.Pinner
	defer pin.Unpin()
	if len(slots) > 0 {
		pin.Pin(&slots[0])
	}
	ptrs := make([]uintptr, len(args)+1)
	for i := range slots {
		ptrs[i] = uintptr(unsafe.Pointer(&slots[i]))
	}
	return c.check("cuLaunchKernel", f, uintptr(grid), 1, 1, uintptr(block), 1, 1, 0, 0, uintptr(unsafe.Pointer(&ptrs[0])), 0)
}

func (c *cudaLib) alloc(bytes uint64) (uint64, error) {
	var p uint64
	err := c.check("cuMemAlloc_v2", uintptr(unsafe.Pointer(&p)), uintptr(bytes))
	return p, err
}

func (c *cudaLib) free(p uint64) { c.call("cuMemFree_v2", uintptr(p)) }

func (c *cudaLib) memInfo() (free, total uint64, err error) {
	err = c.check("cuMemGetInfo_v2", uintptr(unsafe.Pointer(&free)), uintptr(unsafe.Pointer(&total)))
	return free, total, err
}

// event pair timing on the legacy stream.
type event uintptr

func (c *cudaLib) newEvent() (event, error) {
	var e uintptr
	err := c.check("cuEventCreate", uintptr(unsafe.Pointer(&e)), 0)
	return event(e), err
}

func (c *cudaLib) record(e event) error { return c.check("cuEventRecord", uintptr(e), 0) }

func (c *cudaLib) destroy(e event) { c.call("cuEventDestroy_v2", uintptr(e)) }

// elapsed is the time between two recorded events in milliseconds.
func (c *cudaLib) elapsed(a, b event) (float64, error) {
	if err := c.check("cuEventSynchronize", uintptr(b)); err != nil {
		return 0, err
	}
	var ms float32
	name := "cuEventElapsedTime_v2" // CUDA 12.8 and newer
	if !c.lib.Has(name) {
		name = "cuEventElapsedTime"
	}
	if err := c.check(name, uintptr(unsafe.Pointer(&ms)), uintptr(a), uintptr(b)); err != nil {
		return 0, err
	}
	if math.IsNaN(float64(ms)) || ms < 0 {
		return 0, fmt.Errorf("%s returned %v ms", name, ms)
	}
	return float64(ms), nil
}

// timed runs op between two events and returns its GPU time in ms.
func (c *cudaLib) timed(op func() error) (float64, error) {
	a, err := c.newEvent()
	if err != nil {
		return 0, err
	}
	defer c.destroy(a)
	b, err := c.newEvent()
	if err != nil {
		return 0, err
	}
	defer c.destroy(b)
	if err := c.record(a); err != nil {
		return 0, err
	}
	if err := op(); err != nil {
		return 0, err
	}
	if err := c.record(b); err != nil {
		return 0, err
	}
	return c.elapsed(a, b)
}

// hostAlloc allocates pinned host memory; its address is C memory, not Go's.
func (c *cudaLib) hostAlloc(bytes uint64) (uintptr, error) {
	var p uintptr
	err := c.check("cuMemHostAlloc", uintptr(unsafe.Pointer(&p)), uintptr(bytes), 0)
	return p, err
}

func (c *cudaLib) hostFree(p uintptr) { c.call("cuMemFreeHost", p) }
