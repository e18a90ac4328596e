package i18n

import (
	"encoding/json"
	"errors"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

func TestParseAndLocale(t *testing.T) {
	for in, want := range map[string]Lang{"en": English, "zh": Chinese, "ZH": Chinese, "zh_CN.UTF-8": Chinese, "zh-CN": Chinese, "en_US": English} {
		if got, err := Parse(in); err != nil || got != want {
			t.Errorf("Parse(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "fr", "zhx", "chinese"} {
		if _, err := Parse(bad); err == nil || !strings.HasPrefix(err.Error(), "--lang: want en or zh, got ") {
			t.Errorf("Parse(%q): %v", bad, err)
		}
	}
	for _, c := range []struct {
		env  map[string]string
		want Lang
	}{
		{nil, English},
		{map[string]string{"LANG": "zh_CN.UTF-8"}, Chinese},
		{map[string]string{"LANG": "zh_CN.UTF-8", "LC_MESSAGES": "C"}, English},       // LC_MESSAGES before LANG
		{map[string]string{"LC_ALL": "zh_TW.UTF-8", "LC_MESSAGES": "en_US"}, Chinese}, // LC_ALL first
		{map[string]string{"LANG": "C.UTF-8"}, English},
		{map[string]string{"LANG": "zh_CN"}, Chinese},
		{map[string]string{"LANG": "zh_CN.GB18030"}, English}, // gpurent writes UTF-8
		{map[string]string{"LANG": "zh_TW.Big5"}, English},
		{map[string]string{"LANG": "zh_CN.utf8@pinyin"}, Chinese},
	} {
		if got := FromEnv(func(k string) string { return c.env[k] }); got != c.want {
			t.Errorf("FromEnv(%v) = %q, want %q", c.env, got, c.want)
		}
	}
}

// English is the code's own text, byte for byte; Chinese reorders
// arguments where its translation says, and %w reads as in an error.
func TestPrinter(t *testing.T) {
	en, _ := New(English)
	var nilP *Printer
	for _, p := range []*Printer{en, nilP} {
		if got := p.Tf("--x: want %d, got %q", 3, "a"); got != `--x: want 3, got "a"` {
			t.Errorf("English: %q", got)
		}
	}
	p := &Printer{lang: Chinese, msgs: map[string]string{"%s of %d": "%[2]d 中的 %[1]s", "bad: %w": "错误：%w"}}
	if got := p.Tf("%s of %d", "a", 3); got != "3 中的 a" {
		t.Errorf("reordered: %q", got)
	}
	if got := p.Tf("bad: %w", errors.New("boom")); got != "错误：boom" {
		t.Errorf("%%w: %q", got)
	}
	if got := p.T("no such message"); got != "no such message" {
		t.Errorf("a message with no translation: %q", got)
	}
}

// verb is one formatting directive: the argument it takes (from 1) and
// its verb letter.
type verb struct {
	arg  int
	kind byte
}

// verbRe matches a directive; gpurent's formats use no space flag, so
// that "95% of" in a help text is text.
// An argument index goes after the % or, with a precision, right before
// the verb (%.2[3]f), as fmt reads it.
var verbRe = regexp.MustCompile(`%(\[\d+\])?[-+#0]*\d*(\.\d+)?(\[\d+\])?([a-zA-Z%])`)

// verbs lists a format's directives by argument, as fmt reads them.
func verbs(format string) ([]verb, error) {
	var out []verb
	next := 1
	for _, m := range verbRe.FindAllStringSubmatch(format, -1) {
		if m[4] == "%" {
			continue
		}
		if idx := m[1] + m[3]; idx != "" {
			n, err := strconv.Atoi(strings.Trim(idx, "[]"))
			if err != nil {
				return nil, err
			}
			next = n
		}
		k := m[4][0]
		if k == 'w' {
			k = 'v'
		}
		out = append(out, verb{next, k})
		next++
	}
	slices.SortFunc(out, func(a, b verb) int { return a.arg - b.arg })
	return out, nil
}

// Each translation takes the same arguments, with the same verbs, as its
// English: a dropped or misread argument would print %!d(MISSING) or
// misplace a figure.
func TestCatalogFormats(t *testing.T) {
	m, err := Catalog(Chinese)
	if err != nil {
		t.Fatal(err)
	}
	for en, zh := range m {
		a, err1 := verbs(en)
		b, err2 := verbs(zh)
		if err1 != nil || err2 != nil || !slices.Equal(a, b) {
			t.Errorf("%q and its translation %q take different arguments: %v, %v", en, zh, a, b)
		}
		if strings.Count(zh, "\n") != strings.Count(en, "\n") && !strings.Contains(en, "\n\n") && len(en) < 200 {
			t.Errorf("%q: the translation has %d line breaks, the English %d", en, strings.Count(zh, "\n"), strings.Count(en, "\n"))
		}
	}
	if len(m) < 100 {
		t.Errorf("only %d messages", len(m))
	}
}

func TestCatalogRejectsDuplicatesAndBlanks(t *testing.T) {
	for name, bad := range map[string]string{
		"twice":          "- en: \"a\"\n  zh: \"甲\"\n- en: \"a\"\n  zh: \"乙\"\n",
		"no translation": "- en: \"a\"\n",
		"empty":          "- en: \"a\"\n  zh: \"\"\n",
		"not JSON":       "- en: a\n  zh: 甲\n",
		"out of order":   "  zh: \"甲\"\n- en: \"a\"\n",
	} {
		if _, err := parseCatalog([]byte(bad)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	m, err := parseCatalog([]byte("# c\n\n- en: \"a %s\\n\"\n  zh: \"甲 %s\\n\"\n"))
	if err != nil || m["a %s\n"] != "甲 %s\n" {
		t.Errorf("%v %q", err, m)
	}
}

// The catalog file is YAML as well, for editors: a YAML reader finds the
// same messages.
func TestCatalogIsYAML(t *testing.T) {
	var es []struct{ EN, ZH string }
	if err := yaml.Unmarshal(zhYAML, &es); err != nil {
		t.Fatal(err)
	}
	m, err := Catalog(Chinese)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != len(m) {
		t.Fatalf("YAML reads %d messages, the catalog reader %d", len(es), len(m))
	}
	for _, e := range es {
		if m[e.EN] != e.ZH {
			t.Errorf("%q: YAML %q, catalog %q", e.EN, e.ZH, m[e.EN])
		}
	}
}

// term is one entry of glossary.yaml.
type term struct {
	EN     []string `yaml:"en"`
	ZH     string   `yaml:"zh"`
	Also   []string `yaml:"also"`
	Not    []string `yaml:"not"`
	Source string   `yaml:"source"`
}

func glossary(t *testing.T) []term {
	t.Helper()
	b, err := os.ReadFile("glossary.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var ts []term
	if err := yaml.Unmarshal(b, &ts); err != nil {
		t.Fatal(err)
	}
	return ts
}

// Every message whose English names a glossary term says it with the
// glossary's Chinese word, so that 竞价实例 is never also 抢占式实例
// or 现货 elsewhere; and docs/glossary.md lists every term.
func TestGlossaryConsistent(t *testing.T) {
	m, err := Catalog(Chinese)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("../../docs/glossary.md")
	if err != nil {
		t.Fatal(err)
	}
	ts := glossary(t)
	if len(ts) < 12 {
		t.Errorf("only %d terms", len(ts))
	}
	for _, g := range ts {
		if g.ZH == "" || len(g.EN) == 0 || g.Source == "" {
			t.Errorf("term %v: want en, zh and source", g.EN)
			continue
		}
		if !strings.Contains(string(doc), g.ZH) {
			t.Errorf("docs/glossary.md lacks %s", g.ZH)
		}
		var alts []string
		for _, e := range g.EN {
			alts = append(alts, regexp.QuoteMeta(e))
		}
		// A flag (--spot), a field (compute_hours) or a placeholder
		// ({resume}) is a name to type, not the word.
		re := regexp.MustCompile(`(?i)(^|[^A-Za-z0-9_{-])(` + strings.Join(alts, "|") + `)($|[^A-Za-z0-9_}-])`)
		words := append([]string{g.ZH}, g.Also...)
		uses := 0
		for en, zh := range m {
			if !re.MatchString(en) || slices.ContainsFunc(g.Not, func(n string) bool { return strings.Contains(en, n) }) {
				continue
			}
			uses++
			if !slices.ContainsFunc(words, func(w string) bool { return strings.Contains(zh, w) }) {
				t.Errorf("%q names %q, and its translation %q does not say %s", en, re.FindStringSubmatch(en)[2], zh, strings.Join(words, " or "))
			}
		}
		t.Logf("%s: %d messages", g.ZH, uses)
	}
}

// A Text's JSON is the plain string's, byte for byte, under an encoder
// that leaves <, > and & alone (report.WriteJSON), as under one that
// escapes them.
func TestTextJSONAsString(t *testing.T) {
	v := struct {
		T Text   `json:"t"`
		S string `json:"s"`
	}{Textf("< %d, none pending; -o json > report.json & %s", 15, "x"), "< 15, none pending; -o json > report.json & x"}
	for _, escape := range []bool{false, true} {
		var b strings.Builder
		e := json.NewEncoder(&b)
		e.SetEscapeHTML(escape)
		if err := e.Encode(v); err != nil {
			t.Fatal(err)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(b.String()), &m); err != nil {
			t.Fatal(err)
		}
		if string(m["t"]) != string(m["s"]) {
			t.Errorf("escape %v: the Text writes %s, the string %s", escape, m["t"], m["s"])
		}
	}
}

// Choosing Chinese parses the embedded catalog once per run; English
// parses nothing. docs/BENCHMARKS.md has the figures.
func BenchmarkNew(b *testing.B) {
	for _, l := range []Lang{English, Chinese} {
		b.Run(string(l), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := New(l); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// The catalog reader beside a YAML decoder of the same file, its peer.
func BenchmarkCatalogReaders(b *testing.B) {
	b.Run("lines", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := parseCatalog(zhYAML); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("yaml", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var es []struct{ EN, ZH string }
			if err := yaml.Unmarshal(zhYAML, &es); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestCatalogRenders writes every message and its translation with
// arguments of the kinds their verbs take: neither may come out with a
// %!verb(...) of fmt's, the sign of a misplaced index or a verb that does
// not fit.
func TestCatalogRenders(t *testing.T) {
	m, err := Catalog(Chinese)
	if err != nil {
		t.Fatal(err)
	}
	zh, _ := New(Chinese)
	for en := range m {
		vs, err := verbs(en)
		if err != nil {
			t.Fatal(err)
		}
		if len(vs) == 0 {
			continue // a fixed text (help, T), not a format
		}
		args := make([]any, 0, len(vs))
		for _, v := range vs {
			if v.arg <= len(args) {
				continue // the same argument twice
			}
			switch v.kind {
			case 'd', 'x', 'X', 'c':
				args = append(args, 7)
			case 'f', 'g', 'e':
				args = append(args, 1.5)
			case 'v':
				args = append(args, errors.New("e"))
			case 't':
				args = append(args, true)
			default:
				args = append(args, "s")
			}
		}
		for _, got := range []string{(*Printer)(nil).Tf(en, args...), zh.Tf(en, args...)} {
			if strings.Contains(got, "%!") {
				t.Errorf("%q writes %q", en, got)
			}
		}
	}
}
