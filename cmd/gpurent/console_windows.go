package main

import (
	"os"

	"golang.org/x/sys/windows"
)

// enableEscapes turns on the Windows console's processing of the escape
// sequences gpurent's progress line and colours use; the console leaves
// it off for a program that does not ask (then they show as "←[K"). A
// file or pipe has no console mode, and is left alone.
func enableEscapes(f *os.File) {
	h := windows.Handle(f.Fd())
	var mode uint32
	if windows.GetConsoleMode(h, &mode) == nil {
		_ = windows.SetConsoleMode(h, mode|windows.ENABLE_VIRTUAL_TERMINAL_PROCESSING)
	}
}
