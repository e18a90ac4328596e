package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/gpurent/gpurent/internal/gendocs"
)

// newGendocs is a hidden helper, as rclone's: the command reference
// (docs/commands) and the packages' man pages, from the commands.
func newGendocs() *cobra.Command {
	return &cobra.Command{
		Use:    "gendocs DIR",
		Short:  "Write the command reference (DIR/md) and man pages (DIR/man1)",
		Hidden: true,
		Args:   args(cobra.ExactArgs(1)),
		RunE:   func(cmd *cobra.Command, a []string) error { return gendocs.Write(cmd.Root(), a[0], os.Getenv) },
	}
}
