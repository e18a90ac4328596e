package cliflag

import (
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/units"
)

// The language of the help, and the flag types every command shares.

// LangValue is --lang: checked as the flag is parsed. The language itself
// is chosen before the commands are built (ChooseLang), since their help
// is written in it.
type LangValue struct{ P *string }

func (f LangValue) String() string { return *f.P }
func (f LangValue) Type() string   { return "lang" }

func (f LangValue) Set(s string) error {
	if _, err := i18n.Parse(s); err != nil {
		return err
	}
	*f.P = s
	return nil
}

// ChooseLang is the language of a command line: --lang where it is given
// (the last one, as the flag parser keeps it, and before a "--", after
// which the words are the user's command's), else the locale's. A --lang
// that is no language is left to the flag's own check, which refuses it
// with exit 2.
func ChooseLang(args []string, getenv func(string) string) i18n.Lang {
	lang, given := i18n.English, false
	for i, a := range args {
		if a == "--" {
			break
		}
		v, ok := strings.CutPrefix(a, "--lang=")
		if !ok && a == "--lang" && i+1 < len(args) {
			v, ok = args[i+1], true
		}
		if ok {
			if l, err := i18n.Parse(v); err == nil {
				lang, given = l, true
			}
		}
	}
	if given {
		return lang
	}
	return i18n.FromEnv(getenv)
}

// LocalizeHelp writes every command's help in tr's language: short and
// long descriptions, examples, flag usages and cobra's own headings.
// TestMessagesTranslated walks the same commands, so none is left in
// English.
func LocalizeHelp(root *cobra.Command, tr *i18n.Printer) {
	if tr.Lang() == i18n.English {
		return
	}
	tmpl := root.UsageTemplate()
	tmpl = strings.ReplaceAll(tmpl, `Use "{{.CommandPath}} [command] --help" for more information about a command.`,
		tr.Tf("Use %s for more information about a command.", `"{{.CommandPath}} [command] --help"`))
	for _, h := range UsageHeadings {
		tmpl = strings.ReplaceAll(tmpl, h, tr.Lookup(h))
	}
	root.SetUsageTemplate(tmpl)
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.InitDefaultHelpFlag()
		c.Short, c.Long, c.Example = tr.Lookup(c.Short), tr.Lookup(c.Long), tr.Lookup(c.Example)
		c.LocalFlags().VisitAll(func(f *pflag.Flag) { f.Usage = flagUsage(c, f, tr) })
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	root.InitDefaultVersionFlag()
	walk(root)
}

// flagUsage is a flag's usage in tr's language; cobra's own help and
// version flags name their command. pflag would add its English
// "(default x)": the default is said here instead, and DefValue, which
// only that printing reads, is cleared.
func flagUsage(c *cobra.Command, f *pflag.Flag, tr *i18n.Printer) string {
	switch f.Usage {
	case "help for " + c.Name():
		return tr.Tf("help for %s", c.Name())
	case "version for " + c.Name():
		return tr.Tf("version for %s", c.Name())
	}
	u := tr.Lookup(f.Usage)
	switch d := f.DefValue; d {
	case "", "false", "0", "0s", "[]", "<nil>":
	default:
		if f.Value.Type() == "string" {
			d = strconv.Quote(d)
		}
		u += tr.Tf(" (default %s)", d)
	}
	f.DefValue = zeroDefault(f.Value.Type())
	return u
}

// zeroDefault is the DefValue pflag reads as no default for a flag of
// type typ, so that it prints none.
func zeroDefault(typ string) string {
	switch {
	case strings.HasPrefix(typ, "int") && !strings.HasSuffix(typ, "Slice"), strings.HasPrefix(typ, "uint"), strings.HasPrefix(typ, "float"), typ == "count":
		return "0"
	case typ == "duration": // pflag's and gpurent's own: "0" is zero to both
		return "0"
	case typ == "bool":
		return "false"
	case strings.HasSuffix(typ, "Slice"), strings.HasSuffix(typ, "Array"):
		return "[]"
	}
	return ""
}

// UsageHeadings are the words of cobra's usage template.
var UsageHeadings = []string{"Usage:", "Aliases:", "Examples:", "Available Commands:", "Additional Commands:",
	"Global Flags:", "Flags:", "Additional help topics:"}

// durationValue is a duration flag that reads what the config files and
// catalogs read (units.ParseDuration): days too, so --stall 1d works as
// stall: 1d does, and never a negative time.
type durationValue struct{ p *time.Duration }

func (d durationValue) String() string { return units.FormatDuration(*d.p) }
func (d durationValue) Type() string   { return "duration" }

func (d durationValue) Set(s string) error {
	v, err := units.ParseDuration(s)
	if err != nil {
		return err
	}
	*d.p = v
	return nil
}

// DurationVar defines a duration flag, as pflag's DurationVar does, with
// durationValue's syntax.
func DurationVar(fs *pflag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	*p = value
	fs.Var(durationValue{p}, name, usage)
}
