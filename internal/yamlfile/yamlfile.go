// Package yamlfile decodes the YAML files users write (catalogs, task
// profiles) strictly, and turns every problem into an error that names the
// file, the line and the field, so that a typo in a 128-offer catalog is
// found in seconds rather than silently ignored.
//
// Decoding rejects unknown fields. Validation that happens after decoding
// reports problems by field path ("offers[3].on_demand.hourly"); the Index
// built from the document maps those paths back to lines.
package yamlfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/suggest"
)

// FieldError is one problem in a user's file.
type FieldError struct {
	File string // as the user named it
	Line int    // 1-based; 0 when the field is absent from the file
	Path string // dotted field path, "offers[2].spot.hourly"; empty for the whole document
	Msg  string
	// text is Msg as a message the catalog translates, where it was
	// made from one; yaml's own words have none.
	text i18n.Text
}

func (e *FieldError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	if e.Path != "" {
		b.WriteString(": ")
		b.WriteString(e.Path)
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	return b.String()
}

// Message is the error in parts for internal/i18n: the place as it is,
// the problem in the reader's language where it has a message.
func (e *FieldError) Message() (string, []any) {
	msg := e.text
	if msg.IsZero() {
		msg = i18n.Plain(e.Msg)
	}
	return "%s%s", []any{strings.TrimSuffix(e.Error(), e.Msg), msg}
}

// Errors is every problem found in one file, in line order.
type Errors []*FieldError

func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Message is each problem's Message, a line each.
func (es Errors) Message() (string, []any) {
	ts := make([]i18n.Text, len(es))
	for i, e := range es {
		f, args := e.Message()
		ts[i] = i18n.Text{Format: f, Args: args}
	}
	t := i18n.Join(ts, "\n")
	return t.Format, t.Args
}

// Problem is a validation finding before it is placed in a file.
type Problem struct {
	Path string
	Msg  i18n.Text
}

// Problemf builds a Problem.
func Problemf(path, format string, args ...any) Problem {
	return Problem{Path: path, Msg: i18n.Textf(format, args...)}
}

// Index maps field paths to the lines they were written on.
type Index struct {
	byPath map[string]int
	byLine map[int][]string  // the keys written on a line, in order
	byPos  map[[2]int]string // the path of the node at line, column
	// widest is the mapping with the most keys: its path, line and count.
	widest struct {
		path       string
		line, keys int
	}
	// uses are the paths an anchored scalar is decoded at: its own, then
	// each alias's, in the order yaml decodes them (the document's).
	// yaml reports a bad aliased value at the anchor's line, once per
	// use; each report is placed at its own use.
	uses map[*yaml.Node]*anchorUse
	root reflect.Type // what the document decodes into
}

type anchorUse struct {
	paths []string
	seen  map[string]int // errors placed so far, by the Go type named
}

// Line is the line of path, or of its nearest written ancestor (a missing
// field is reported where its parent is), or 0.
func (ix *Index) Line(path string) int {
	for p := path; ; {
		if l, ok := ix.byPath[p]; ok {
			return l
		}
		i := strings.LastIndexAny(p, ".[")
		if i <= 0 {
			return 0
		}
		p = p[:i]
	}
}

// Has reports whether path was written in the file.
func (ix *Index) Has(path string) bool {
	_, ok := ix.byPath[path]
	return ok
}

// Place turns validation problems into FieldErrors of file, sorted by line.
// It returns nil when there are none.
func (ix *Index) Place(file string, ps []Problem) error {
	if len(ps) == 0 {
		return nil
	}
	es := make(Errors, len(ps))
	for i, p := range ps {
		es[i] = &FieldError{File: file, Line: ix.Line(p.Path), Path: p.Path, Msg: p.Msg.String(), text: p.Msg}
	}
	sort.SliceStable(es, func(i, j int) bool { return es[i].Line < es[j].Line })
	if len(es) > MaxErrors {
		es = append(es[:MaxErrors], fieldError(file, 0, "", i18n.Textf("and %d more problems", len(es)-MaxErrors)))
	}
	return es
}

// MaxKeys bounds the fields of one YAML mapping: the widest of gpurent's
// files, a catalog's exchange rates, has a few dozen.
const MaxKeys = 1000

// MaxErrors bounds the problems one file reports: past it, a count.
const MaxErrors = 20

func (ix *Index) walk(n *yaml.Node, path string) {
	if n == nil {
		return
	}
	if _, ok := ix.byPath[path]; !ok {
		ix.byPath[path] = n.Line
	}
	ix.byPos[[2]int{n.Line, n.Column}] = path
	switch {
	case n.Kind == yaml.ScalarNode && n.Anchor != "":
		ix.use(n, path)
	case n.Kind == yaml.AliasNode && n.Alias != nil && n.Alias.Kind == yaml.ScalarNode:
		ix.use(n.Alias, path)
	}
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			ix.walk(c, path)
		}
	case yaml.MappingNode:
		if k := len(n.Content) / 2; k > ix.widest.keys {
			ix.widest.path, ix.widest.line, ix.widest.keys = path, n.Line, k
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := k.Value
			if path != "" {
				p = path + "." + k.Value
			}
			ix.byPath[p] = k.Line
			ix.byPos[[2]int{k.Line, k.Column}] = p
			ix.byLine[k.Line] = append(ix.byLine[k.Line], p)
			ix.walk(v, p)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			ix.walk(c, fmt.Sprintf("%s[%d]", path, i))
		}
	}
}

