package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/gpurent/gpurent/internal/report"
)

// Every table in the recorded outputs, English and Chinese, lines up: each
// column starts at the same terminal column on every row, CJK characters
// counted two columns wide, as terminals draw them.
func TestTablesLineUp(t *testing.T) {
	scripts, err := filepath.Glob("testdata/script/*.txtar")
	if err != nil {
		t.Fatal(err)
	}
	tables, zh := 0, 0
	for _, s := range scripts {
		a, err := txtar.ParseFile(s)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range a.Files {
			if !strings.HasSuffix(f.Name, ".txt") {
				continue
			}
			for _, block := range strings.Split(string(f.Data), "\n\n") {
				lines := strings.Split(strings.Trim(block, "\n"), "\n")
				if len(lines) < 2 || len(sep.Split(strings.TrimSpace(lines[0]), -1)) < 3 {
					continue
				}
				tables++
				if report.Width(block) != len([]rune(block)) {
					zh++
				}
				for _, p := range columnStarts(lines[0]) {
					for _, l := range lines[1:] {
						if !startsAt(l, p) {
							t.Errorf("%s, %s: a column starts at %d in\n%s\nbut not in\n%s", filepath.Base(s), f.Name, p, lines[0], l)
						}
					}
				}
			}
		}
	}
	if tables < 5 || zh < 3 {
		t.Errorf("%d tables, %d with wide characters: the recorded outputs are not where this test looks", tables, zh)
	}
	t.Logf("%d tables line up, %d of them with wide characters", tables, zh)
}

var sep = regexp.MustCompile(`\s{2,}`)

// columnStarts are the terminal columns where a header's columns begin:
// after two or more spaces.
func columnStarts(header string) []int {
	var out []int
	col, spaces := 0, 0
	for _, r := range header {
		if r == ' ' {
			spaces++
		} else {
			if spaces >= 2 {
				out = append(out, col)
			}
			spaces = 0
		}
		col += report.Width(string(r))
	}
	return out
}

// startsAt reports whether a cell may begin at terminal column p of line:
// a character starts there, after a space. A line that ends before p had
// empty cells from there on.
func startsAt(line string, p int) bool {
	col := 0
	prev := ' '
	for _, r := range line {
		if col == p {
			return prev == ' '
		}
		if col > p {
			return false
		}
		col += report.Width(string(r))
		prev = r
	}
	return col <= p
}

// The check finds a table padded by runes rather than terminal columns.
func TestTablesLineUpCatchesRunePadding(t *testing.T) {
	header := "报价  合计"
	good, bad := "a     1", "a    12"
	p := columnStarts(header)
	if len(p) != 1 || p[0] != 6 || !startsAt(good, p[0]) || startsAt(bad, p[0]) {
		t.Errorf("starts %v; good %v, bad %v", p, startsAt(good, 6), startsAt(bad, 6))
	}
}
