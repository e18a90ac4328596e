package i18n

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Text is a message with its arguments, for a package that says something
// a person reads (a bill's warning, a plan's reason) without knowing the
// reader's language: its String and its JSON are the English, so scripts
// read what they always did, and a Printer writes it in its language.
// An argument that is itself a Text is written in the same language.
type Text struct {
	Format string
	Args   []any
}

// Textf is the message format with args. format must be a literal, as for
// Printer.Tf.
func Textf(format string, args ...any) Text { return Text{Format: format, Args: args} }

// String is the English text.
func (t Text) String() string { return (*Printer)(nil).Text(t) }

// MarshalJSON writes the English text, as a string, with <, > and &
// as they are: escaped here they would stay escaped in a document whose
// encoder does not escape them (report.WriteJSON), and the JSON would
// differ from the plain string's.
func (t Text) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(t.String()); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// IsZero reports a Text that says nothing: never set, or empty.
func (t Text) IsZero() bool { return t.String() == "" }

// Text writes t in the printer's language.
func (p *Printer) Text(t Text) string {
	args := t.Args
	for i, a := range t.Args {
		if s, ok := a.(Text); ok {
			if &args[0] == &t.Args[0] {
				args = append([]any(nil), t.Args...)
			}
			args[i] = p.Text(s)
		}
	}
	return sprintf(p.Lookup(t.Format), args...)
}

// Plural is n things as a Text: one's format for 1, many's otherwise
// ("%d plan", "%d plans"), each a literal the catalog translates.
func Plural(n int, one, many string) Text {
	if n == 1 {
		return Textf(one, n)
	}
	return Textf(many, n)
}

// Plain is text that has no message of its own: a name, a path, a
// device's words, or a sentence not yet in the catalog (grep Plain for
// what is left to translate). It is written as it is in every language.
func Plain(s string) Text { return Text{Format: "%s", Args: []any{s}} }

// UnmarshalJSON reads a text written by MarshalJSON: its English, as
// Plain text.
func (t *Text) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*t = Plain(s)
	return nil
}

// Join is ts, each in the reader's language, with sep between them (sep
// is punctuation, written as it is).
func Join(ts []Text, sep string) Text {
	args := make([]any, len(ts))
	verbs := make([]string, len(ts))
	for i, t := range ts {
		args[i], verbs[i] = t, "%s"
	}
	return Text{Format: strings.Join(verbs, strings.ReplaceAll(sep, "%", "%%")), Args: args}
}

// Key marks a message kept in data as its English text (a JSON field
// scripts read) and translated where it is shown, with Printer.Lookup. It
// returns s unchanged; TestMessagesTranslated finds s by this call.
func Key(s string) string { return s }
