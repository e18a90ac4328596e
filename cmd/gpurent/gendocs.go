package main

import (
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// newGendocs is a hidden helper, as rclone's gendocs: the command
// reference (docs/commands) and the man pages the packages ship, both
// generated from the commands themselves so that neither drifts from
// --help. SOURCE_DATE_EPOCH dates the man pages, for reproducible packages.
func newGendocs() *cobra.Command {
	return &cobra.Command{
		Use:    "gendocs DIR",
		Short:  "Write the command reference (DIR/md) and man pages (DIR/man1)",
		Hidden: true,
		Args:   args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			root := cmd.Root()
			root.DisableAutoGenTag = true
			md, man := filepath.Join(a[0], "md"), filepath.Join(a[0], "man1")
			for _, d := range []string{md, man} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					return err
				}
			}
			if err := doc.GenMarkdownTree(root, md); err != nil {
				return err
			}
			date := time.Now()
			if s, err := strconv.ParseInt(os.Getenv("SOURCE_DATE_EPOCH"), 10, 64); err == nil {
				date = time.Unix(s, 0).UTC()
			}
			return doc.GenManTree(root, &doc.GenManHeader{Title: "GPURENT", Section: "1", Date: &date, Source: "gpurent " + root.Version, Manual: "gpurent manual"}, man)
		},
	}
}
