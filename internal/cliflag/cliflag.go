// Package cliflag turns cobra's and pflag's errors into gpurent's: bad
// usage (exit 2), in messages the user's language has, with the nearest
// flag or command named where a word was mistyped.
package cliflag

import (
	"errors"
	"regexp"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/suggest"
	"github.com/gpurent/gpurent/internal/usage"
)

// Group makes a command that only holds subcommands refuse a word that
// names none of them, with exit 2 and the nearest name, as the root does;
// cobra itself prints such a command's help and exits 0, so a mistyped
// "gpurent ckpt pul" in a script would pass for success.
func Group(cmd *cobra.Command) *cobra.Command {
	cmd.Args = cobra.ArbitraryArgs
	cmd.RunE = func(c *cobra.Command, a []string) error {
		if len(a) == 0 {
			return c.Help()
		}
		var names []string
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() {
				names = append(names, sub.Name())
			}
		}
		return usage.Errorf("unknown command %q for %q%s; its commands: %s", a[0], c.CommandPath(), suggest.DidYouMean(a[0], names), strings.Join(names, ", "))
	}
	return cmd
}

// Args wraps a cobra argument check so that its failure exits 2 and shows
// the command's usage line, which says what arguments it takes.
func Args(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		if err := check(cmd, a); err != nil {
			return usage.Wrap(i18n.Errorf("%w (usage: %s)", cobraArgsError(err), cmd.UseLine()))
		}
		return nil
	}
}

// NoArgs refuses arguments with a sentence that names them; cobra's NoArgs
// calls a stray word an unknown command, which misleads when it was meant
// as a value ("gpurent quote H100" for --gpu H100).
func NoArgs(cmd *cobra.Command, a []string) error {
	if len(a) > 0 {
		name := strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
		return i18n.Errorf("%s takes no arguments, got %q; a value goes after its flag, as in --FLAG %s", name, strings.Join(a, " "), a[0])
	}
	return nil
}

// Error makes a flag error exit 2 and, for an unknown flag, names the
// flag of the command most likely meant ("--hourz": did you mean --hours?).
func Error(cmd *cobra.Command, err error) error {
	err = pflagError(err)
	if name, ok := strings.CutPrefix(err.Error(), "unknown flag: --"); ok {
		var names []string
		cmd.Flags().VisitAll(func(f *pflag.Flag) {
			if !f.Hidden {
				names = append(names, f.Name)
			}
		})
		if near := suggest.Closest(name, names); near != "" {
			err = i18n.Errorf("%w (did you mean --%s?)", err, near)
		}
	}
	// pflag's own words name its parser ("strconv.ParseFloat: parsing
	// \"abc\": invalid syntax"); a person wants the flag and what it takes.
	var bad *pflag.InvalidValueError
	if errors.As(err, &bad) {
		if want, ok := flagWants(bad.GetFlag().Value.Type()); ok {
			err = i18n.Errorf("--%s: want %s, got %q", bad.GetFlag().Name, want, bad.GetValue())
		} else if c := bad.Unwrap(); c != nil && strings.HasPrefix(c.Error(), "--"+bad.GetFlag().Name+":") {
			err = c // gpurent's own value types name the flag already
		}
	}
	return usage.Wrap(err)
}

// pflagError is pflag's error as a message of gpurent's, in the same
// English, so that it can be written in the user's language.
func pflagError(err error) error {
	var ne *pflag.NotExistError
	var vr *pflag.ValueRequiredError
	var se *pflag.InvalidSyntaxError
	switch {
	case errors.As(err, &ne) && ne.GetSpecifiedShortnames() != "":
		return i18n.Errorf("unknown shorthand flag: %q in -%s", rune(ne.GetSpecifiedName()[0]), ne.GetSpecifiedShortnames())
	case errors.As(err, &ne):
		return i18n.Errorf("unknown flag: --%s", ne.GetSpecifiedName())
	case errors.As(err, &vr) && vr.GetSpecifiedShortnames() != "":
		return i18n.Errorf("flag needs an argument: %q in -%s", rune(vr.GetSpecifiedName()[0]), vr.GetSpecifiedShortnames())
	case errors.As(err, &vr):
		return i18n.Errorf("flag needs an argument: --%s", vr.GetSpecifiedName())
	case errors.As(err, &se):
		return i18n.Errorf("bad flag syntax: %s", se.GetSpecifiedFlag())
	}
	return err
}

// cobraArgs reads cobra's argument-count errors, which keep no message,
// back into gpurent's messages with the same English.
var cobraArgs = []struct {
	re  *regexp.Regexp
	err func(n []int) error
}{
	{regexp.MustCompile(`^requires at least (\d+) arg\(s\), only received (\d+)$`), func(n []int) error {
		return i18n.Errorf("requires at least %d arg(s), only received %d", n[0], n[1])
	}},
	{regexp.MustCompile(`^accepts at most (\d+) arg\(s\), received (\d+)$`), func(n []int) error {
		return i18n.Errorf("accepts at most %d arg(s), received %d", n[0], n[1])
	}},
	{regexp.MustCompile(`^accepts (\d+) arg\(s\), received (\d+)$`), func(n []int) error {
		return i18n.Errorf("accepts %d arg(s), received %d", n[0], n[1])
	}},
	{regexp.MustCompile(`^accepts between (\d+) and (\d+) arg\(s\), received (\d+)$`), func(n []int) error {
		return i18n.Errorf("accepts between %d and %d arg(s), received %d", n[0], n[1], n[2])
	}},
}

// cobraArgsError is err as one of cobraArgs' messages where it is one.
func cobraArgsError(err error) error {
	for _, c := range cobraArgs {
		if m := c.re.FindStringSubmatch(err.Error()); m != nil {
			n := make([]int, len(m)-1)
			for i, s := range m[1:] {
				n[i], _ = strconv.Atoi(s)
			}
			return c.err(n)
		}
	}
	return err
}

// flagWants says what a flag of a pflag type takes; ok is false for the
// types of gpurent's own, whose errors say it already.
func flagWants(typ string) (want i18n.Text, ok bool) {
	switch typ {
	case "float64", "float32":
		return i18n.Textf("a number"), true
	case "int", "int64", "int32":
		return i18n.Textf("a whole number"), true
	case "uint", "uint64", "uint32":
		return i18n.Textf("a whole number, 0 or more"), true
	case "duration":
		return i18n.Textf("a duration such as 90s, 30m, 2h or 1d"), true
	case "bool":
		return i18n.Textf("true or false"), true
	case "format":
		return i18n.Textf("table or json"), true
	}
	return i18n.Text{}, false
}