func (ix *Index) use(n *yaml.Node, path string) {
	u := ix.uses[n]
	if u == nil {
		u = &anchorUse{}
		ix.uses[n] = u
	}
	u.paths = append(u.paths, path)
}

// aliased places a decoding error yaml reported at line (col when known)
// with message msg at the use of an aliased scalar it stands for, and
// says whose value it is; ok is false when no aliased scalar is there.
// An anchor's value may suit one field and not another ("1h" is a
// duration, not a count), so a message naming the Go type it failed to
// become counts only the uses of that type.
func (ix *Index) aliased(line, col int, msg string) (path string, at int, note i18n.Text, ok bool) {
	typ := ""
	if m := typeRe.FindStringSubmatch(msg); m != nil {
		typ = m[1]
	}
	for n, u := range ix.uses {
		if len(u.paths) < 2 || n.Line != line || col > 0 && n.Column != col || col == 0 && !strings.Contains(msg, "`"+n.Value+"`") {
			continue
		}
		var fit []int
		for i, p := range u.paths {
			if t := typeAt(ix.root, p); typ == "" || t != nil && (t.String() == typ || elem(t).String() == typ) {
				fit = append(fit, i)
			}
		}
		if len(fit) == 0 {
			return "", 0, i18n.Text{}, false
		}
		if u.seen == nil {
			u.seen = map[string]int{}
		}
		i := fit[min(u.seen[typ], len(fit)-1)]
		u.seen[typ]++
		path = u.paths[i]
		if i > 0 {
			note = aliasNote(n)
		}
		return path, ix.byPath[path], note, true
	}
	return "", 0, i18n.Text{}, false
}

// typeAt is the Go type of the field at path (dotted, with [i] indexes)
// inside t, or nil.
func typeAt(t reflect.Type, path string) reflect.Type {
	if t == nil {
		return nil
	}
	for _, seg := range strings.Split(path, ".") {
		if i := strings.IndexByte(seg, '['); i >= 0 {
			seg = seg[:i]
		}
		f, ok := fieldByYAMLName(elem(t), seg)
		if !ok {
			return nil
		}
		t = f.Type
	}
	return t
}

// aliasNote says whose value an alias stands for, where an error at the
// alias would otherwise show a value the line does not.
func aliasNote(anchor *yaml.Node) i18n.Text {
	return i18n.Textf(" (the value of &%s, line %d)", anchor.Anchor, anchor.Line)
}

// atLine is the path of the key named field on line, else the first key
// on the line, else the innermost path that starts there.
func (ix *Index) atLine(line int, field string) string {
	keys := ix.byLine[line]
	for _, k := range keys {
		if field != "" && (k == field || strings.HasSuffix(k, "."+field)) {
			return k
		}
	}
	if len(keys) > 0 {
		return keys[0]
	}
	return ""
}

var (
	posRe     = regexp.MustCompile(`^col (\d+): (.*)$`)
	lineRe    = regexp.MustCompile(`^line (\d+): (.*)$`)
	unknownRe = regexp.MustCompile(`^field (\S+) not found in type `)
	typeRe    = regexp.MustCompile("^cannot unmarshal !!\\w+(?: `.*`)? into (.+)$")
)

