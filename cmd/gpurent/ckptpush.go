package main

import (
	"context"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/render"
	"github.com/gpurent/gpurent/internal/report"
	"github.com/gpurent/gpurent/internal/store"
	"github.com/gpurent/gpurent/internal/usage"
)

// newCkptPush is ckpt push: one file or directory stored as one checkpoint.
func newCkptPush(g *globals, s *storeFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "push PATH",
		Short: "Upload a file or directory as one checkpoint",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			return runCkptPush(cmd.Context(), g, s, a[0])
		},
	}
}

// runCkptPush stores path as one checkpoint of the run and prints its id.
func runCkptPush(ctx context.Context, g *globals, s *storeFlags, path string) error {
	info, err := os.Lstat(path)
	if err != nil {
		return usage.Wrap(i18n.Errorf("push: %w", err))
	}
	if info.Mode()&os.ModeSymlink != 0 {
		// Pushed as it is, a link is its target's name and nothing
		// of the target's content: said, as that is rarely meant.
		target, _ := os.Readlink(path)
		g.tr.Fprintf(g.stderr, "gpurent: warning: %s is a symlink to %s: what is stored is the link itself (a name, none of the content it leads to); push %s, or %s/ for a directory, to store the content\n",
			report.Safe(path), report.Safe(target), report.Safe(target), report.Safe(path))
	}
	if dir := store.LocalDir(s.URL); store.Within(dir, path) {
		return usagef("push: the store %s lies inside %s, which would be pushed into itself; keep the store elsewhere", dir, path)
	}
	c, err := s.Crypto(true)
	if err != nil {
		return err
	}
	_, paths, err := store.Scan(path)
	if err != nil {
		return usage.Wrap(err)
	}
	var total int64
	for _, p := range paths {
		if st, err := os.Stat(p); err == nil {
			total += st.Size()
		}
	}
	bar := render.StartProgress(g.stderr, g.tr, g.tr.T("push"), total)
	st, name, closeFn, err := s.Open(ctx, c, bar.Add)
	if err != nil {
		bar.End()
		return err
	}
	defer closeFn()
	if !c.Encrypting() && !strings.HasPrefix(name, "file://") {
		g.tr.Fprintf(g.stderr, "gpurent: warning: storing plaintext on %s: anyone with access to the store can read it\n", name)
	}
	start := time.Now()
	m, err := st.Push(ctx, path, s.Run)
	bar.End()
	if err != nil {
		return err
	}
	var reused, resumed i18n.Text
	if m.Reused > 0 {
		reused = i18n.Textf(" (%s of it unchanged, stored by an earlier checkpoint: referred to, not uploaded)", report.Bytes(m.Reused))
	}
	if m.Resumed > 0 {
		resumed = i18n.Textf(" (%s of it stored by the push cut short before, not uploaded again)", report.Bytes(m.Resumed))
	}
	return writeManifest(g, m, i18n.Textf("pushed %s to %s run %s: %s, %s in %.1f s%s%s", path, name, s.Run, i18n.Plural(m.Files, "%d entry", "%d entries"),
		report.Bytes(m.Bytes), time.Since(start).Seconds(), reused, resumed))
}
