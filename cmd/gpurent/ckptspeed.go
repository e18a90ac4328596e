package main

import (
	"context"
	"os"

	"github.com/spf13/cobra"

	"github.com/gpurent/gpurent/internal/render"
	"github.com/gpurent/gpurent/internal/report"
	"github.com/gpurent/gpurent/internal/store"
	"github.com/gpurent/gpurent/internal/units"
)

// ckptSpeedOptions are ckpt speed's flags.
type ckptSpeedOptions struct {
	size     string // --size: the test checkpoint's
	ckptSize string // --ckpt-size: the user's checkpoint's, to scale to
	dir      string // --dir: where the test writes
	files    int    // --files
}

// newCkptSpeed is ckpt speed: the store's rates, measured with a test
// checkpoint through gpurent's own pipeline.
func newCkptSpeed(g *globals, s *storeFlags) *cobra.Command {
	var o ckptSpeedOptions
	cmd := &cobra.Command{
		Use:   "speed",
		Short: "Time a round trip of a test checkpoint to the store, and what one of your size takes",
		Long: `speed pushes a checkpoint of random bytes (--size, in --files files) to a run of its
own, pulls it back, and deletes it from the store and from --dir: the rates are those of
gpurent's own pipeline on this machine's link (encryption, hashing, parallel multipart
uploads; the download is decrypted, checked and written to disk, as a pull is). With
--ckpt-size it says how long a checkpoint of that size takes each way: plan's and quote's
--ckpt-write is the time until a checkpoint is safe remotely, and --ckpt-restart on a
new machine includes its download. The test encrypts to a key made for it and thrown
away (--no-encrypt tests plaintext), so it needs no identity. Its bytes leave the
machine: egress, billed by some providers.`,
		Args: args(noArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runCkptSpeed(cmd.Context(), g, s, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.size, "size", "256MiB", "bytes to push and pull back (a bare number is GB); larger tests measure a fast link better")
	f.IntVar(&o.files, "files", 4, "files the test checkpoint is split into (a sharded checkpoint moves --workers files at a time)")
	f.StringVar(&o.ckptSize, "ckpt-size", "", "your checkpoint's size, e.g. 20GB, to say how long it takes each way")
	f.StringVar(&o.dir, "dir", os.TempDir(), "where the test checkpoint and its pulled copy are written (twice --size must be free)")
	return cmd
}

// runCkptSpeed pushes a test checkpoint, pulls it back, deletes it, and
// says the rates and what a checkpoint of --ckpt-size takes.
func runCkptSpeed(ctx context.Context, g *globals, s *storeFlags, o ckptSpeedOptions) error {
	n, err := units.ParseSize(o.size, 1e9)
	if err != nil || n < 1<<20 || n > 1e12 {
		return usagef("--size: want a size from 1 MiB to 1 TB such as 256MiB or 1GB, got %q", o.size)
	}
	var ckpt float64
	if o.ckptSize != "" {
		if ckpt, err = units.ParseSize(o.ckptSize, 1e9); err != nil || ckpt <= 0 || ckpt > 1e15 {
			return usagef("--ckpt-size: want a size such as 20GB (a bare number is GB), got %q", o.ckptSize)
		}
	}
	if o.files < 1 || o.files > 1000 {
		return usagef("--files: want 1 to 1000, got %d", o.files)
	}
	if st, err := os.Stat(o.dir); err != nil || !st.IsDir() {
		return usagef("--dir %s: not a directory", o.dir)
	}
	c := &store.Crypto{}
	if !s.NoEncrypt {
		if c, err = store.Throwaway(); err != nil {
			return err
		}
	}
	bar := render.StartProgress(g.stderr, g.tr, g.tr.T("speed test"), 2*int64(n))
	st, name, closeFn, err := s.Open(ctx, c, bar.Add)
	if err != nil {
		bar.End()
		return err
	}
	defer closeFn()
	sp, err := st.SpeedTest(ctx, o.dir, int64(n), o.files)
	bar.End()
	if err != nil {
		return err
	}
	if sp.Left != nil {
		g.tr.Fprintf(g.stderr, "gpurent: warning: %v\n", sp.Left)
	}
	r := render.SpeedReport{Store: name, Bytes: sp.Bytes, Files: sp.Files, Encrypted: sp.Encrypted,
		UploadS: sp.Upload.Seconds(), DownloadS: sp.Download.Seconds()}
	r.UploadMBs = float64(sp.Bytes) / 1e6 / r.UploadS
	r.DownloadMBs = float64(sp.Bytes) / 1e6 / r.DownloadS
	if ckpt > 0 {
		r.CkptBytes = int64(ckpt)
		r.CkptUploadS = ckpt / 1e6 / r.UploadMBs
		r.CkptDownloadS = ckpt / 1e6 / r.DownloadMBs
	}
	if g.output == report.JSON {
		return report.WriteJSON(g.stdout, r)
	}
	render.Speed(g.stdout, g.tr, r, s.BWLimit)
	return nil
}
