// Package usage marks the errors that are the caller's to fix: a wrong
// flag, argument or input file. Every gpurent command exits 2 for them, so
// the packages that check a command's options return them and cmd maps
// them to the code, without each package knowing the exit codes.
package usage

import (
	"errors"
	"fmt"
)

// Error is bad usage or bad input; its message names what is wrong.
type Error struct{ Err error }

func (e Error) Error() string { return e.Err.Error() }
func (e Error) Unwrap() error { return e.Err }

// Errorf is a usage error with a formatted message (%w wraps as usual).
func Errorf(format string, a ...any) error { return Error{fmt.Errorf(format, a...)} }

// Wrap marks err as bad usage; nil stays nil.
func Wrap(err error) error {
	if err == nil {
		return nil
	}
	return Error{err}
}

// Is reports whether err, or an error it wraps, is bad usage.
func Is(err error) bool {
	var e Error
	return errors.As(err, &e)
}
