// Package report renders command results as aligned tables for people or
// indented JSON for scripts. Both are written whole, never streamed, so a
// failed command prints no half table.
package report

import (
	"github.com/gpurent/gpurent/internal/i18n"
	"golang.org/x/text/width"

	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Formats a command can render.
const (
	Table = "table"
	JSON  = "json"
)

// CheckFormat rejects anything but table and json.
func CheckFormat(f string) error {
	if f != Table && f != JSON {
		return i18n.Errorf("-o: unknown format %q: want table or json", f)
	}
	return nil
}

// WriteJSON writes v as indented JSON with a trailing newline.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// Tab is a table under construction.
type Tab struct {
	header []string
	rows   [][]string
	paint  map[int]func(string) string
}

// NewTab starts a table with the given column names.
func NewTab(header ...string) *Tab { return &Tab{header: header} }

// Row appends a row; cells beyond the header are dropped, missing ones
// blank. Cells are text: each passes through Safe, since tables show names
// found on the machine (files, processes, users) that someone else chose.
func (t *Tab) Row(cells ...string) {
	r := make([]string, len(t.header))
	for i := range min(len(cells), len(r)) {
		r[i] = Safe(cells[i])
	}
	t.rows = append(t.rows, r)
}

// Paint styles column col's cells (not its header) with f, colour for a
// terminal, once they have been measured and padded: the one way a cell's
// text reaches the terminal other than as text.
func (t *Tab) Paint(col int, f func(string) string) {
	if t.paint == nil {
		t.paint = map[int]func(string) string{}
	}
	t.paint[col] = f
}

// Len is the number of rows.
func (t *Tab) Len() int { return len(t.rows) }

// Write renders the table with two spaces between columns. It pads by
// display width rather than by rune, as text/tabwriter does, because
// provider names such as 阿里云 take two terminal columns a character.
func (t *Tab) Write(w io.Writer) error {
	widths := make([]int, len(t.header))
	all := append([][]string{t.header}, t.rows...)
	for _, r := range all {
		for i, c := range r {
			widths[i] = max(widths[i], Width(c))
		}
	}
	var b strings.Builder
	for n, r := range all {
		for i, c := range r {
			if f := t.paint[i]; f != nil && n > 0 {
				b.WriteString(f(c))
			} else {
				b.WriteString(c)
			}
			if i < len(r)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-Width(c)+2))
			}
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Width is the number of terminal columns s takes: East Asian wide and
// full-width characters count two, ANSI colour sequences none.
func Width(s string) int {
	n := 0
	inEsc := false
	for _, r := range s {
		if inEsc {
			inEsc = r != 'm'
			continue
		}
		if r == '\x1b' {
			inEsc = true
			continue
		}
		n++
		if wide(r) {
			n++
		}
	}
	return n
}

// wide reports a character a terminal draws two columns wide: East Asian
// Wide and Fullwidth in Unicode's East Asian Width property (UAX #11), as
// golang.org/x/text/width reads it. Ambiguous characters (·, ×, ≥) are
// one column, as terminals outside CJK locales draw them.
func wide(r rune) bool {
	switch width.LookupRune(r).Kind() {
	case width.EastAsianWide, width.EastAsianFullwidth:
		return true
	}
	return false
}

// Safe is s as a terminal may show it: control characters, invalid UTF-8
// and the controls that reorder bidirectional text are written as Go
// escapes (\r, \x1b, \xff, \u202e); everything else is left as it is. On
// a rented machine names come from other people: a file or process named
// "x\r\x1b[2K" would otherwise erase the line of gpurent's report that
// names it, and U+202E shows a name backwards. ls and git quote such names
// on a terminal for the same reason.
func Safe(s string) string {
	i := firstUnsafe(s)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.WriteString(s[:i])
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unsafeRune(r):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// SafeLines is Safe for text of several lines: the newlines stay.
func SafeLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = Safe(l)
	}
	return strings.Join(lines, "\n")
}

// firstUnsafe is the index of the first byte Safe changes, or -1.
func firstUnsafe(s string) int {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if unsafeRune(r) || r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return -1
}

// unsafeRune reports the runes Safe escapes: C0 and C1 controls, DEL and
// the bidirectional controls.
func unsafeRune(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// Money formats an amount with two decimals.
func Money(v float64) string { return fmt.Sprintf("%.2f", v) }

// Percent formats a share as a percentage with one decimal.
func Percent(v float64) string { return fmt.Sprintf("%.1f%%", v*100) }

// Bytes is a byte count for a person: B, KiB, MiB or GiB.
func Bytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// Count is n and the noun, plural unless n is 1: "1 day", "3 checkpoints",
// "2 entries", "4 processes". Nouns in gpurent's messages are regular, so
// English's regular rules are all it needs.
func Count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %s", n, pluralNoun(noun))
}

func pluralNoun(s string) string {
	switch {
	case strings.HasSuffix(s, "y") && len(s) > 1 && !strings.ContainsRune("aeiou", rune(s[len(s)-2])):
		return s[:len(s)-1] + "ies"
	case strings.HasSuffix(s, "s"), strings.HasSuffix(s, "x"), strings.HasSuffix(s, "ch"), strings.HasSuffix(s, "sh"):
		return s + "es"
	}
	return s + "s"
}

// Duration is d in the fewest words that still say it: "1h05m", "3m20s",
// "45s".
func Duration(d time.Duration) string {
	d = d.Round(time.Second)
	switch {
	case d >= time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	case d >= time.Minute:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%ds", int(d.Seconds()))
}

// Quote quotes text a person gave, for an error message, cut to 60
// characters: a megabyte pasted by mistake must not come back whole.
func Quote(s string) string {
	r := []rune(s)
	if len(r) <= 60 {
		return strconv.Quote(s)
	}
	return strconv.Quote(string(r[:60])) + fmt.Sprintf("… (%d bytes)", len(s))
}
