package runlog

import (
	"fmt"
	"os"
	"syscall"
	"unsafe"
)

// openPTY opens a pseudo-terminal pair: the master, which gpurent reads,
// and the slave, the command's terminal. Neither becomes anyone's
// controlling terminal: the command keeps the session and stdin it had.
func openPTY() (master, slave *os.File, err error) {
	master, err = os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	var n uint32
	var unlock int32
	err = ioctl(master, syscall.TIOCSPTLCK, unsafe.Pointer(&unlock))
	if err == nil {
		err = ioctl(master, syscall.TIOCGPTN, unsafe.Pointer(&n))
	}
	if err == nil {
		slave, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	}
	if err == nil {
		// Output passes unchanged: without ONLCR a "\n" stays "\n" (the
		// real terminal adds its "\r"), and the log file gets what the
		// command wrote.
		var t syscall.Termios
		if err = ioctl(slave, syscall.TCGETS, unsafe.Pointer(&t)); err == nil {
			t.Oflag &^= syscall.ONLCR
			err = ioctl(slave, syscall.TCSETS, unsafe.Pointer(&t))
		}
		if err != nil {
			slave.Close()
		}
	}
	if err != nil {
		master.Close()
		return nil, nil, err
	}
	return master, slave, nil
}

// setSize sets the pseudo-terminal's window size (through the master,
// which stays non-blocking: Fd would make it blocking, and Close could no
// longer interrupt a Read).
func setSize(master *os.File, rows, cols int) {
	ws := struct{ Row, Col, X, Y uint16 }{Row: uint16(rows), Col: uint16(cols)}
	ioctl(master, syscall.TIOCSWINSZ, unsafe.Pointer(&ws))
}

func ioctl(f *os.File, req uintptr, arg unsafe.Pointer) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var errno syscall.Errno
	if err := rc.Control(func(fd uintptr) {
		_, _, errno = syscall.Syscall(syscall.SYS_IOCTL, fd, req, uintptr(arg))
	}); err != nil {
		return err
	}
	if errno != 0 {
		return errno
	}
	return nil
}
