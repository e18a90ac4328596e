package supervise

import (
	"syscall"

	"github.com/gpurent/gpurent/internal/i18n"
)

// Windows has neither process groups to signal nor SIGUSR1: gpurent run
// refuses to start there (cmd/gpurent), and these let the package build
// for what Windows does use of it (a pull writing the tracker file).

const defaultCheckpointSignal = syscall.Signal(0)

var errNoSignals = i18n.Errorf("signals to processes are not supported on Windows")

func kill(int, syscall.Signal) error { return errNoSignals }

func reapGroup(int) {}

func childAttr() *syscall.SysProcAttr { return nil }
