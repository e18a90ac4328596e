package main

import (
	"errors"
	"io/fs"

	"github.com/gpurent/gpurent/internal/catalog"
	"github.com/gpurent/gpurent/internal/userfile"
)

// loadCatalog is the embedded catalog, the prices catalog refresh kept
// (unless --offline) and the --catalog files over them, with a --catalog
// file that cannot be read (missing, a FIFO or a device, over
// catalog.MaxFileSize) reported as bad usage that names the flag.
func loadCatalog(g *globals) (*catalog.Catalog, error) {
	overlay := ""
	if !g.offline {
		overlay, _ = catalog.OverlayPath() // no cache directory: no overlay
	}
	c, n, err := catalog.LoadOverlay(overlay, g.catalogs)
	if err == nil && n > 0 {
		c.Refreshed = n
	}
	if oe := (*catalog.OverlayError)(nil); errors.As(err, &oe) {
		return nil, err // the cache's fault, not a flag's: exit 1
	}
	var pe *fs.PathError
	var bad catalog.ErrCatalogs
	if errors.Is(err, userfile.ErrNotRegular) || errors.Is(err, userfile.ErrTooLarge) || errors.As(err, &pe) || errors.As(err, &bad) {
		return nil, usagef("--catalog: %w", err)
	}
	return c, err
}
