// Package report renders command results as aligned tables for people or
// indented JSON for scripts. Both are written whole, never streamed, so a
// failed command prints no half table.
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Formats a command can render.
const (
	Table = "table"
	JSON  = "json"
)

// CheckFormat rejects anything but table and json.
func CheckFormat(f string) error {
	if f != Table && f != JSON {
		return fmt.Errorf("-o: unknown format %q: want table or json", f)
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
}

// NewTab starts a table with the given column names.
func NewTab(header ...string) *Tab { return &Tab{header: header} }

// Row appends a row; cells beyond the header are dropped, missing ones blank.
func (t *Tab) Row(cells ...string) {
	r := make([]string, len(t.header))
	copy(r, cells)
	t.rows = append(t.rows, r)
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
	for _, r := range all {
		for i, c := range r {
			b.WriteString(c)
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

func wide(r rune) bool {
	return (r >= 0x1100 && r <= 0x115F) || (r >= 0x2E80 && r <= 0xA4CF) || (r >= 0xAC00 && r <= 0xD7A3) ||
		(r >= 0xF900 && r <= 0xFAFF) || (r >= 0xFE30 && r <= 0xFE4F) || (r >= 0xFF00 && r <= 0xFF60) || (r >= 0xFFE0 && r <= 0xFFE6)
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
