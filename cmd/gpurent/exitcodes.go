package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpurent/gpurent/internal/exitcode"
)

// newExitCodes is the help topic `gpurent help exit-codes`: internal/exitcode's table.
func newExitCodes() *cobra.Command {
	var b strings.Builder
	b.WriteString("Exit codes of gpurent's commands. run otherwise exits with its command's own code\n(128 + the signal when a signal stopped it).\n\n")
	for _, r := range exitcode.Table() {
		fmt.Fprintf(&b, "  %-3d %-13s %s\n", r.Code, r.Commands, r.Means)
	}
	return &cobra.Command{
		Use:   "exit-codes",
		Short: "What each exit code of gpurent's commands means",
		Long:  strings.TrimRight(b.String(), "\n"),
	}
}
