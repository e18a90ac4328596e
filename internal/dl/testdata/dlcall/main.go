// Command dlcall loads a library through internal/dl and calls
// cpplib_check twice; TestWithoutCgo builds it with CGO_ENABLED=0.
package main

import (
	"fmt"
	"os"
	"runtime"
	"unsafe"

	"github.com/gpurent/gpurent/internal/dl"
)

func main() {
	// Both calls must run on one OS thread for the second to see the
	// thread-local count the first left, as the CUDA backend keeps its
	// context's thread; without this a loaded machine may move the
	// goroutine between the calls (CI saw "calls 1" twice).
	runtime.LockOSThread()
	l, err := dl.Open(os.Args[1])
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(1)
	}
	defer l.Close()
	buf := make([]byte, 256)
	for range 2 {
		n, err := l.Call("cpplib_check", uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)))
		if err != nil || n < 0 {
			fmt.Println("call:", n, err)
			os.Exit(1)
		}
		fmt.Println(string(buf[:n]))
	}
	args := make([]uintptr, 16)
	for i := range args {
		args[i] = uintptr(1000 + i)
	}
	sum, err := l.CallWord("cpplib_sum16", args...)
	fmt.Println("sum16", sum, err)
}