// kindWanted says in words what a field of Go type typ takes, for yaml's
// "cannot unmarshal !!str `python ...` into []string"; "" when the type
// says nothing a user would recognise (zero).
func kindWanted(typ string) i18n.Text {
	switch {
	case typ == "[]string":
		return i18n.Textf("want a list, such as [python, train.py]")
	case strings.HasPrefix(typ, "[]"):
		return i18n.Textf("want a list (lines starting with -)")
	case strings.HasPrefix(typ, "int") || strings.HasPrefix(typ, "uint"):
		return i18n.Textf("want a whole number")
	case strings.HasPrefix(typ, "float"):
		return i18n.Textf("want a number")
	case typ == "bool":
		return i18n.Textf("want true or false")
	case typ == "string":
		return i18n.Textf("want text")
	case strings.HasPrefix(typ, "map["):
		return i18n.Textf("want a mapping (key: value lines)")
	}
	return i18n.Text{}
}

// Decode decodes the single YAML document in data into v, rejecting unknown
// fields, and returns an Index for placing later validation problems.
// Decoding errors are returned as Errors naming file, line and field.
func Decode(file string, data []byte, v any) (*Index, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, syntaxError(file, err)
	}
	if root.Kind == 0 || len(root.Content) == 0 {
		return nil, fieldError(file, 0, "", i18n.Textf("empty document"))
	}
	ix := &Index{byPath: map[string]int{}, byLine: map[int][]string{}, byPos: map[[2]int]string{}, uses: map[*yaml.Node]*anchorUse{}, root: reflect.TypeOf(v)}
	ix.walk(&root, "")
	if w := ix.widest; w.keys > MaxKeys {
		// yaml's strict decoding takes time in the square of the unknown
		// keys (80,000 took 20 s): no file of ours has such a mapping.
		return nil, fieldError(file, w.line, w.path, i18n.Textf("%d fields in one mapping; want at most %d", w.keys, MaxKeys))
	}

	if ps := wholeNumbers(root.Content[0], reflect.TypeOf(v), ""); len(ps) > 0 {
		return nil, ix.Place(file, ps)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	err := dec.Decode(v)
	if err == nil {
		var extra yaml.Node
		if dec.Decode(&extra) != io.EOF {
			return nil, fieldError(file, 0, "", i18n.Textf("more than one YAML document; want exactly one"))
		}
		return ix, nil
	}
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return nil, syntaxError(file, err)
	}
	es := make(Errors, 0, min(len(te.Errors), MaxErrors+1))
	for i, msg := range te.Errors {
		if i == MaxErrors {
			es = append(es, fieldError(file, 0, "", i18n.Textf("and %d more problems", len(te.Errors)-MaxErrors)))
			break
		}
		fe := &FieldError{File: file, Msg: msg}
		if m := lineRe.FindStringSubmatch(msg); m != nil {
			fe.Line, _ = strconv.Atoi(m[1])
			fe.Msg = m[2]
			fe.Path = ix.atLine(fe.Line, "")
			col := 0
			if p := posRe.FindStringSubmatch(fe.Msg); p != nil {
				col, _ = strconv.Atoi(p[1])
				fe.Msg = p[2]
				if path, ok := ix.byPos[[2]int{fe.Line, col}]; ok {
					fe.Path = path
				}
			}
			var note i18n.Text
			if path, line, n, ok := ix.aliased(fe.Line, col, fe.Msg); ok {
				fe.Path, fe.Line, note = path, line, n
			}
			if m := typeRe.FindStringSubmatch(fe.Msg); m != nil {
				if want := kindWanted(m[1]); !want.IsZero() {
					// yaml's words, then ours in the reader's language.
					fe.text = i18n.Textf("%s: %s", i18n.Plain(fe.Msg), want)
					fe.Msg = fe.text.String()
				}
			}
			if !note.IsZero() {
				if fe.text.IsZero() {
					fe.text = i18n.Plain(fe.Msg)
				}
				fe.text = i18n.Textf("%s%s", fe.text, note)
				fe.Msg = fe.text.String()
			}
			if u := unknownRe.FindStringSubmatch(fe.Msg); u != nil {
				fe.Path = ix.atLine(fe.Line, u[1])
				parent := strings.TrimSuffix(strings.TrimSuffix(fe.Path, u[1]), ".")
				fe.text = i18n.Textf("unknown field %q%s", u[1], suggest.DidYouMean(u[1], fieldNames(reflect.TypeOf(v), parent)))
				fe.Msg = fe.text.String()
			}
		}
		es = append(es, fe)
	}
	return nil, es
}

