package report

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTabAlignsWideCharacters(t *testing.T) {
	tab := NewTab("A", "B")
	tab.Row("阿里云", "1")
	tab.Row("AWS", "2", "dropped")
	tab.Row("x")
	var b bytes.Buffer
	if err := tab.Write(&b); err != nil {
		t.Fatal(err)
	}
	// 阿里云 takes 6 columns, so column B starts at 8 on every line.
	want := "A       B\n阿里云  1\nAWS     2\nx       \n"
	if b.String() != want {
		t.Errorf("got\n%q\nwant\n%q", b.String(), want)
	}
	if Width("共绩算力") != 8 || Width("abc") != 3 {
		t.Error("Width")
	}
}

func TestCheckFormat(t *testing.T) {
	if CheckFormat("table") != nil || CheckFormat("json") != nil || CheckFormat("yaml") == nil {
		t.Error("CheckFormat")
	}
}

func TestCount(t *testing.T) {
	for _, tc := range []struct {
		n    int
		noun string
		want string
	}{
		{1, "day", "1 day"}, {2, "day", "2 days"}, {0, "checkpoint", "0 checkpoints"},
		{1, "entry", "1 entry"}, {3, "entry", "3 entries"}, {2, "process", "2 processes"},
		{5, "key", "5 keys"}, {2, "box", "2 boxes"}, {-1, "file", "-1 files"},
	} {
		if got := Count(tc.n, tc.noun); got != tc.want {
			t.Errorf("Count(%d, %q) = %q, want %q", tc.n, tc.noun, got, tc.want)
		}
	}
}

func TestSafe(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"/root/data/a.bin", "/root/data/a.bin"},
		{"阿里云 ü", "阿里云 ü"},
		{"evil\x1b[2K\rhidden", `evil\x1b[2K\rhidden`},
		{"new\nline\ttab", `new\nline\ttab`},
		{"bad\xffutf8", `bad\xffutf8`},
		{"c1\u009bx", `c1\u009bx`},
		{"del\x7f", `del\x7f`},
		{"txt.\u202eexe.sh", `txt.\u202eexe.sh`},
		{"real \ufffd stays", "real \ufffd stays"},
		{"", ""},
	} {
		if got := Safe(c.in); got != c.want {
			t.Errorf("Safe(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestSafeLines(t *testing.T) {
	if got, want := SafeLines("a.yaml:3: bad\nb\r\x1b[2K"), "a.yaml:3: bad\n"+`b\r\x1b[2K`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// FuzzSafe: whatever a name holds, Safe's result carries no byte a terminal
// acts on, is valid UTF-8, and leaves a name with nothing to escape alone.
func FuzzSafe(f *testing.F) {
	for _, s := range []string{"plain", "evil\x1b[2K\r", "\xff\xfe", "\u202e", "\u009b[31m"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Safe(s)
		if !utf8.ValidString(got) {
			t.Fatalf("Safe(%q) = %q: not UTF-8", s, got)
		}
		if i := firstUnsafe(got); i >= 0 {
			t.Fatalf("Safe(%q) = %q: unsafe at %d", s, got, i)
		}
		if firstUnsafe(s) < 0 && got != s {
			t.Fatalf("Safe(%q) = %q: changed a safe string", s, got)
		}
	})
}

func TestTabEscapesCellsAndPaintsAfter(t *testing.T) {
	tab := NewTab("NAME", "STATUS")
	tab.Row("evil\r\x1b[2K", "ok")
	tab.Row("b", "fail")
	tab.Paint(1, func(s string) string { return "<" + s + ">" })
	var b strings.Builder
	if err := tab.Write(&b); err != nil {
		t.Fatal(err)
	}
	want := "NAME           STATUS\n" + `evil\r\x1b[2K` + "  <ok>\nb              <fail>\n"
	if b.String() != want {
		t.Errorf("got\n%q\nwant\n%q", b.String(), want)
	}
}

// Width counts the terminal columns of Chinese text as terminals draw it:
// CJK characters and full-width punctuation two, ¥ and ASCII one, colour
// codes none.
func TestWidthEastAsian(t *testing.T) {
	for s, want := range map[string]int{
		"阿里云":                 6,
		"按量计费：":               10,
		"¥3.50":               5,
		"（默认 10m）":            12,
		"\x1b[31mfail\x1b[0m": 4,
		"≥1353.60":            8,
		"GPU×2":               5,
	} {
		if got := Width(s); got != want {
			t.Errorf("Width(%q) = %d, want %d", s, got, want)
		}
	}
}
