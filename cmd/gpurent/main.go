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
	"runtime"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/gpurent/gpurent/internal/buildinfo"
	"github.com/gpurent/gpurent/internal/cliflag"
	"github.com/gpurent/gpurent/internal/exitcode"
	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/initproc"
	"github.com/gpurent/gpurent/internal/report"
	"github.com/gpurent/gpurent/internal/store"
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
	tr, _ := i18n.New(cliflag.ChooseLang(argv[1:], os.Getenv)) // nil, English, where the language is bad: run says so
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
	tr, err := i18n.New(cliflag.ChooseLang(args, os.Getenv))
	if err != nil {
		fmt.Fprintln(stderr, "gpurent:", err)
		return exitcode.Failure
	}
	root := newRoot(stdout, stderr, tr)
	root.SetArgs(args)
	err = root.ExecuteContext(ctx)
	if err == nil {
		return exitcode.OK
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
		return exitcode.OK
	}
	var code exitCode
	if errors.As(err, &code) {
		return int(code)
	}
	// A failure of the machine that happens to wrap a missing or odd
	// file (the run's state in --ckpt-dir) is no bad usage.
	if rt := (*supervise.RuntimeError)(nil); errors.As(err, &rt) {
		return exitcode.Failure
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
		return exitcode.Usage
	}
	return exitcode.Failure
}

// The commands' argument checks and flag errors (internal/cliflag).
var (
	group  = cliflag.Group
	args   = cliflag.Args
	noArgs = cliflag.NoArgs
)

// globals are the flags every command shares, and where it writes: the
// result to stdout, progress, warnings and notes to stderr.
type globals struct {
	output   string
	catalogs []string
	offline  bool
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
		Version:       buildinfo.Version(version),
	}
	root.SetVersionTemplate("gpurent {{.Version}}\n")
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(cliflag.Error)
	g.output = report.Table
	root.PersistentFlags().VarP(formatValue{&g.output}, "output", "o", "output format: table or json")
	root.PersistentFlags().StringArrayVar(&g.catalogs, "catalog", nil, "catalog YAML merged over the embedded one (repeatable; an equal id replaces)")
	root.PersistentFlags().BoolVar(&g.offline, "offline", false, "the embedded catalog (and --catalog files) only, without the prices gpurent catalog refresh kept")
	root.PersistentFlags().Var(cliflag.LangValue{P: &g.lang}, "lang", "the language gpurent speaks to you: en or zh (default: the locale's, LC_ALL, LC_MESSAGES or LANG; JSON is the same in both)")
	root.AddCommand(newQuote(g), newPlan(g), newBench(g), newCatalog(g), newCkpt(g), newKeygen(g), newRun(g), newAudit(g), newWipe(g), newRelease(g), newBurn(), newGendocs(), newExitCodes())
	strictBuiltins(root)
	cliflag.LocalizeHelp(root, tr)
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
