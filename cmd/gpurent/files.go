package main

import (
	"errors"
	"io/fs"

	"github.com/gpurent/gpurent/internal/catalog"
	"github.com/gpurent/gpurent/internal/userfile"
)

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
