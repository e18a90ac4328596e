//go:build !windows

package main

import "os"

// enableEscapes: terminals elsewhere process escape sequences already.
func enableEscapes(*os.File) {}
