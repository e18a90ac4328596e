//go:build unix

package store

// canFIFO: this system has FIFOs to plant (mkfifo, unix_test.go).
const canFIFO = true
