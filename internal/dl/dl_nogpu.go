//go:build unix && nogpu

package dl

import "fmt"

// dlopen refuses: the nogpu build has no dynamic loader to call (see the
// package comment), which is what lets it run on systems without glibc's.
func dlopen(string) (uintptr, error) {
	return 0, fmt.Errorf("%w: it is the static build (go build -tags nogpu), which cannot reach NVIDIA's driver; on a GPU machine use the standard build", ErrNoLoader)
}

func dlsym(uintptr, string) (uintptr, error) {
	return 0, fmt.Errorf("no library is loaded in the nogpu build")
}

func dlclose(uintptr) {}

// syscallN is never reached: no library opens, so no symbol resolves.
func syscallN(uintptr, ...uintptr) uintptr { return 0 }