// fieldError is a problem made from a message.
func fieldError(file string, line int, path string, msg i18n.Text) *FieldError {
	return &FieldError{File: file, Line: line, Path: path, Msg: msg.String(), text: msg}
}

// syntaxError rewrites yaml's "yaml: line 3: ..." into "file:3: ...".
func syntaxError(file string, err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	fe := &FieldError{File: file, Msg: msg}
	if m := lineRe.FindStringSubmatch(msg); m != nil {
		fe.Line, _ = strconv.Atoi(m[1])
		fe.Msg = m[2]
	}
	return fe
}

// Invalid builds the error a custom UnmarshalYAML returns for a bad scalar;
// Decode places it on the node's line and field.
func Invalid(n *yaml.Node, format string, args ...any) error {
	return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: col %d: %s", n.Line, n.Column, fmt.Sprintf(format, args...))}}
}

var unmarshaler = reflect.TypeFor[yaml.Unmarshaler]()

// wholeNumbers finds fractions given for whole-number fields: yaml
// decodes "gpus: 2.9" into an int as 2, a count no one wrote.
func wholeNumbers(n *yaml.Node, t reflect.Type, path string) []Problem {
	t = elem(t)
	var ps []Problem
	switch {
	case n.Kind == yaml.MappingNode && t.Kind() == reflect.Struct:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			f, ok := fieldByYAMLName(t, k.Value)
			if !ok {
				continue
			}
			p := k.Value
			if path != "" {
				p = path + "." + k.Value
			}
			var note i18n.Text
			if v.Kind == yaml.AliasNode && v.Alias != nil {
				// A fraction an anchor gives is wrong at each use.
				v, note = v.Alias, aliasNote(v.Alias)
			}
			switch ft := f.Type; {
			case reflect.PointerTo(ft).Implements(unmarshaler):
				// Its own UnmarshalYAML reads it ("every: 1.5" is a
				// duration's error to name).
			case v.Kind == yaml.ScalarNode && v.Tag == "!!float" && ft.Kind() >= reflect.Int && ft.Kind() <= reflect.Uint64:
				ps = append(ps, Problem{Path: p, Msg: i18n.Textf("%s%s", i18n.Textf("want a whole number, got %s", v.Value), note)})
			default:
				ps = append(ps, wholeNumbers(v, ft, p)...)
			}
		}
	case n.Kind == yaml.SequenceNode:
		for i, c := range n.Content {
			ps = append(ps, wholeNumbers(c, t, fmt.Sprintf("%s[%d]", path, i))...)
		}
	}
	return ps
}

// fieldNames lists the YAML field names of the struct at path (dotted,
// "offers[2].on_demand") inside t, following pointers, slices and maps;
// nil when path leads to no struct.
func fieldNames(t reflect.Type, path string) []string {
	t = elem(t)
	if path != "" {
		for _, seg := range strings.Split(path, ".") {
			if i := strings.IndexByte(seg, '['); i >= 0 {
				seg = seg[:i]
			}
			f, ok := fieldByYAMLName(t, seg)
			if !ok {
				return nil
			}
			t = elem(f.Type)
		}
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	var names []string
	eachYAMLField(t, func(name string, _ reflect.StructField) bool {
		names = append(names, name)
		return true
	})
	return names
}

// elem strips pointers, slices, arrays and maps down to what they hold.
func elem(t reflect.Type) reflect.Type {
	for t != nil {
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
			t = t.Elem()
		default:
			return t
		}
	}
	return t
}

func fieldByYAMLName(t reflect.Type, name string) (reflect.StructField, bool) {
	var found reflect.StructField
	ok := false
	if t.Kind() == reflect.Struct {
		eachYAMLField(t, func(n string, f reflect.StructField) bool {
			if n == name {
				found, ok = f, true
				return false
			}
			return true
		})
	}
	return found, ok
}

// eachYAMLField calls fn with each field's YAML name, as yaml.v3 names it
// (the tag's name, else the lowercased Go name), descending into inline
// fields; fn returns false to stop.
func eachYAMLField(t reflect.Type, fn func(name string, f reflect.StructField) bool) bool {
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() && !f.Anonymous { // yaml.v3 inlines unexported embedded structs too
			continue
		}
		tag := f.Tag.Get("yaml")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if strings.Contains(","+opts+",", ",inline,") {
			if it := elem(f.Type); it.Kind() == reflect.Struct && !eachYAMLField(it, fn) {
				return false
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		if !fn(name, f) {
			return false
		}
	}
	return true
}
