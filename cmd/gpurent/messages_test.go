package main

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpurent/gpurent/internal/cliflag"
	"github.com/gpurent/gpurent/internal/i18n"
)

// messageSites finds every message in the module's code: the literal
// given to a Printer's T, Tf or Fprintf, to i18n.Textf, Errorf, Plural and Key, to
// yamlfile.Problemf and a validation's bad(field, format),
// to usagef and usage.Errorf, and to a run's logf and cfg.Log. A message
// that is not a literal (or constant) is reported, since no test could
// then know it has a translation, and so is a call whose arguments do not
// match its verbs.
func messageSites(t *testing.T, root string) (keys map[string][]string, problems []string) {
	t.Helper()
	keys = map[string][]string{}
	fset := token.NewFileSet()
	pkgs := map[string][]*ast.File{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && p != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			return err
		}
		pkgs[filepath.Dir(p)] = append(pkgs[filepath.Dir(p)], f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Constants by package: a message may be another package's
	// (bench.LinkLegend).
	exported := map[string]ast.Expr{}
	for dir, files := range pkgs {
		for name, v := range constants(files) {
			if ast.IsExported(name) {
				exported[filepath.Base(dir)+"."+name] = v
			}
		}
	}
	for dir, files := range pkgs {
		consts := constants(files)
		var literal func(e ast.Expr) (string, bool)
		literal = func(e ast.Expr) (string, bool) {
			switch e := e.(type) {
			case *ast.BasicLit:
				if e.Kind == token.STRING {
					s, err := strconv.Unquote(e.Value)
					return s, err == nil
				}
			case *ast.BinaryExpr:
				a, ok1 := literal(e.X)
				b, ok2 := literal(e.Y)
				return a + b, ok1 && ok2 && e.Op == token.ADD
			case *ast.Ident:
				if v, ok := consts[e.Name]; ok {
					return literal(v)
				}
			case *ast.ParenExpr:
				return literal(e.X)
			case *ast.SelectorExpr:
				if x, ok := e.X.(*ast.Ident); ok {
					if v, ok := exported[x.Name+"."+e.Sel.Name]; ok {
						return literal(v)
					}
				}
			}
			return "", false
		}
		for _, f := range files {
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				arg := -1
				switch fn := call.Fun.(type) {
				case *ast.Ident:
					if fn.Name == "usagef" || fn.Name == "logf" || (fn.Name == "Key" && filepath.Base(dir) == "i18n") {
						arg = 0
					}
					if fn.Name == "say" && filepath.Base(dir) == "storeconf" { // a store's progress line (Say)
						arg = 0
					}
					if fn.Name == "bad" || (fn.Name == "Problemf" && filepath.Base(dir) == "yamlfile") { // a validation's finding: bad(field, format, ...)
						arg = 1
					}
				case *ast.SelectorExpr:
					x, _ := fn.X.(*ast.Ident)
					switch {
					case fn.Sel.Name == "Errorf" && x != nil && (x.Name == "usage" || x.Name == "i18n"):
						arg = 0
					case fn.Sel.Name == "T" || fn.Sel.Name == "Tf" || fn.Sel.Name == "Textf" || fn.Sel.Name == "logf",
						fn.Sel.Name == "Key" && x != nil && x.Name == "i18n":
						arg = 0
					case fn.Sel.Name == "Problemf" && x != nil && x.Name == "yamlfile":
						arg = 1
					case fn.Sel.Name == "Say" && isSelector(fn.X, "opt"):
						// A store's line (store.Options.Say), said by
						// storeconf's Say in the user's language.
						arg = 0
					case fn.Sel.Name == "Log" && isCfg(fn.X):
						// A run's lines (supervise, gpuwatch), written by
						// runner's logf in the user's language.
						arg = 0
					case fn.Sel.Name == "Fprintf" && (x == nil || x.Name != "fmt"):
						arg = 1
					}
				}
				if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Plural" && len(call.Args) == 3 {
					for _, a := range call.Args[1:] {
						pos := fset.Position(a.Pos())
						at := strings.TrimPrefix(pos.Filename, root+string(filepath.Separator)) + ":" + strconv.Itoa(pos.Line)
						if s, ok := literal(a); ok {
							keys[s] = append(keys[s], at)
						} else {
							problems = append(problems, at+": the message is not a literal")
						}
					}
					return true
				}
				if arg < 0 || len(call.Args) <= arg {
					return true
				}
				pos := fset.Position(call.Pos())
				at := strings.TrimPrefix(pos.Filename, root+string(filepath.Separator)) + ":" + strconv.Itoa(pos.Line)
				// A wrapper that passes its own format on (usagef,
				// Printer.Fprintf, a usage error's Format) forwards a
				// message found at its own call.
				if id, ok := call.Args[arg].(*ast.Ident); ok && id.Name == "format" {
					return true
				}
				if sel, ok := call.Args[arg].(*ast.SelectorExpr); ok && sel.Sel.Name == "Format" {
					return true
				}
				s, ok := literal(call.Args[arg])
				if !ok {
					problems = append(problems, at+": the message is not a literal")
					return true
				}
				keys[s] = append(keys[s], at)
				// go vet does not know these functions print: count the
				// arguments here, as its printf check would.
				if sel, ok := call.Fun.(*ast.SelectorExpr); ok && (sel.Sel.Name == "T" || sel.Sel.Name == "Key") {
					return true // a fixed text, not a format
				}
				if call.Ellipsis == token.NoPos && !strings.Contains(s, "%[") {
					if want, got := len(directive.FindAllString(strings.ReplaceAll(s, "%%", ""), -1)), len(call.Args)-arg-1; want != got {
						problems = append(problems, fmt.Sprintf("%s: %q takes %d arguments, given %d", at, s, want, got))
					}
				}
				return true
			})
		}
	}
	return keys, problems
}

