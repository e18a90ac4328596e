package yamlfile

import (
	"fmt"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
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

// A misspelt field is named with the one it most likely meant, at any
// depth; a word near none, or near two, gets no guess.
func TestUnknownFieldSuggestion(t *testing.T) {
	type inner struct {
		Hourly    float64 `yaml:"hourly"`
		Increment string  `yaml:"increment"`
	}
	type common struct {
		Source string `yaml:"source"`
	}
	type file struct {
		common  `yaml:",inline"`
		Keep    int      `yaml:"keep"`
		Offers  []*inner `yaml:"offers"`
		Spot    inner    `yaml:"spot"`
		Timeout int
		AB      int `yaml:"ab"`
		AC      int `yaml:"ac"`
	}
	for src, want := range map[string]string{
		"kep: 1":                           `f.yaml:1: kep: unknown field "kep" (did you mean "keep"?)`,
		"offers:\n  - incremnt: 1s":        `f.yaml:2: offers[0].incremnt: unknown field "incremnt" (did you mean "increment"?)`,
		"spot:\n  hourlly: 1":              `f.yaml:2: spot.hourlly: unknown field "hourlly" (did you mean "hourly"?)`,
		"sourec: x":                        `f.yaml:1: sourec: unknown field "sourec" (did you mean "source"?)`,
		"timeuot: 3":                       `f.yaml:1: timeuot: unknown field "timeuot" (did you mean "timeout"?)`,
		"storage: 3":                       `f.yaml:1: storage: unknown field "storage"`,
		"ad: 3":                            `f.yaml:1: ad: unknown field "ad"`,
		"offers:\n  - hourly: 1\n    x: 2": `f.yaml:3: offers[0].x: unknown field "x"`,
	} {
		var f file
		_, err := Decode("f.yaml", []byte(src), &f)
		if err == nil || err.Error() != want {
			t.Errorf("%q: got %v, want %s", src, err, want)
		}
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

// A value of the wrong kind is told in words after yaml's own: a command
// written as one string, a count written as a word, a mapping where a list
// goes.
func TestWrongKindSaysWhatIsWanted(t *testing.T) {
	type run struct {
		Command []string          `yaml:"command"`
		Keep    int               `yaml:"keep"`
		Rate    float64           `yaml:"rate"`
		On      bool              `yaml:"on"`
		Tags    map[string]string `yaml:"tags"`
	}
	for src, want := range map[string]string{
		"command: python train.py": "f.yaml:1: command: cannot unmarshal !!str `python ...` into []string: want a list, such as [python, train.py]",
		"keep: three":              "f.yaml:1: keep: cannot unmarshal !!str `three` into int: want a whole number",
		"rate: fast":               "f.yaml:1: rate: cannot unmarshal !!str `fast` into float64: want a number",
		"on: maybe":                "f.yaml:1: on: cannot unmarshal !!str `maybe` into bool: want true or false",
		"tags: [a, b]":             "f.yaml:1: tags: cannot unmarshal !!seq into map[string]string: want a mapping (key: value lines)",
	} {
		var r run
		if _, err := Decode("f.yaml", []byte(src), &r); err == nil || err.Error() != want {
			t.Errorf("%q: got %v, want %q", src, err, want)
		}
	}
	var d doc
	if _, err := Decode("f.yaml", []byte("items: {a: 1}"), &d); err == nil || !strings.HasSuffix(err.Error(), ": want a list (lines starting with -)") {
		t.Errorf("a mapping for a list: %v", err)
	}
}

// A mapping of 80,000 unknown keys took yaml's strict decoding 20 s and
// printed 80,000 lines: past MaxKeys it is one line at once, and past
// MaxErrors problems the rest are counted.
func TestWideAndManyProblems(t *testing.T) {
	var v struct {
		Name string `yaml:"name"`
	}
	var b strings.Builder
	for i := range MaxKeys + 1 {
		fmt.Fprintf(&b, "k%d: 0\n", i)
	}
	_, err := Decode("f.yaml", []byte(b.String()), &v)
	if err == nil || !strings.Contains(err.Error(), "1001 fields in one mapping; want at most 1000") || strings.Count(err.Error(), "\n") > 0 {
		t.Errorf("wide: %.200v", err)
	}
	b.Reset()
	for i := range 50 {
		fmt.Fprintf(&b, "k%d: 0\n", i)
	}
	_, err = Decode("f.yaml", []byte(b.String()), &v)
	if err == nil || strings.Count(err.Error(), "\n") != MaxErrors || !strings.HasSuffix(err.Error(), "and 30 more problems") {
		t.Errorf("many: %v", err)
	}
}

// "gpus: 2.9" was decoded as 2 GPUs.
func TestWholeNumbers(t *testing.T) {
	var v struct {
		GPUs  int `yaml:"gpus"`
		Items []struct {
			N uint `yaml:"n"`
		} `yaml:"items"`
		F float64 `yaml:"f"`
	}
	_, err := Decode("f.yaml", []byte("gpus: 2.9\nf: 1.5\nitems:\n  - n: 3\n  - n: 1e3\n"), &v)
	if err == nil || err.Error() != "f.yaml:1: gpus: want a whole number, got 2.9\nf.yaml:5: items[1].n: want a whole number, got 1e3" {
		t.Errorf("%v", err)
	}
	if _, err := Decode("f.yaml", []byte("gpus: 3\nf: 1.5\n"), &v); err != nil || v.GPUs != 3 {
		t.Errorf("%v %+v", err, v)
	}
}

// An alias's bad value is reported where the alias is used, naming its
// field and the anchor it stands for, not at the anchor's field (issue
// #56): an anchor may suit its own field and fail another's.
func TestAliasErrorsNameTheirOwnField(t *testing.T) {
	type aliased struct {
		Every   duration `yaml:"every"`
		Span    int      `yaml:"span"`
		Disk    float64  `yaml:"disk"`
		Starts  int      `yaml:"starts"`
		Retries int      `yaml:"retries"`
	}
	for _, c := range []struct{ src, want string }{
		{"every: &x 1h\nspan: *x\n", "f.yaml:2: span: cannot unmarshal !!str `1h` into int: want a whole number (the value of &x, line 1)"},
		{"disk: &x abc\nstarts: *x\n", "f.yaml:1: disk: cannot unmarshal !!str `abc` into float64: want a number\n" +
			"f.yaml:2: starts: cannot unmarshal !!str `abc` into int: want a whole number (the value of &x, line 1)"},
		{"span: &x 2\nstarts: *x\nretries: *x\ndisk: 1.5\n", ""},
		{"disk: &x 1.5\nstarts: *x\nretries: *x\n", "f.yaml:2: starts: want a whole number, got 1.5 (the value of &x, line 1)\n" +
			"f.yaml:3: retries: want a whole number, got 1.5 (the value of &x, line 1)"},
	} {
		var d aliased
		_, err := Decode("f.yaml", []byte(c.src), &d)
		if got := fmt.Sprint(err); c.want == "" && err != nil || c.want != "" && got != c.want {
			t.Errorf("%q:\n got %v\nwant %s", c.src, err, c.want)
		}
	}
}

// duration is a field with its own UnmarshalYAML, as gpurent's are.
type duration string

func (d *duration) UnmarshalYAML(n *yaml.Node) error {
	if !strings.HasSuffix(n.Value, "h") {
		return Invalid(n, "want hours")
	}
	*d = duration(n.Value)
	return nil
}
