package initproc

import (
	"errors"
	"os"
	"os/signal"
	"syscall"

	"github.com/gpurent/gpurent/internal/i18n"
)

// Init is PID 1's child: this program again, running the command line.
type Init struct {
	child *os.Process
	sigc  chan os.Signal
}

// Start runs this program again, as a child, with argv and the same
// environment and standard files, and forwards the stop signals to it.
// Call it only as PID 1, and then only Wait: every child of this process
// is reaped, so nothing else in it may start processes of its own.
func Start(argv []string) (*Init, error) {
	// The signals passed on are the ones gpurent run acts on (a container
	// runtime's stop, Ctrl-C, a closed terminal). The kernel drops others
	// for a PID 1 without a handler, as before this package: SIGUSR1
	// passed on would kill the child, which does not expect it.
	sigc := make(chan os.Signal, 4)
	for _, s := range []os.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP} {
		// Under nohup SIGHUP is ignored; the child inherits that, and a
		// handler here would undo it.
		if s == syscall.SIGHUP && signal.Ignored(s) {
			continue
		}
		signal.Notify(sigc, s) // before the start, so that none is lost
	}
	// /proc/self/exe is this binary even when argv[0] is a bare name or
	// the file has since been replaced.
	child, err := os.StartProcess("/proc/self/exe", argv, &os.ProcAttr{Files: []*os.File{os.Stdin, os.Stdout, os.Stderr}})
	if err != nil {
		signal.Stop(sigc)
		return nil, i18n.Errorf("start gpurent as PID 1's child: %w", err)
	}
	go func() {
		// Signal goes through a pidfd: once the child is reaped it fails
		// instead of reaching a process that took its pid.
		for s := range sigc {
			child.Signal(s)
		}
	}()
	return &Init{child: child, sigc: sigc}, nil
}

// Wait reaps every process the kernel hands to PID 1 until the child
// ends, and returns the child's exit code.
func (i *Init) Wait() (int, error) {
	defer func() { signal.Stop(i.sigc); close(i.sigc) }()
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return 1, i18n.Errorf("wait for gpurent (pid %d) as PID 1: %w", i.child.Pid, err)
		}
		if pid == i.child.Pid {
			return exitCode(ws), nil
		}
	}
}

// exitCode is the status a shell would report for ws: the exit code, or
// 128 plus the signal that killed the process.
func exitCode(ws syscall.WaitStatus) int {
	switch {
	case ws.Exited():
		return ws.ExitStatus()
	case ws.Signaled():
		return 128 + int(ws.Signal())
	}
	return 1
}
