package main

import (
	"testing"

	"github.com/gpurent/gpurent/internal/cliflag"
	"github.com/gpurent/gpurent/internal/i18n"
)

// --lang decides as the flag parser does (the last one), only before a
// "--" (what follows is the user's command's), and over the locale.
func TestChooseLang(t *testing.T) {
	zhLocale := func(k string) string {
		if k == "LANG" {
			return "zh_CN.UTF-8"
		}
		return ""
	}
	none := func(string) string { return "" }
	for _, c := range []struct {
		args   []string
		getenv func(string) string
		want   i18n.Lang
	}{
		{[]string{"quote"}, none, i18n.English},
		{[]string{"quote"}, zhLocale, i18n.Chinese},
		{[]string{"--lang", "en", "quote"}, zhLocale, i18n.English},
		{[]string{"--lang=zh", "quote", "--lang", "en"}, none, i18n.English},
		{[]string{"--lang", "en", "quote", "--lang=zh"}, none, i18n.Chinese},
		{[]string{"run", "--", "python", "train.py", "--lang", "zh"}, none, i18n.English},
		{[]string{"--lang", "fr", "quote"}, zhLocale, i18n.Chinese}, // refused by the flag itself, exit 2
	} {
		if got := cliflag.ChooseLang(c.args, c.getenv); got != c.want {
			t.Errorf("%v: %s, want %s", c.args, got, c.want)
		}
	}
}
