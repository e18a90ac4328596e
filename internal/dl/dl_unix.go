//go:build unix && !nogpu

package dl

import (
	"fmt"
	"runtime"

	"github.com/ebitengine/purego"
)

// dlopen keeps the goroutine on one OS thread from dlopen to dlerror:
// dlerror's message is per thread, and purego reads it in a second call,
// so a goroutine moved between the two reads an empty message (seen under
// load in the tests).
func dlopen(name string) (uintptr, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	h, err := purego.Dlopen(name, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil && err.Error() == "" {
		err = fmt.Errorf("%s: cannot be loaded", name)
	}
	return h, err
}

func dlsym(h uintptr, name string) (uintptr, error) { return purego.Dlsym(h, name) }

func dlclose(h uintptr) { purego.Dlclose(h) }

func syscallN(p uintptr, args ...uintptr) uintptr {
	r, _, _ := purego.SyscallN(p, args...)
	return r
}
