//go:build unix

package main

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpurent/gpurent/internal/audit"
	"github.com/gpurent/gpurent/internal/bench"
	"github.com/gpurent/gpurent/internal/exitcode"
	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/render"
	"github.com/gpurent/gpurent/internal/report"
	"github.com/gpurent/gpurent/internal/units"
	"github.com/gpurent/gpurent/internal/usage"
)

// auditOptions are audit's flags.
type auditOptions struct {
	since string   // --since: when this tenancy began
	data  []string // --data: more directories to look for leftovers in
	root  string   // --root: a fake root, for demonstrations and tests
	home  string   // --home: the home to audit
}

func newAudit(g *globals) *cobra.Command {
	var o auditOptions
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "What on this rented machine can leak: other users, open ports, secrets, leftovers, unencrypted disks",
		Long: `audit looks at the machine from your side, in a few seconds and without root:
other users logged in now or in the last week and their processes; whether sshd
takes passwords, empty passwords or root with a password, and which keys can log
in as you; sockets that answer on addresses other than loopback, with their
process, and among them a Jupyter notebook without a token, TensorBoard, Ray's
dashboard or a code-server without a password (asked with a few GET requests
from this machine); credential files
(AWS, netrc/W&B, git, docker, rclone, GitHub CLI, PyPI, npm, Hugging Face, SSH
keys, .env), git remotes, shell histories and your processes' command lines
holding a token, and whether other accounts can read them; data other users
left, or that predates this tenancy, in the home, data and temp directories;
whether the data disks and swap are encrypted, overlay or network file systems;
a Docker socket that answers; and the GPU-sharing signs of gpurent bench.

Secrets are never printed: a credential file is read no further than the bytes
that say what it is, and histories, git configs and command lines are searched
for a token's format or a secret assigned to a variable (WANDB_API_KEY=...),
reporting only which kind, or which variable, was found.
Exit codes: 0 pass or warn, 3 fail, 2 bad usage.`,
		Example: `  gpurent audit
  gpurent audit --data /mnt/datasets -o json > audit.json
  gpurent audit --since 2h`,
		Args: args(noArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runAudit(cmd.Context(), g, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.since, "since", "", "when this tenancy began: a time (2026-11-30T09:00:00Z) or how long ago (2h, 3d); default: when PID 1 started")
	f.StringArrayVar(&o.data, "data", nil, "another directory to look for leftovers in (repeatable)")
	// A fake root and home, for demonstrations and tests; the real audit
	// needs neither.
	f.StringVar(&o.root, "root", "", "read system files under this directory instead of /")
	f.StringVar(&o.home, "home", "", "the home directory to audit (default: yours)")
	_ = f.MarkHidden("root")
	_ = f.MarkHidden("home")
	return cmd
}

// runAudit gathers what the machine shows and judges it; a failed
// verdict is exit 3.
func runAudit(ctx context.Context, g *globals, o auditOptions) error {
	e := audit.RealEnv()
	if o.root != "" {
		abs, err := dirFlag("--root", o.root)
		if err != nil {
			return err
		}
		// Another root's sockets are not this machine's to ask.
		e.Root, e.Fetch = abs, nil
	}
	if o.home != "" {
		abs, err := dirFlag("--home", o.home)
		if err != nil {
			return err
		}
		e.Home = abs
	}
	if o.since != "" {
		t, err := parseSince(o.since, e.Now())
		if err != nil {
			return usage.Wrap(err)
		}
		e.Since = t
	}
	for _, d := range o.data {
		abs, err := dirFlag("--data", d)
		if err != nil {
			return err
		}
		e.DataDirs = append(e.DataDirs, abs)
	}
	r := audit.Judge(audit.Gather(ctx, e))
	if g.output == report.JSON {
		if err := report.WriteJSON(g.stdout, r); err != nil {
			return err
		}
	} else if err := render.Checks(g.stdout, g.tr, r.Checks, r.Verdict, render.Colorful(g.stdout), false); err != nil {
		return err
	}
	if r.Verdict == bench.Fail {
		return exitCode(exitcode.VerdictFail)
	}
	return nil
}

// dirFlag is the absolute path of a flag's directory, or a usage error
// naming the flag: a mistyped directory would otherwise be audited as an
// empty one and pass.
func dirFlag(flag, dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", usagef("%s %s: %v", flag, dir, err)
	}
	if st, err := os.Stat(abs); err != nil || !st.IsDir() {
		return "", usagef("%s %s: not a directory", flag, dir)
	}
	return abs, nil
}

// parseSince reads an RFC 3339 time or a duration ago.
func parseSince(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	d, err := units.ParseDuration(s)
	if err != nil || d <= 0 {
		return time.Time{}, i18n.Errorf("--since: want a time such as 2026-11-30T09:00:00Z or a duration ago such as 2h or 3d, got %q", s)
	}
	return now.Add(-d), nil
}
