// Command gpurent is the tool people who rent GPUs by the hour run before,
// during and after a rental: the true cost of a task on every offer
// (quote), the right billing mode (plan), and the catalog behind them.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"regexp"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/initproc"
	"github.com/gpurent/gpurent/internal/report"
	"github.com/gpurent/gpurent/internal/store"
	"github.com/gpurent/gpurent/internal/suggest"
	"github.com/gpurent/gpurent/internal/supervise"
	"github.com/gpurent/gpurent/internal/usage"
	"github.com/gpurent/gpurent/internal/userfile"
	"github.com/gpurent/gpurent/internal/yamlfile"
)

// usageError marks bad flags or bad input files: exit 2. It is
// internal/usage's, which the packages that check options return too.
type usageError = usage.Error

func usagef(format string, args ...any) error { return usage.Errorf(format, args...) }

func main() {
	if code, ok := asInit(os.Args, os.Stderr); ok {
		os.Exit(code)
	}
	enableEscapes(os.Stdout)
	enableEscapes(os.Stderr)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// asInit runs "gpurent run" as the child of a PID 1 that reaps orphans
// (initproc) when a container starts it as its PID 1; ok is false when
// this process is to carry on as usual. If the child cannot be started,
// gpurent runs as before, where orphans of the command stay zombies, and
// says so.
func asInit(argv []string, stderr io.Writer) (code int, ok bool) {
	if os.Getpid() != 1 || runtime.GOOS != "linux" {
		return 0, false
	}
	cmd, _, err := newRoot(io.Discard, io.Discard, nil).Find(argv[1:])
	if err != nil || cmd.Name() != "run" || cmd.Parent() != cmd.Root() {
		return 0, false
	}
	tr, _ := i18n.New(chooseLang(argv[1:], os.Getenv)) // nil, English, where the language is bad: run says so
	in, err := initproc.Start(argv)
	if err != nil {
		tr.Fprintf(stderr, "gpurent: %v; running as PID 1 itself, where the command's orphans stay zombies until gpurent exits\n", err)
		return 0, false
	}
	code, err = in.Wait()
	if err != nil {
		fmt.Fprintln(stderr, "gpurent:", tr.Error(err))
	}
	return code, true
}

// run executes one command line and returns the exit code; main is only
// this plus the process, so tests drive run directly.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	tr, err := i18n.New(chooseLang(args, os.Getenv))
	if err != nil {
		fmt.Fprintln(stderr, "gpurent:", err)
		return exitFailure
	}
	root := newRoot(stdout, stderr, tr)
	root.SetArgs(args)
	err = root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	var code exitCode
	if !errors.As(err, &code) {
		// An error names paths and processes found on the machine.
		fmt.Fprintln(stderr, "gpurent:", report.SafeLines(errorText(err, tr)))
	}
	return exitStatus(err)
}

// errorText is err's message in tr's language: each layer made from a
// message (usage.Errorf, i18n.Errorf) is translated, and the system's
// words under it.
func errorText(err error, tr *i18n.Printer) string {
	return tr.Error(err)
}

// exitStatus is the exit code for a command's error.
func exitStatus(err error) int {
	if err == nil {
		return exitOK
	}
	var code exitCode
	if errors.As(err, &code) {
		return int(code)
	}
	// A failure of the machine that happens to wrap a missing or odd
	// file (the run's state in --ckpt-dir) is no bad usage.
	if rt := (*supervise.RuntimeError)(nil); errors.As(err, &rt) {
		return exitFailure
	}
	var ue usageError
	var fe *yamlfile.FieldError
	var fes yamlfile.Errors
	// cobra reports unknown subcommands with an untyped error. A missing
	// or wrong age identity is the caller's to fix, like a bad flag, and
	// so is a named file that is no regular file or over its cap.
	if errors.As(err, &ue) || errors.As(err, &fe) || errors.As(err, &fes) || errors.Is(err, fs.ErrNotExist) ||
		errors.Is(err, userfile.ErrNotRegular) || errors.Is(err, userfile.ErrTooLarge) ||
		errors.Is(err, store.ErrNoIdentity) || errors.Is(err, store.ErrWrongIdentity) || errors.Is(err, store.ErrNoAuthKey) ||
		strings.HasPrefix(err.Error(), "unknown command") {
		return exitUsage
	}
	return exitFailure
}

// group makes a command that only holds subcommands refuse a word that
// names none of them, with exit 2 and the nearest name, as the root does;
// cobra itself prints such a command's help and exits 0, so a mistyped
// "gpurent ckpt pul" in a script would pass for success.
func group(cmd *cobra.Command) *cobra.Command {
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
		return usagef("unknown command %q for %q%s; its commands: %s", a[0], c.CommandPath(), suggest.DidYouMean(a[0], names), strings.Join(names, ", "))
	}
	return cmd
}

// args wraps a cobra argument check so that its failure exits 2 and shows
// the command's usage line, which says what arguments it takes.
func args(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		if err := check(cmd, a); err != nil {
			return usage.Wrap(i18n.Errorf("%w (usage: %s)", cobraArgsError(err), cmd.UseLine()))
		}
		return nil
	}
}

