//go:build !linux

package runlog

import (
	"errors"
	"os"
)

// errNoPTY is openPTY's answer where gpurent makes no pseudo-terminal.
var errNoPTY = errors.New("no pseudo-terminal on this system")

// openPTY: pseudo-terminals are made on Linux only, where rented GPUs
// run; elsewhere the command writes to pipes.
func openPTY() (master, slave *os.File, err error) { return nil, nil, errNoPTY }

func setSize(*os.File, int, int) {}
