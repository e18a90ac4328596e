//go:build !linux

package runlog

import (
	"os"

	"github.com/gpurent/gpurent/internal/i18n"
)

// errNoPTY is openPTY's answer where gpurent makes no pseudo-terminal.
var errNoPTY = i18n.Errorf("no pseudo-terminal on this system")

// openPTY: pseudo-terminals are made on Linux only, where rented GPUs
// run; elsewhere the command writes to pipes.
func openPTY() (master, slave *os.File, err error) { return nil, nil, errNoPTY }

func setSize(*os.File, int, int) {}
