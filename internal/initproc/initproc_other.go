//go:build !linux

package initproc

import "errors"

// Init is PID 1's child; only Linux has one.
type Init struct{}

// Start is Linux's only: elsewhere gpurent is not a container's PID 1.
func Start(argv []string) (*Init, error) { return nil, errors.ErrUnsupported }

// Wait is never reached: Start fails.
func (i *Init) Wait() (int, error) { return 0, errors.ErrUnsupported }
