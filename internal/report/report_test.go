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