// noArgs refuses arguments with a sentence that names them; cobra's NoArgs
// calls a stray word an unknown command, which misleads when it was meant
// as a value ("gpurent quote H100" for --gpu H100).
func noArgs(cmd *cobra.Command, a []string) error {
	if len(a) > 0 {
		name := strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
		return i18n.Errorf("%s takes no arguments, got %q; a value goes after its flag, as in --FLAG %s", name, strings.Join(a, " "), a[0])
	}
	return nil
}

// flagError makes a flag error exit 2 and, for an unknown flag, names the
// flag of the command most likely meant ("--hourz": did you mean --hours?).
func flagError(cmd *cobra.Command, err error) error {
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

// globals are the flags every command shares, and where it writes: the
// result to stdout, progress, warnings and notes to stderr.
type globals struct {
	output   string
	catalogs []string
	lang     string
	stdout   io.Writer
	stderr   io.Writer
	// tr writes what people read in their language (--lang, the locale);
	// nil is English.
	tr *i18n.Printer
}

// formatValue is -o: checked as the flag is parsed, once for every
// command, so that no command can take -o yaml and exit 0.
type formatValue struct{ p *string }

func (f formatValue) String() string { return *f.p }
func (f formatValue) Type() string   { return "format" }

func (f formatValue) Set(s string) error {
	if err := report.CheckFormat(s); err != nil {
		return err
	}
	*f.p = s
	return nil
}

// versionString is the version with the commit it was built from, where
// the build recorded one: a bug report then names the exact code.
func versionString() string {
	v := version
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	var rev, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev != "" {
		v += " (" + rev
		if modified == "true" {
			v += ", modified"
		}
		v += ")"
	}
	return v + ", " + info.GoVersion
}

func newRoot(stdout, stderr io.Writer, tr *i18n.Printer) *cobra.Command {
	g := &globals{stdout: stdout, stderr: stderr, tr: tr}
	root := &cobra.Command{
		Use:   "gpurent",
		Short: "The true cost of a GPU rental, and the right way to buy it",
		Long: `gpurent turns the classic traps of renting GPUs by the hour into commands.

  gpurent quote   the itemized bill of your task on every offer: compute with the
                  provider's rounding, storage while stopped, egress, boot fees, IP
  gpurent plan    on demand, subscription or spot: break-even hours, spot risk,
                  the optimal checkpoint interval, renting versus an API
  gpurent bench   acceptance test of a fresh instance: the GPU you paid for,
                  whole, unshared, unthrottled, healthy; the host as promised
  gpurent run     training that survives crashes, preemption and a vanishing machine
  gpurent ckpt    checkpoints off the box: encrypted, verified, on external storage
  gpurent keygen  the age identity ckpt encrypts to
  gpurent audit   what on the rented machine can leak: users, ports, secrets, leftovers
  gpurent wipe    a clean-up before release that touches only what its plan lists
  gpurent catalog the offers behind them, with sources and dates`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       versionString(),
	}
	root.SetVersionTemplate("gpurent {{.Version}}\n")
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(flagError)
	g.output = report.Table
	root.PersistentFlags().VarP(formatValue{&g.output}, "output", "o", "output format: table or json")
	root.PersistentFlags().StringArrayVar(&g.catalogs, "catalog", nil, "catalog YAML merged over the embedded one (repeatable; an equal id replaces)")
	root.PersistentFlags().Var(langValue{&g.lang}, "lang", "the language gpurent speaks to you: en or zh (default: the locale's, LC_ALL, LC_MESSAGES or LANG; JSON is the same in both)")
	root.AddCommand(newQuote(g), newPlan(g), newBench(g), newCatalog(g), newCkpt(g), newKeygen(g), newRun(g), newAudit(g), newWipe(g), newBurn(), newExitCodes())
	strictBuiltins(root)
	localizeHelp(root, tr)
	return root
}

// strictBuiltins gives cobra's own help and completion commands the exit
// code of gpurent's: "gpurent help quot" and "gpurent completion bsh" print
// help and exit 0 in cobra, as if a script's typo had worked.
func strictBuiltins(root *cobra.Command) {
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		switch c.Name() {
		case "help":
			show := c.Run
			c.Run, c.RunE = nil, func(c *cobra.Command, a []string) error {
				if cmd, rest, err := c.Root().Find(a); err != nil || cmd == nil || len(rest) > 0 {
					return usagef("no help for %q: not a gpurent command (gpurent help lists them)", strings.Join(a, " "))
				}
				show(c, a)
				return nil
			}
		case "completion":
			group(c)
		}
	}
}

// isTerminal asks the terminal driver (tcgetattr), not the file mode:
// /dev/null is a character device too, and a wipe run with </dev/null
// must not ask a question nobody sees.
func isTerminal(f *os.File) bool {
	return term.IsTerminal(int(f.Fd()))
}
