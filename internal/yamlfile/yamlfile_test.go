package yamlfile

import (
	"strings"
	"testing"
)

type doc struct {
	Name  string `yaml:"name"`
	Items []struct {
		A int `yaml:"a"`
		B int `yaml:"b"`
	} `yaml:"items"`
}

func TestDecodeAndPlace(t *testing.T) {
	src := "name: x\nitems:\n  - a: 1\n    b: 2\n  - {a: 3, b: 4}\n"
	var d doc
	ix, err := Decode("f.yaml", []byte(src), &d)
	if err != nil {
		t.Fatal(err)
	}
	for path, line := range map[string]int{"name": 1, "items": 2, "items[0].b": 4, "items[1].b": 5, "items[1].missing": 5, "nothing": 0} {
		if got := ix.Line(path); got != line {
			t.Errorf("Line(%q) = %d, want %d", path, got, line)
		}
	}
	err = ix.Place("f.yaml", []Problem{Problemf("items[1].b", "too big: %d", 4), Problemf("name", "bad")})
	if err == nil || err.Error() != "f.yaml:1: name: bad\nf.yaml:5: items[1].b: too big: 4" {
		t.Errorf("got %v", err)
	}
	if ix.Place("f.yaml", nil) != nil {
		t.Error("no problems must be no error")
	}
}

func TestDecodeErrors(t *testing.T) {
	for src, want := range map[string]string{
		"":                          "f.yaml: empty document",
		"name: [":                   "f.yaml:1:",
		"name: x\nitems:\n  - c: 1": `f.yaml:3: items[0].c: unknown field "c"`,
		"name: x\n---\nname: y\n":   "more than one YAML document",
		"items: {a: 1}":             "f.yaml:1: items: cannot unmarshal",
	} {
		var d doc
		_, err := Decode("f.yaml", []byte(src), &d)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want %q", src, err, want)
		}
	}
}
