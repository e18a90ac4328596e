package main

import (
	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/spf13/cobra"
)

// On Windows gpurent serves the laptop's side of a rental: quote, plan,
// catalog, bench --replay and history, keygen and the checkpoint store
// (pull above all). run, audit and wipe act on the rented machine itself,
// a Linux one: process groups, /proc, signals, O_NOFOLLOW; on Windows they
// say so rather than half work.

func newRun(*globals) *cobra.Command {
	return onTheRentedMachine("run", "Run training that survives crashes, preemption and a vanishing machine")
}

func newAudit(*globals) *cobra.Command {
	return onTheRentedMachine("audit", "What on this rented machine can leak: other users, open ports, secrets, leftovers, unencrypted disks")
}

func newWipe(*globals) *cobra.Command {
	return onTheRentedMachine("wipe", "Plan and carry out a verified clean-up before you release the machine")
}

func newRelease(*globals) *cobra.Command {
	return onTheRentedMachine("release", "Stop the meter: stop or destroy this machine once its work is safe in the store")
}

func onTheRentedMachine(name, short string) *cobra.Command {
	return &cobra.Command{
		Use:                name,
		Short:              short + " (Linux)",
		DisableFlagParsing: true,
		RunE: func(*cobra.Command, []string) error {
			return i18n.Errorf("gpurent %s works on the rented Linux machine, not on Windows: copy the Linux build there (GOOS=linux go build ./cmd/gpurent), or use it inside WSL", name)
		},
	}
}
