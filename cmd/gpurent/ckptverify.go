package main

import (
	"context"
	"errors"

	"github.com/spf13/cobra"

	"github.com/gpurent/gpurent/internal/exitcode"
	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/render"
	"github.com/gpurent/gpurent/internal/report"
	"github.com/gpurent/gpurent/internal/store"
)

// ckptVerifyOptions are ckpt verify's flags.
type ckptVerifyOptions struct {
	id    string // --id
	idSet bool   // --id was given: latest then means the newest, not all
	deep  bool   // --deep
}

// newCkptVerify is ckpt verify: a run's checkpoints checked, shallow or deep.
func newCkptVerify(g *globals, s *storeFlags) *cobra.Command {
	var o ckptVerifyOptions
	verify := &cobra.Command{
		Use:   "verify",
		Short: "Check that checkpoints are whole (--deep: read, decrypt and hash every byte)",
		Args:  args(noArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.idSet = cmd.Flags().Changed("id")
			return runCkptVerify(cmd.Context(), g, s, o)
		},
	}
	verify.Flags().BoolVar(&o.deep, "deep", false, "read every object, decrypt it and compare its SHA-256")
	verify.Flags().StringVar(&o.id, "id", "latest", "only this checkpoint: an id, a NAME ls shows, or latest (default: all of the run)")
	return verify
}

// runCkptVerify checks the run's checkpoints, or one; a problem is exit 1.
func runCkptVerify(ctx context.Context, g *globals, s *storeFlags, o ckptVerifyOptions) error {
	if err := checkID(o.id); err != nil {
		return err
	}
	c, err := s.Crypto(false)
	if err != nil {
		return err
	}
	st, _, closeFn, err := s.OpenExisting(ctx, c, nil)
	if err != nil {
		return err
	}
	defer closeFn()
	vid := o.id
	if vid == "latest" && !o.idSet {
		vid = ""
	}
	if vid, err = resolveID(ctx, g, st, s.Run, vid, false); err != nil {
		return err
	}
	if !o.deep && c.CheckAuth && len(c.Auth) == 0 {
		g.tr.Fprintf(g.stderr, "gpurent: note: no identity or auth key here, so whether each checkpoint is the owner's (not planted) is not checked; pass --identity FILE or --auth-key FILE to check it\n")
	}
	ms, probs, err := st.Verify(ctx, s.Run, vid, o.deep)
	if errors.Is(err, store.ErrNoCheckpoint) {
		return noCheckpoint(ctx, st, err, vid != "" && vid != "latest")
	}
	if err != nil {
		return err
	}
	if len(ms) == 0 {
		// Nothing to check is not a pass: a mistyped run name must
		// not read as "the checkpoints are safe, release the machine".
		probs = append(probs, store.Problem{Msg: i18n.Textf("run %s has no checkpoint; %s", s.Run, runsHint(ctx, st))})
	}
	if g.output == report.JSON {
		if probs == nil {
			probs = []store.Problem{}
		}
		if err := report.WriteJSON(g.stdout, ckptVerifyJSON{Run: s.Run, Checked: len(ms), Deep: o.deep, Problems: probs}); err != nil {
			return err
		}
	} else {
		render.Verified(g.stdout, g.tr, probs, len(ms), o.deep)
	}
	if len(probs) > 0 {
		return exitCode(exitcode.Failure)
	}
	return nil
}
