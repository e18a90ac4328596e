// Package i18n chooses the language gpurent speaks to a person and holds
// its messages in the other languages, keyed by the English text: English
// is the code itself, so English output is exactly what the code writes,
// and a message missing from a catalog reads in English rather than not
// at all (TestMessagesTranslated, in cmd/gpurent, fails on one).
//
// Only text for people goes through here. JSON keys and values, the
// exit codes and anything a script parses stay English in every
// language.
package i18n

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Lang is a language gpurent speaks.
type Lang string

// The languages.
const (
	English Lang = "en"
	Chinese Lang = "zh" // Simplified Chinese, as mainland platforms write it
)

// Parse reads --lang: en or zh (zh-CN, zh_CN.UTF-8 and en_US are read by
// their first two letters).
func Parse(s string) (Lang, error) {
	switch l := strings.ToLower(s); {
	case l == "en" || strings.HasPrefix(l, "en_") || strings.HasPrefix(l, "en-"):
		return English, nil
	case l == "zh" || strings.HasPrefix(l, "zh_") || strings.HasPrefix(l, "zh-"):
		return Chinese, nil
	}
	return "", fmt.Errorf("--lang: want en or zh, got %q", s)
}

// FromEnv is the language of the locale: the first of LC_ALL,
// LC_MESSAGES and LANG that is set decides, as for the C library, and a
// locale starting with zh is Chinese when its character set is UTF-8 (or
// not named): gpurent writes UTF-8, which a GB18030 or Big5 terminal
// would garble, so those read English (--lang zh still chooses Chinese).
// Anything else (C, POSIX, en_US.UTF-8, unset) is English.
func FromEnv(getenv func(string) string) Lang {
	for _, k := range []string{"LC_ALL", "LC_MESSAGES", "LANG"} {
		if v := getenv(k); v != "" {
			v = strings.ToLower(v)
			name, set, _ := strings.Cut(v, ".")
			set, _, _ = strings.Cut(set, "@")
			if strings.HasPrefix(name, "zh") && (set == "" || set == "utf8" || set == "utf-8") {
				return Chinese
			}
			return English
		}
	}
	return English
}

//go:embed zh.yaml
var zhYAML []byte

// parseCatalog reads a catalog file: pairs of lines, "- en: " and
// "  zh: ", each followed by a JSON string (the file is YAML too, for
// people and editors), with comments and blank lines between them. A
// line-by-line reader rather than a YAML decoder: every Chinese run reads
// the catalog, and this takes a third of the decoder's time
// (docs/BENCHMARKS.md).
func parseCatalog(b []byte) (map[string]string, error) {
	m := map[string]string{}
	var en string
	n, at := 0, 0
	for line := range strings.SplitSeq(string(b), "\n") {
		at++
		if t := strings.TrimSpace(line); t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		var q string
		var want string
		if n%2 == 0 {
			want = "- en: "
		} else {
			want = "  zh: "
		}
		q, ok := strings.CutPrefix(line, want)
		if !ok {
			return nil, fmt.Errorf("i18n catalog: line %d: want %q and a JSON string, got %q", at, want, line)
		}
		var v string
		if err := json.Unmarshal([]byte(q), &v); err != nil || v == "" {
			return nil, fmt.Errorf("i18n catalog: line %d: want a non-empty JSON string, got %s", at, q)
		}
		n++
		if n%2 == 1 {
			if _, dup := m[v]; dup {
				return nil, fmt.Errorf("i18n catalog: line %d: %q is there twice", at, v)
			}
			en = v
			continue
		}
		m[en] = v
	}
	if n%2 == 1 {
		return nil, fmt.Errorf("i18n catalog: %q has no zh line", en)
	}
	return m, nil
}

// Printer writes messages in one language. The nil Printer, and the
// English one, write the English text unchanged.
type Printer struct {
	lang Lang
	msgs map[string]string
}

// New is the Printer for l. The embedded catalog is checked by the tests,
// so an error here is a broken build.
func New(l Lang) (*Printer, error) {
	if l != Chinese {
		return &Printer{lang: English}, nil
	}
	m, err := parseCatalog(zhYAML)
	if err != nil {
		return nil, err
	}
	return &Printer{lang: l, msgs: m}, nil
}

// Lang is the printer's language.
func (p *Printer) Lang() Lang {
	if p == nil {
		return English
	}
	return p.lang
}

// T is the message s in the printer's language. s must be a string
// literal (or a constant), so that the tests can find every message.
func (p *Printer) T(s string) string { return p.Lookup(s) }

// Tf formats the message format in the printer's language. A translation
// may reorder the arguments with explicit indexes (%[2]s); %w formats as
// %v, as in an error's text; an argument that is a Text is written in the
// printer's language too.
func (p *Printer) Tf(format string, args ...any) string {
	return p.Text(Text{Format: format, Args: args})
}

// Fprintf writes Tf's text to w.
func (p *Printer) Fprintf(w io.Writer, format string, args ...any) (int, error) {
	return io.WriteString(w, p.Tf(format, args...))
}

// Lookup is s's translation, or s itself: for text that is not a literal
// at the call, such as a command's help, whose completeness a test checks
// by walking the commands.
func (p *Printer) Lookup(s string) string {
	if p == nil || p.msgs == nil {
		return s
	}
	if t, ok := p.msgs[s]; ok {
		return t
	}
	return s
}

// sprintf is fmt.Sprintf with %w read as %v, as fmt.Errorf reads it.
func sprintf(format string, args ...any) string {
	if strings.Contains(format, "%w") {
		return fmt.Errorf(format, args...).Error()
	}
	return fmt.Sprintf(format, args...)
}

// Catalog is l's messages by their English text; nil for English, which
// has none.
func Catalog(l Lang) (map[string]string, error) {
	if l != Chinese {
		return nil, nil
	}
	return parseCatalog(zhYAML)
}
