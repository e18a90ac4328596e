package i18n

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strings"
)

// Error is an error whose message is a catalog message: its Error is the
// English, exactly as fmt.Errorf writes it, and Printer.Error writes it
// in the reader's language. It wraps what its %w verbs wrap.
type Error struct {
	text Text
	err  error
}

// Errorf is fmt.Errorf with a message the catalog translates. format must
// be a literal, as for Printer.Tf. The arguments are kept for the
// translation, made when the error is shown: give values, not things that
// change after.
func Errorf(format string, args ...any) error {
	if strings.Count(format, "%w") > 1 {
		return fmt.Errorf(format, args...) // translated by its parts
	}
	return &Error{text: Textf(format, args...), err: fmt.Errorf(format, args...)}
}

func (e *Error) Error() string { return e.err.Error() }

// Unwrap is the error its %w verb wraps.
func (e *Error) Unwrap() error { return errors.Unwrap(e.err) }

// Message is the error's format and arguments.
func (e *Error) Message() (string, []any) { return e.text.Format, e.text.Args }

// messenger is an error that keeps the message it was made from
// (Error, usage.Error).
type messenger interface {
	Message() (format string, args []any)
}

// Error is err's message in the printer's language. Each layer of the
// chain is translated where it can be: a message made by Errorf (or any
// error with a Message method), a wrapping fmt.Errorf's wrapped part, the
// system's error numbers under a path error; the rest stays as it is.
func (p *Printer) Error(err error) string {
	if err == nil {
		return ""
	}
	if p == nil || p.msgs == nil {
		return err.Error()
	}
	if m, ok := err.(messenger); ok {
		if format, args := m.Message(); format != "" {
			return p.Text(Text{Format: format, Args: args})
		}
	}
	switch e := err.(type) {
	case *exec.ExitError:
		// "exit status 1"; a signal's words ("signal: killed") are the
		// system's.
		if code := e.ExitCode(); code >= 0 {
			return p.Tf("exit status %d", code)
		}
	case *fs.PathError:
		return e.Op + " " + e.Path + ": " + p.Error(e.Err)
	case *os.LinkError:
		return e.Op + " " + e.Old + " " + e.New + ": " + p.Error(e.Err)
	case *os.SyscallError:
		return e.Syscall + ": " + p.Error(e.Err)
	}
	var ws []error
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		ws = []error{u.Unwrap()}
	case interface{ Unwrap() []error }:
		ws = u.Unwrap()
	}
	// fmt.Errorf("reading %s: %w", ...): its own words stay, and each part
	// it wraps is translated where its text is found once.
	if len(ws) > 0 {
		s := err.Error()
		for _, w := range ws {
			if w == nil {
				continue
			}
			if t := w.Error(); t != "" && strings.Count(s, t) == 1 {
				s = strings.Replace(s, t, p.Error(w), 1)
			}
		}
		return s
	}
	return p.Lookup(err.Error())
}

// The errors a file or network call most often ends in, by their English
// text: the catalog has each (TestMessagesTranslated finds them by Key),
// and Printer.Error looks them up.
var _ = []string{
	Key("no such file or directory"),
	Key("permission denied"),
	Key("file exists"),
	Key("no space left on device"),
	Key("read-only file system"),
	Key("not a directory"),
	Key("is a directory"),
	Key("directory not empty"),
	Key("invalid cross-device link"),
	Key("device or resource busy"),
	Key("operation not permitted"),
	Key("too many levels of symbolic links"),
	Key("connection refused"),
	Key("connection timed out"),
	Key("file name too long"),
	Key("disk quota exceeded"),
	Key("input/output error"),
	Key("context deadline exceeded"),
	Key("context canceled"),
	Key("unexpected EOF"),
}
