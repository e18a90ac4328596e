// Package layers has no code: its test keeps gpurent's features apart.
// Each feature (audit, bench, wipe, run's supervisor, release) is wired to
// the others only in cmd and runner, so that reading one means reading
// it and what it stands on, and what runs on a machine being wiped or
// priced links no GPU or cloud code it does not use.
package layers
