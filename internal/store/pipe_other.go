//go:build !linux

package store

import "os"

// startWriteback does nothing where sync_file_range does not exist (macOS,
// where gpurent runs for keygen and pull on the user's own computer): the
// final fsync then writes the whole file, which is slower, never wrong.
func startWriteback(*os.File, int64, int64) {}
