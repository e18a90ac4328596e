//go:build !unix

package runlog

import "os"

// notifyResize does nothing: without SIGWINCH there is no pseudo-terminal
// to fit either (openPTY fails first).
func notifyResize(chan<- os.Signal) {}
