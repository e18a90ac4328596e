// Package dl loads a C shared library at run time with purego and calls its
// functions, so gpurent reaches the NVIDIA driver (NVML, CUDA) without cgo:
// one static-enough binary that builds anywhere and finds the driver on the
// machine it runs on. A missing library or symbol is an error, never a panic.
//
// purego's dlopen needs the C library's dynamic loader, so the standard
// Linux binary names /lib64/ld-linux-x86-64.so.2 (aarch64: /lib/ld-linux-
// aarch64.so.1) as its interpreter, which every image NVIDIA's driver runs
// on has. Where that loader is missing (Alpine's musl, NixOS, distroless/static
// and scratch images) the kernel refuses to start such a binary at all;
// the build tag nogpu leaves purego out and makes a fully static binary
// that does everything but reach NVIDIA's libraries.
package dl

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"unsafe"
)

// ErrNoLoader is what Open says in a build that loads no library: the
// static nogpu build, or Windows. Callers tell it apart from a library
// that is missing from the machine, since installing one would not help.
var ErrNoLoader = errors.New("this gpurent loads no shared library")

// Lib is an open library.
type Lib struct {
	name string
	h    uintptr
	mu   sync.Mutex
	syms map[string]uintptr
}

// Open loads the first of names that the dynamic loader finds. The error
// lists what the loader said for each.
func Open(names ...string) (*Lib, error) {
	var errs []string
	for _, n := range names {
		h, err := dlopen(n)
		if err == nil {
			return &Lib{name: n, h: h, syms: map[string]uintptr{}}, nil
		}
		if errors.Is(err, ErrNoLoader) {
			return nil, err // the same for every name
		}
		errs = append(errs, err.Error())
	}
	return nil, fmt.Errorf("%s", strings.Join(errs, "; "))
}

// Name is the file name the library was opened by.
func (l *Lib) Name() string { return l.name }

// Sym resolves a symbol once and remembers it.
func (l *Lib) Sym(name string) (uintptr, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if p, ok := l.syms[name]; ok {
		return p, nil
	}
	p, err := dlsym(l.h, name)
	if err != nil || p == 0 {
		return 0, fmt.Errorf("symbol %s is not in this driver's %s", name, l.name)
	}
	l.syms[name] = p
	return p, nil
}

// Has reports whether the library exports name.
func (l *Lib) Has(name string) bool {
	_, err := l.Sym(name)
	return err == nil
}

// Call invokes a C function that returns a 32-bit status (nvmlReturn_t,
// CUresult). The directive keeps the memory that pointer arguments refer to
// alive and in place for the call, as for purego.SyscallN, which
// syscallN is.
//
//go:uintptrescapes
func (l *Lib) Call(name string, args ...uintptr) (int32, error) {
	r, err := l.CallWord(name, args...)
	return int32(uint32(r)), err
}

// CallWord invokes a C function that returns a pointer-sized integer
// (size_t, a pointer), such as cublasLtGetVersion.
//
//go:uintptrescapes
func (l *Lib) CallWord(name string, args ...uintptr) (uintptr, error) {
	p, err := l.Sym(name)
	if err != nil {
		return 0, err
	}
	return syscallN(p, args...), nil
}

// Close unloads the library.
func (l *Lib) Close() { dlclose(l.h) }

// CString copies the NUL-terminated C string at p (at most max bytes),
// such as the static text an error-string function returns.
func CString(p uintptr, max int) string {
	if p == 0 {
		return ""
	}
	base := *(*unsafe.Pointer)(unsafe.Pointer(&p)) // C memory, which Go's collector does not manage
	var b []byte
	for i := range max {
		c := *(*byte)(unsafe.Add(base, i))
		if c == 0 {
			break
		}
		b = append(b, c)
	}
	return string(b)
}
