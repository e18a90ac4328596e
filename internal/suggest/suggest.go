// Package suggest finds the name a user most likely meant when they typed
// one that does not exist: a YAML field, a flag. A wrong guess costs more
// than none, so it guesses only when one name is clearly nearest.
package suggest

import (
	"strings"

	"github.com/gpurent/gpurent/internal/i18n"
)

// DidYouMean is ` (did you mean "X"?)` for the one name typed most likely
// meant, or "" when none is clearly nearest: a suffix for an error that
// names what was not found.
func DidYouMean(typed string, names []string) i18n.Text {
	if near := Closest(typed, names); near != "" {
		return i18n.Textf(" (did you mean %q?)", near)
	}
	return i18n.Text{}
}

// Closest is the one name, compared without case, within a small edit distance of typed (a
// transposition, a missing or extra letter: a third of its length at
// most), or "" when none or more than one is that near.
func Closest(typed string, names []string) string {
	best, bestD, ties := "", len(typed)/3+1, 0
	for _, n := range names {
		d := editDistance(strings.ToLower(typed), strings.ToLower(n))
		switch {
		case d < bestD:
			best, bestD, ties = n, d, 0
		case d == bestD && best != "":
			ties++
		}
	}
	if ties > 0 {
		return ""
	}
	return best
}

// editDistance is the optimal string alignment distance: insertions,
// deletions, substitutions and transpositions of neighbours cost 1.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}
