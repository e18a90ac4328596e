package i18n

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
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
	format := p.Lookup(t.Format)
	for i, a := range t.Args {
		var s string
		switch a := a.(type) {
		case Text:
			s = p.Text(a)
		case data:
			s = p.Lookup(string(a))
		case sentence:
			s = p.Text(Text(a))
			if r, n := utf8.DecodeRuneInString(s); n > 0 {
				s = string(unicode.ToUpper(r)) + s[n:]
			}
		case error:
			if p == nil || p.msgs == nil {
				continue
			}
			// Written as a string, an error's %w is its %v.
			s, format = p.Error(a), wrapVerb.ReplaceAllString(format, "%${1}v")
		default:
			continue
		}
		if &args[0] == &t.Args[0] {
			args = append([]any(nil), t.Args...)
		}
		args[i] = s
	}
	return sprintf(format, args...)
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

// Plains is each of xs as Plain text: a list of names or paths.
func Plains(xs []string) []Text {
	out := make([]Text, len(xs))
	for i, x := range xs {
		out[i] = Plain(x)
	}
	return out
}

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

// Join is ts, each in the reader's language, with sep between them: sep
// is punctuation, written in the reader's language where the catalog has
// it ("; " is "；" in Chinese).
func Join(ts []Text, sep string) Text {
	args := make([]any, 0, 2*len(ts))
	for i, t := range ts {
		if i > 0 {
			args = append(args, data(sep))
		}
		args = append(args, t)
	}
	return Text{Format: strings.Repeat("%s", len(args)), Args: args}
}

// separators are the punctuation Join translates.
var _ = Key("; ")

// Key marks a message kept in data as its English text (a JSON field
// scripts read) and translated where it is shown, with Printer.Lookup. It
// returns s unchanged; TestMessagesTranslated finds s by this call.
func Key(s string) string { return s }

// data is a string kept in data, written translated (Data).
type data string

// Data is s, a message kept in data as its English text and marked where
// it is made with Key, as a Text: written in the reader's language where
// the catalog has it, as it is where not.
func Data(s string) Text { return Text{Format: "%s", Args: []any{data(s)}} }

// sentence is a Text written with its first letter upper-case.
type sentence Text

// Sentence is t starting a sentence: its first letter upper-case, in a
// language that has cases.
func Sentence(t Text) Text { return Text{Format: "%s", Args: []any{sentence(t)}} }

// wrapVerb is a %w verb, with its flags and index (%[2]w): as a string, an
// error's %w is its %v.
var wrapVerb = regexp.MustCompile(`%([-+# 0]*\d*(?:\.\d+)?(?:\[\d+\])?)w`)
