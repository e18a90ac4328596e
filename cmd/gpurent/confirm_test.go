//go:build unix

package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/wipe"
)

// wipe's question takes yes, and in Chinese 是 too; nothing else goes on,
// and the question is asked in the user's language.
func TestConfirmAnswers(t *testing.T) {
	zh, err := i18n.New(i18n.Chinese)
	if err != nil {
		t.Fatal(err)
	}
	p := &wipe.Plan{Items: []wipe.Item{{Path: "/tmp/x"}}, Bytes: 2048}
	for _, c := range []struct {
		tr     *i18n.Printer
		answer string
		want   bool
	}{
		{nil, "yes\n", true}, {nil, "是\n", false}, {nil, "y\n", false}, {nil, "", false},
		{zh, "是\n", true}, {zh, "yes\n", true}, {zh, " 是 \n", true}, {zh, "否\n", false}, {zh, "好\n", false},
	} {
		var out bytes.Buffer
		if got := confirm(strings.NewReader(c.answer), &out, c.tr, p, 0); got != c.want {
			t.Errorf("%s, answer %q: %v, want %v", c.tr.Lang(), c.answer, got, c.want)
		}
		if c.tr != nil && !strings.Contains(out.String(), "删除这 1 项") {
			t.Errorf("the question in Chinese: %q", out.String())
		}
	}
}
