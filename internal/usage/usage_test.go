package usage

import (
	"errors"
	"fmt"
	"testing"
)

func TestIs(t *testing.T) {
	base := errors.New("boom")
	for _, c := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{base, false},
		{Wrap(base), true},
		{fmt.Errorf("run: %w", Errorf("--keep: want 0 or more, got %d", -1)), true},
		{Wrap(nil), false},
	} {
		if got := Is(c.err); got != c.want {
			t.Errorf("Is(%v) = %v, want %v", c.err, got, c.want)
		}
	}
	if err := Errorf("--x: %w", base); !errors.Is(err, base) || err.Error() != "--x: boom" {
		t.Errorf("Errorf lost what it wraps: %v", err)
	}
}
