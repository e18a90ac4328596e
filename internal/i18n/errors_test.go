package i18n

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestErrorTranslated(t *testing.T) {
	zh, err := New(Chinese)
	if err != nil {
		t.Fatal(err)
	}
	_, statErr := os.Stat(filepath.Join(t.TempDir(), "gone"))
	wrapped := fmt.Errorf("reading the plan: %w", Errorf("wipe: %w (nothing was deleted)", statErr))
	if got, want := wrapped.Error(), fmt.Sprintf("reading the plan: wipe: %v (nothing was deleted)", statErr); got != want {
		t.Fatalf("English %q, want %q", got, want)
	}
	if !errors.Is(wrapped, fs.ErrNotExist) {
		t.Error("the chain lost fs.ErrNotExist")
	}
	var pe *fs.PathError
	if !errors.As(wrapped, &pe) {
		t.Error("the chain lost the *fs.PathError")
	}
	got := zh.Error(wrapped)
	for _, want := range []string{"reading the plan: ", "什么都没有删除", zh.T("no such file or directory")} {
		if !strings.Contains(got, want) {
			t.Errorf("Chinese %q lacks %q", got, want)
		}
	}
	if strings.Contains(got, "nothing was") || strings.Contains(got, "no such file") {
		t.Errorf("Chinese %q still has English", got)
	}
	if en := (*Printer)(nil).Error(wrapped); en != wrapped.Error() {
		t.Errorf("English printer wrote %q", en)
	}
	// An error inside a Text is translated too, %w and all.
	if got := zh.Text(Textf("cannot start: %w", statErr)); !strings.Contains(got, zh.T("no such file or directory")) {
		t.Errorf("Text with an error: %q", got)
	}
	if got := Textf("cannot start: %w", statErr).String(); got != "cannot start: "+statErr.Error() {
		t.Errorf("English Text with an error: %q", got)
	}
}

// TestWrapVerbIndexed: a translation may move a wrapped error with an
// index (%[2]w); written as a string it is still the error's text.
func TestWrapVerbIndexed(t *testing.T) {
	zh := &Printer{lang: Chinese, msgs: map[string]string{"lease %s: %w": "%[2]w（租约 %[1]s）"}}
	_, statErr := os.Stat(filepath.Join(t.TempDir(), "gone"))
	if got := zh.Text(Textf("lease %s: %w", "r1", statErr)); strings.Contains(got, "%!") || !strings.Contains(got, "（租约 r1）") {
		t.Errorf("got %q", got)
	}
}
