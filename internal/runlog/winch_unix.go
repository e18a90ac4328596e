//go:build unix

package runlog

import (
	"os"
	"os/signal"
	"syscall"
)

// notifyResize asks for the signal a terminal sends when its size changes.
func notifyResize(c chan<- os.Signal) { signal.Notify(c, syscall.SIGWINCH) }
