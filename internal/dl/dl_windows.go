package dl

import (
	"fmt"
	"runtime"
)

// dlopen refuses: gpurent reaches NVIDIA's libraries on Linux, where rented
// GPUs are; on Windows it prices, plans and pulls checkpoints.
func dlopen(string) (uintptr, error) {
	return 0, fmt.Errorf("%w on %s: NVIDIA's libraries are reached on Linux, where rented GPUs are", ErrNoLoader, runtime.GOOS)
}

func dlsym(uintptr, string) (uintptr, error) {
	return 0, fmt.Errorf("no library is loaded on %s", runtime.GOOS)
}

func dlclose(uintptr) {}

// syscallN is never reached: no library opens, so no symbol resolves.
func syscallN(uintptr, ...uintptr) uintptr { return 0 }
