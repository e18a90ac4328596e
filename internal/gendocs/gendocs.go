// Package gendocs writes gpurent's command reference (Markdown, for docs/)
// and man pages (for the packages) from the commands themselves, as rclone
// and cobra do, so that neither drifts from --help.
package gendocs

import (
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// Write writes root's command tree to dir/md (one Markdown page per
// command) and dir/man1 (man pages, gpurent-quote.1 for `man
// gpurent-quote`). SOURCE_DATE_EPOCH in getenv dates the man pages, for
// reproducible packages; without it they carry today's date.
func Write(root *cobra.Command, dir string, getenv func(string) string) error {
	root.DisableAutoGenTag = true
	md, man := filepath.Join(dir, "md"), filepath.Join(dir, "man1")
	for _, d := range []string{md, man} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if err := doc.GenMarkdownTree(root, md); err != nil {
		return err
	}
	date := time.Now()
	if s, err := strconv.ParseInt(getenv("SOURCE_DATE_EPOCH"), 10, 64); err == nil {
		date = time.Unix(s, 0).UTC()
	}
	return doc.GenManTree(root, &doc.GenManHeader{Title: "GPURENT", Section: "1", Date: &date, Source: "gpurent " + root.Version, Manual: "gpurent manual"}, man)
}
