package dl

import (
	"strings"
	"testing"
	"unsafe"
)

func TestMissingLibrary(t *testing.T) {
	_, err := Open("libdoes-not-exist.so.7", "libalso-missing.so")
	if err == nil || !strings.Contains(err.Error(), "libdoes-not-exist.so.7") || !strings.Contains(err.Error(), "libalso-missing.so") {
		t.Errorf("%v", err)
	}
}

// libc is on every test machine: call a real function through the same
// path the driver bindings use.
func TestCallLibc(t *testing.T) {
	l, err := Open("libc.so.6")
	if err != nil {
		t.Skipf("no libc.so.6 here: %v", err)
	}
	defer l.Close()
	s := []byte("gpurent\x00")
	n, err := l.Call("strlen", uintptr(unsafe.Pointer(&s[0])))
	if err != nil || n != 7 {
		t.Errorf("strlen = %d, %v", n, err)
	}
	if _, err := l.Call("no_such_function_here"); err == nil || !strings.Contains(err.Error(), "no_such_function_here") {
		t.Errorf("missing symbol: %v", err)
	}
	if l.Has("no_such_function_here") || !l.Has("strlen") {
		t.Error("Has")
	}
}
