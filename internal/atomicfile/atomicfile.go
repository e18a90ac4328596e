// Package atomicfile replaces small files that gpurent reads back after a
// crash (a run's state, a wipe report, a budget's ledger, a framework's
// "latest" tracker), so that a kill or a power cut leaves the old contents
// or the new, never a torn file that would be read as garbage.
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
)

// Write replaces path with data: written to a temporary file beside it,
// synced, renamed over it, and the directory synced so that the rename
// itself survives a power cut. perm is the new file's mode before the
// umask, as with os.WriteFile.
//
// The temporary file is named ".gpurent-<name>.<random>.tmp": the
// checkpoint watcher never takes a name that begins with ".gpurent" for a
// checkpoint, and two writers of one path never share a temporary file.
func Write(path string, data []byte, perm os.FileMode) (err error) {
	dir, base := filepath.Split(path)
	if len(base) > 200 {
		base = base[:200] // within NAME_MAX (255) with what is added
	}
	var f *os.File
	var tmp string
	for range 10 {
		tmp = filepath.Join(dir, fmt.Sprintf(".gpurent-%s.%08x.tmp", base, rand.Uint32()))
		if f, err = os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm); !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.Remove(tmp)
		}
	}()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err = os.Rename(tmp, path); err != nil {
		return err
	}
	syncDir(dir)
	return nil
}

// syncDir makes a rename in dir durable. Best effort: Windows cannot open
// a directory to sync it, and the file's contents are synced already.
func syncDir(dir string) {
	if dir == "" {
		dir = "."
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}