// directive matches one formatting verb of a message.
var directive = regexp.MustCompile(`%[-+# 0]*\d*(\.\d+)?[a-zA-Z]`)

// constants are the package-level constants of files, by name.
func constants(files []*ast.File) map[string]ast.Expr {
	out := map[string]ast.Expr{}
	for _, f := range files {
		for _, d := range f.Decls {
			if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.CONST {
				for _, sp := range g.Specs {
					vs := sp.(*ast.ValueSpec)
					for i, n := range vs.Names {
						if i < len(vs.Values) {
							out[n.Name] = vs.Values[i]
						}
					}
				}
			}
		}
	}
	return out
}

// isSelector reports x.name.
func isSelector(x ast.Expr, name string) bool {
	sel, ok := x.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == name
}

// isCfg reports x.cfg, a watcher's configuration, whose Log is the run's
// log line.
func isCfg(x ast.Expr) bool {
	sel, ok := x.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == "cfg"
}

// wordy reports whether a message has words to translate: "--%s: %v"
// and "%s: %w" are the same in every language.
func wordy(s string) bool {
	s = notWords.ReplaceAllString(s, "")
	return strings.IndexFunc(s, unicode.IsLetter) >= 0
}

// notWords are a message's verbs and flag names.
var notWords = regexp.MustCompile(`%(\[\d+\])?[-+# 0]*\d*(\.\d+)?[a-zA-Z%]|--?[a-z][a-z-]*`)

// helpTexts are the texts of every command's help, as cliflag.LocalizeHelp
// translates them.
func helpTexts() []string {
	var out []string
	out = append(out, cliflag.UsageHeadings...)
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.InitDefaultHelpFlag()
		for _, s := range []string{c.Short, c.Long, c.Example} {
			if s != "" {
				out = append(out, s)
			}
		}
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if f.Usage != "help for "+c.Name() && f.Usage != "version for "+c.Name() {
				out = append(out, f.Usage)
			}
		})
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	root := newRoot(io.Discard, io.Discard, nil)
	root.InitDefaultVersionFlag()
	walk(root)
	return out
}

// Every message that can reach a person has a Chinese form, and every
// Chinese form is some message's: a message added in English only, or
// one removed from the code but not from the catalog, fails here.
func TestMessagesTranslated(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	keys, problems := messageSites(t, root)
	for _, h := range helpTexts() {
		keys[h] = append(keys[h], "command help")
	}
	for _, p := range problems {
		t.Error(p)
	}
	zh, err := i18n.Catalog(i18n.Chinese)
	if err != nil {
		t.Fatal(err)
	}
	var missing, unused []string
	for k, at := range keys {
		if _, ok := zh[k]; !ok && wordy(k) {
			missing = append(missing, strconv.Quote(k)+" ("+at[0]+")")
		}
	}
	for k := range zh {
		if _, ok := keys[k]; !ok {
			unused = append(unused, strconv.Quote(k))
		}
	}
	slices.Sort(missing)
	slices.Sort(unused)
	if len(missing) > 0 {
		if p := os.Getenv("GPURENT_MISSING_MESSAGES"); p != "" { // a skeleton to translate
			var ks []string
			for k := range keys {
				if _, ok := zh[k]; !ok && wordy(k) {
					ks = append(ks, k)
				}
			}
			slices.Sort(ks)
			b, _ := json.Marshal(ks)
			os.WriteFile(p, b, 0o644)
		}
		t.Errorf("%d messages have no Chinese form in internal/i18n/zh.yaml:\n%s", len(missing), strings.Join(missing, "\n"))
	}
	if len(unused) > 0 {
		t.Errorf("%d Chinese forms in internal/i18n/zh.yaml are no message's:\n%s", len(unused), strings.Join(unused, "\n"))
	}
	t.Logf("%d messages, each with its Chinese form", len(keys))
}
