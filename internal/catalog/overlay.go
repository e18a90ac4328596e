package catalog

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"go.yaml.in/yaml/v3"

	"github.com/gpurent/gpurent/internal/atomicfile"
	"github.com/gpurent/gpurent/internal/i18n"
)

// OverlayPath is where gpurent catalog refresh keeps today's prices: the
// user's cache directory, since a refresh can always be run again.
func OverlayPath() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", i18n.Errorf("no cache directory for the refreshed prices: %w", err)
	}
	return filepath.Join(dir, "gpurent", "prices.yaml"), nil
}

// WriteOverlay writes offers as a catalog file (ReadFile reads it back),
// replacing path whole or not at all.
func WriteOverlay(path, header string, offers []Offer) error {
	b, err := yaml.Marshal(struct {
		Version int     `yaml:"version"`
		Offers  []Offer `yaml:"offers"`
	}{1, offers})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return atomicfile.Write(path, append([]byte(header), b...), 0o600)
}

// OverlayError is refreshed prices that cannot be read: their own fault,
// not a --catalog file's.
type OverlayError struct {
	Path string
	Err  error
}

func (e *OverlayError) Error() string {
	return i18n.Errorf("the refreshed prices in %s: %w (run gpurent catalog refresh again, or --offline)", e.Path, e.Err).Error()
}
func (e *OverlayError) Unwrap() error { return e.Err }

// LoadOverlay is Load with the overlay at overlay (refreshed prices)
// merged over the embedded catalog first, where it exists; the user's
// catalogs at paths come after it, and win. n is how many offers the
// overlay holds (0 when there is none). An overlay that cannot be read is
// an *OverlayError.
func LoadOverlay(overlay string, paths []string) (c *Catalog, n int, err error) {
	if overlay == "" {
		c, err = Load(paths)
		return c, 0, err
	}
	if _, err := os.Lstat(overlay); errors.Is(err, fs.ErrNotExist) {
		c, err = Load(paths)
		return c, 0, err
	}
	if len(paths) > MaxFiles {
		return nil, 0, ErrCatalogs{i18n.Errorf("want at most %d catalog files, got %d", MaxFiles, len(paths))}
	}
	c, err = Default()
	if err != nil {
		return nil, 0, err
	}
	o, err := ReadFile(overlay, c.Rates)
	if err != nil {
		return nil, 0, &OverlayError{overlay, err}
	}
	c = Merge(c, o)
	for _, p := range paths {
		u, err := ReadFile(p, c.Rates)
		if err != nil {
			return nil, 0, err
		}
		c = Merge(c, u)
	}
	if err := CheckReadings(c.Offers); err != nil {
		return nil, 0, ErrCatalogs{err}
	}
	return c, len(o.Offers), nil
}
