package main

import (
	"fmt"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/gpurent/gpurent/internal/compute"
	"github.com/gpurent/gpurent/internal/units"
)

// newBurn is a hidden helper: it keeps a GPU busy so that scripts can test
// that bench catches a co-tenant. It is not a stress test users should rely on.
func newBurn() *cobra.Command {
	var device int
	var duration string
	cmd := &cobra.Command{
		Use:    "burn",
		Short:  "Keep a GPU busy (a simulated co-tenant for scripts/gpu-check.sh)",
		Hidden: true,
		Args:   args(noArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := units.ParseDuration(duration)
			if err != nil || d <= 0 {
				return usagef("--duration: want a positive duration such as 60s, got %q", duration)
			}
			// Scripts stop it with kill (SIGTERM): it then ends its loop
			// and says what it ran, like at the end of --duration.
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM)
			defer stop()
			what, err := compute.CUDA{}.Burn(ctx, device, d)
			if what != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "gpurent burn: device %d, %s\n", device, what)
			}
			return err
		},
	}
	cmd.Flags().IntVar(&device, "device", 0, "CUDA device")
	cmd.Flags().StringVar(&duration, "duration", "60s", "how long to keep the GPU busy")
	return cmd
}
