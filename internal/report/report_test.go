package report

import (
	"bytes"
	"testing"
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
