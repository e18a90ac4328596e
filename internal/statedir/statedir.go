// Package statedir says where gpurent keeps what it writes about this
// machine for later (the bench history, wipe reports): the XDG base
// directory specification's state directory, so that it survives a cache
// clean and stays out of the user's config.
package statedir

import (
	"os"
	"path/filepath"

	"github.com/gpurent/gpurent/internal/i18n"
)

// Dir is $XDG_STATE_HOME/gpurent when that is an absolute path (the
// specification says to ignore a relative one), else
// ~/.local/state/gpurent. It is not created.
func Dir() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "gpurent"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", i18n.Errorf("no XDG_STATE_HOME and no home directory: %w", err)
	}
	return filepath.Join(home, ".local", "state", "gpurent"), nil
}
