package main

import (
	"errors"
	"io/fs"

	"github.com/gpurent/gpurent/internal/catalog"
	"github.com/gpurent/gpurent/internal/userfile"
)

// readFile reads a file the user named with flag, no larger than max
// bytes (userfile.Read: a FIFO, a device or a file over the cap is
// refused, never waited on or read to its end). A file that cannot be
// read is bad usage, and the message names the flag.
func readFile(flag, path string, max int64) ([]byte, error) {
	data, err := userfile.Read(path, max)
	if err != nil {
		return nil, usagef("%s: %w", flag, err)
	}
	return data, nil
}

// loadCatalog is catalog.Load with a --catalog file that cannot be read
// (missing, a FIFO or a device, over catalog.MaxFileSize) reported as bad
// usage that names the flag.
func loadCatalog(paths []string) (*catalog.Catalog, error) {
	c, err := catalog.Load(paths)
	var pe *fs.PathError
	var bad catalog.ErrCatalogs
	if errors.Is(err, userfile.ErrNotRegular) || errors.Is(err, userfile.ErrTooLarge) || errors.As(err, &pe) || errors.As(err, &bad) {
		return nil, usagef("--catalog: %w", err)
	}
	return c, err
}

// maxConfigSize caps --profile and --config: a few dozen settings take a
// few KiB, so 1 MiB is no real file's size.
const maxConfigSize = 1 << 20
