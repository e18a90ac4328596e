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
// Format and Args are Errorf's, kept so that the message can be written
// in the user's language (internal/i18n) from the same words.
type Error struct {
	Err    error
	Format string
	Args   []any
}

func (e Error) Error() string { return e.Err.Error() }
func (e Error) Unwrap() error { return e.Err }

// Message is the format and arguments the message was made from; the
// format is empty for an error Wrap marked.
func (e Error) Message() (string, []any) { return e.Format, e.Args }

// Errorf is a usage error with a formatted message (%w wraps as usual).
func Errorf(format string, a ...any) error {
	return Error{Err: fmt.Errorf(format, a...), Format: format, Args: a}
}

// Wrap marks err as bad usage; nil stays nil.
func Wrap(err error) error {
	if err == nil {
		return nil
	}
	return Error{Err: err}
}

// Is reports whether err, or an error it wraps, is bad usage.
func Is(err error) bool {
	var e Error
	return errors.As(err, &e)
}
